#include "generators/attention_decode.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void AttentionDecode::configure() {
    if (kv_type == StorageType::Int8) {
        k_scale = add_input<Buffer<float>>("k_scale", 3);
        v_scale = add_input<Buffer<float>>("v_scale", 3);
    }
}

void AttentionDecode::generate() {
    _halide_user_assert(k_cache.type() == buffer_type_of(kv_type) && v_cache.type() == buffer_type_of(kv_type))
        << "kv_type " << int(StorageType(kv_type)) << " needs k_cache.type and v_cache.type "
        << buffer_type_of(kv_type);
    _halide_user_assert(!bf16_pairs || kv_type == StorageType::BF16) << "bf16_pairs needs kv_type bf16";
    _halide_user_assert(!int8_dots || kv_type == StorageType::Int8) << "int8_dots needs kv_type int8";
    // One query per sequence: a query tile of 1, and no causal mask (the query is the newest
    // token, so it sees every cached one).
    // The autoscheduled variants keep the 512-key chunks their committed tuned schedule
    // (schedules/autotuned) was searched with.
    const int chunk = key_chunk > 0      ? int(key_chunk)
                      : auto_schedule ? 512
                                      : schedules::decode_key_chunk(get_target());
    attention = std::make_unique<ChunkedAttention>(1, chunk);
    ChunkedAttention &a = *attention;
    Var d, hg, h, i, j, b;
    ChunkedAttentionInputs in;
    // The head clamped to the group: a schedule may compute whole blocks of heads, past the group's
    // last, which must still read in bounds.
    in.q(d, hg, h, i, b) = q(d, min(hg, q.dim(1).extent() - 1), h, b);
    // The attention sees each sequence's keys from first_key on, as keys 0 .. kv_len - first_key - 1;
    // the clamp keeps Halide's bounds inference (which cannot see first_key's values) in the cache.
    const Expr last_row = k_cache.dim(1).extent() - 1;
    const Expr row = clamp(first_key(b) + j, 0, last_row);
    // Pairs multiply the keys' bf16 values as they are, integer dots the int8 codes.
    Expr key = bf16_pairs  ? reinterpret(BFloat(16), k_cache(d, row, h, b))
               : int8_dots ? k_cache(d, row, h, b)
                           : schedules::attention_read(k_cache(d, row, h, b), kv_type, get_target());
    Expr value = schedules::attention_read(v_cache(d, row, h, b), kv_type, get_target());
    in.k(d, j, h, b) = key;
    in.v(d, j, h, b) = value;
    if (k_scale) {  // int8 codes: their rows' scales apply to scores and probabilities
        in.k_row_scale = [this, last_row](Expr key, Expr hk, Expr bb) {
            return (*k_scale)(clamp(first_key(bb) + key, 0, last_row), hk, bb);
        };
        in.v_row_scale = [this, last_row](Expr key, Expr hk, Expr bb) {
            return (*v_scale)(clamp(first_key(bb) + key, 0, last_row), hk, bb);
        };
    }
    in.bf16_pairs = bf16_pairs;
    in.rebias = schedules::attention_rebias(kv_type, get_target());
    in.int8_dots = int8_dots;
    in.head_dim = q.dim(0).extent();
    in.query_len = 1;
    in.kv_len(b) = kv_len(b) - first_key(b);
    in.capacity = k_cache.dim(1).extent();
    in.longest_kv_len = longest_visible;
    in.scale = scale;
    set_score_options(in, sinks, has_sinks, softcap, has_softcap);
    in.fast_exp = [target = get_target()](const Expr &x) { return schedules::fast_exp(x, target); };
    in.causal = Halide::Internal::const_false();
    a.define(in, ChunkedAttention::Merge::Partials, attended);
    out(d, hg, h, b) = attended(d, hg, h, 0, b);
    // The output's head dim is the queries': stating it lets schedules specialise on one extent.
    out.dim(0).set_bounds(0, in.head_dim);
}

void AttentionDecode::schedule() {
    q.set_estimates({{0, 128}, {0, 4}, {0, 8}, {0, 1}});
    k_cache.set_estimates({{0, 128}, {0, 4096}, {0, 8}, {0, 1}});
    v_cache.set_estimates({{0, 128}, {0, 4096}, {0, 8}, {0, 1}});
    kv_len.set_estimates({{0, 1}});
    first_key.set_estimates({{0, 1}});
    longest_visible.set_estimate(4096);
    scale.set_estimate(0.088f);
    sinks.set_estimates({{0, 4}, {0, 8}});
    has_sinks.set_estimate(false);
    softcap.set_estimate(50.0f);
    has_softcap.set_estimate(false);
    for (Input<Buffer<float>> *scales : {k_scale, v_scale}) {
        if (scales) scales->set_estimates({{0, 4096}, {0, 8}, {0, 1}});
    }
    out.set_estimates({{0, 128}, {0, 4}, {0, 8}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::AttentionDecode, attention_decode)
