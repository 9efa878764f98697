#include "generators/attention_prefill.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void AttentionPrefill::configure() {
    if (masked) mask = add_input<Buffer<uint8_t>>("mask", 4);
    if (kv_type == StorageType::Int8) {
        k_scale = add_input<Buffer<float>>("k_scale", 3);
        v_scale = add_input<Buffer<float>>("v_scale", 3);
    }
}

void AttentionPrefill::generate() {
    _halide_user_assert(k_cache.type() == buffer_type_of(kv_type) && v_cache.type() == buffer_type_of(kv_type))
        << "kv_type " << int(StorageType(kv_type)) << " needs k_cache.type and v_cache.type "
        << buffer_type_of(kv_type);
    _halide_user_assert(!bf16_pairs || kv_type == StorageType::BF16) << "bf16_pairs needs kv_type bf16";
    const schedules::PrefillTile tile = schedules::prefill_tile(get_target(), tiles);
    attention = std::make_unique<ChunkedAttention>(tile.queries, tile.key_chunk, tile.key_step);
    ChunkedAttention &a = *attention;
    Var d, hg, h, i, j, b;
    ChunkedAttentionInputs in;
    in.q(d, hg, h, i, b) = q(d, hg, h, i, b);
    // Pairs multiply the keys' bf16 values as they are.
    Expr key = bf16_pairs ? reinterpret(BFloat(16), k_cache(d, j, h, b))
                          : schedules::attention_read(k_cache(d, j, h, b), kv_type, get_target());
    Expr value = schedules::attention_read(v_cache(d, j, h, b), kv_type, get_target());
    in.k(d, j, h, b) = key;
    in.v(d, j, h, b) = value;
    if (k_scale) {  // int8 codes: their rows' scales apply to scores and probabilities
        in.k_row_scale = [this](Expr row, Expr hk, Expr bb) { return (*k_scale)(row, hk, bb); };
        in.v_row_scale = [this](Expr row, Expr hk, Expr bb) { return (*v_scale)(row, hk, bb); };
    }
    in.bf16_pairs = bf16_pairs;
    in.rebias = schedules::attention_rebias(kv_type, get_target());
    in.head_dim = q.dim(0).extent();
    in.query_len = q.dim(3).extent();
    in.kv_len(b) = kv_len(b);
    in.capacity = k_cache.dim(1).extent();
    in.longest_kv_len = longest_visible;
    in.scale = scale;
    set_score_options(in, sinks, has_sinks, softcap, has_softcap);
    in.fast_exp = [target = get_target()](const Expr &x) { return schedules::fast_exp(x, target); };
    in.causal = causal;
    if (mask) in.masked(j, i, b) = (*mask)(min(j, mask->dim(0).extent() - 1), i, 0, b) != 0;
    // One state per query row (one exp per row and chunk) needs its channels updated in order, as
    // CPU schedules do; GPU block tiles run threads across the head dim and keep a state per
    // element. The autoscheduled variants keep the per-element form that the committed tuned
    // schedule (schedules/autotuned) names.
    const bool state_per_row = !get_target().has_gpu_feature() && !auto_schedule;
    using Merge = ChunkedAttention::Merge;
    a.define(in, state_per_row ? Merge::RunningRows : Merge::Running, out);
    // The output's head dim is the queries': stating it lets schedules specialise on one extent.
    out.dim(0).set_bounds(0, in.head_dim);
}

void AttentionPrefill::schedule() {
    q.set_estimates({{0, 64}, {0, 1}, {0, 16}, {0, 2048}, {0, 1}});
    k_cache.set_estimates({{0, 64}, {0, 2048}, {0, 16}, {0, 1}});
    v_cache.set_estimates({{0, 64}, {0, 2048}, {0, 16}, {0, 1}});
    kv_len.set_estimates({{0, 1}});
    longest_visible.set_estimate(2048);
    scale.set_estimate(0.125f);
    causal.set_estimate(true);
    sinks.set_estimates({{0, 1}, {0, 16}});
    has_sinks.set_estimate(false);
    softcap.set_estimate(50.0f);
    has_softcap.set_estimate(false);
    if (mask) mask->set_estimates({{0, 2048}, {0, 2048}, {0, 1}, {0, 1}});
    for (Input<Buffer<float>> *scales : {k_scale, v_scale}) {
        if (scales) scales->set_estimates({{0, 2048}, {0, 16}, {0, 1}});
    }
    out.set_estimates({{0, 64}, {0, 1}, {0, 16}, {0, 2048}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::AttentionPrefill, attention_prefill)
