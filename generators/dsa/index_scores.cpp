#include "generators/dsa/index_scores.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void DsaIndexScores::generate() {
    _halide_user_assert(key_type != StorageType::Int8 && ik.type() == buffer_type_of(key_type))
        << "key_type " << int(StorageType(key_type)) << " needs ik.type " << buffer_type_of(key_type);
    _halide_user_assert(!bf16_pairs || key_type == StorageType::BF16) << "bf16_pairs needs key_type bf16";
    rh = RDom(0, iq.dim(1).extent(), "rh");
    // h and t clamped so that schedules may compute whole vectors of heads or keys (the same
    // arithmetic in every lane, whatever the length) without reading past the heads or the cache.
    // The key's clamp is `likely` a no-op: Halide splits off the tiles wholly inside the cache,
    // whose key rows are then consecutive, addressed from one base rather than each clamped.
    const Expr query = iq(d, min(h, iq.dim(1).extent() - 1), s, b);
    const Expr key_row = clamp(likely(t), 0, ik.dim(1).extent() - 1);
    dot(t, h, s, b) = 0.0f;
    if (bf16_pairs) {
        // Pairs multiply the keys' bf16 values as they are, and the queries' (bf16 values already).
        queries(d, h, s, b) = cast(BFloat(16), query);
        q_pairs(pair, h, d, s, b) = queries(2 * d + pair, h, s, b);
        rd = RDom(0, 2, 0, iq.dim(0).extent() / 2, "rd");
        const Expr key = reinterpret(BFloat(16), ik(2 * rd.y + rd.x, key_row, b));
        dot(t, h, s, b) += cast<float>(q_pairs(rd.x, h, rd.y, s, b)) * cast<float>(key);
    } else {
        queries(d, h, s, b) = query;
        rd = RDom(0, iq.dim(0).extent(), "rd");
        const Expr key = ik(rd, key_row, b);
        dot(t, h, s, b) += queries(rd, h, s, b) * schedules::widen_to_f32(key, key_type, get_target());
    }
    total(t, s, b) = 0.0f;
    total(t, s, b) += head_w(rh, s, b) * max(dot(t, rh, s, b) * scale, 0.0f);
    // Query s is the (S - s)-th newest of its sequence's kv_len keys.
    const Expr position = kv_len(b) - iq.dim(2).extent() + s;
    score(t, s, b) = select(t <= position, total(t, s, b), 0.0f);
}

void DsaIndexScores::schedule() {
    // GLM-5's indexer (32 heads of 128) at a 512-token prefill.
    iq.set_estimates({{0, 128}, {0, 32}, {0, 512}, {0, 1}});
    ik.set_estimates({{0, 128}, {0, 512}, {0, 1}});
    head_w.set_estimates({{0, 32}, {0, 512}, {0, 1}});
    kv_len.set_estimates({{0, 1}});
    scale.set_estimate(0.088f);
    score.set_estimates({{0, 512}, {0, 512}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::DsaIndexScores, dsa_index_scores)
