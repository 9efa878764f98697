#include "schedules/cpu/dsa.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_dsa_index_scores(DsaIndexScores &g, const Target &t, int keys) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf;
    // Blocks of keys in parallel, per query, so that a decode step (one query) uses every core.
    constexpr int key_block = 256;
    Var to("to"), ti("ti"), tt("tt"), tk("tk"), hv("hv"), hp("hp"), hl("hl");
    g.score.split(g.t, to, ti, key_block, guard)
        .reorder(ti, to, g.s, g.b)
        .vectorize(ti, vec, guard)
        .parallel(g.s)
        .parallel(to);
    const LoopLevel block(g.score, to);
    // The sum over heads in order, in whole vectors of keys (no scalar tail: the same arithmetic
    // for any length, so forward and decode agree bit for bit).
    g.total.compute_at(block).vectorize(g.t, vec, TailStrategy::RoundUp);
    g.total.update().reorder(g.t, g.rh).vectorize(g.t, vec, TailStrategy::RoundUp);
    // The dot products as a small GEMM per block: register tiles of 2 vectors of heads x `keys`
    // keys, each over the head dim in order. Each query vector loaded serves every key of the
    // tile and each key value (broadcast) both head vectors; the queries are staged heads-fastest
    // once per query. (Was a dot product at a time, its 16 lanes summed one by one.)
    Func dot_block = g.dot.in(g.total);
    dot_block.compute_at(block)
        .split(g.t, tt, tk, keys, guard)
        .split(g.h, hv, hl, 2 * vec, guard)
        .reorder(hl, tk, hv, tt)
        .vectorize(hl, vec, guard);
    g.dot.compute_at(dot_block, hv)
        .bound_extent(g.h, 2 * vec)
        .bound_extent(g.t, keys)
        .reorder_storage(g.h, g.t)
        .split(g.h, hp, hl, vec)
        .reorder(hl, hp, g.t)
        .vectorize(hl)
        .unroll(hp)
        .unroll(g.t);
    g.dot.update().split(g.h, hp, hl, vec).reorder(hl, hp, g.t, g.rd).vectorize(hl).unroll(hp).unroll(g.t);
    g.queries.compute_at(g.score, g.s).reorder_storage(g.h, g.d).reorder(g.h, g.d).vectorize(g.h, vec, TailStrategy::RoundUp);
}

void schedule_dsa_sparse_attention(DsaSparseAttention &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf;
    // Per query, every head at once: each gathered key row is read for all heads while it is in
    // cache, instead of once per head.
    g.out.reorder(g.d, g.h, g.s, g.b).vectorize(g.d, vec, guard).parallel(g.s);
    const LoopLevel query(g.out, g.s);
    // Each logit is a dot product over one gathered key row: vector lanes along the row (rfactor),
    // summed at the end, so the row is read contiguously.
    RVar rdo("rdo"), rdi("rdi");
    Var lane("lane");
    g.logit.compute_at(query).reorder(g.h, g.n);
    g.logit.update().reorder(g.rd, g.h, g.n).split(g.rd, rdo, rdi, vec, guard);
    Func lanes = g.logit.update().rfactor(rdi, lane);
    lanes.compute_at(g.logit, g.h).vectorize(lane);
    lanes.update().reorder(lane, rdo).vectorize(lane);
    g.row_max.compute_at(query);
    g.prob.compute_at(query).reorder(g.h, g.n);
    g.row_sum.compute_at(query);
    g.acc.compute_at(query).vectorize(g.d, vec, guard);
    g.acc.update().reorder(g.d, g.h, g.rn).vectorize(g.d, vec, guard);
}

}  // namespace hattn::schedules::cpu
