#include "schedules/cpu/dsa.h"

#include <iterator>

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
    // once per query. The block's dot products are stored heads-fastest, as the tiles make them
    // (stored keys-fastest, each tile's results went out lane by lane); `total`, which does a
    // 128th of the arithmetic, gathers its vectors of keys instead.
    // In a decode step the keys come from memory (a layer's weights have gone through the caches
    // since its last step), each once: the key rows of the tile after next are prefetched, which
    // steadied a decode step's scores and cost nothing in cache. AArch64, untimed, takes both
    // choices, and loads `total`'s strided vectors of keys lane by lane. docs/perf/log.md, "DSA
    // indexer tiles".
    Func dot_block = g.dot.in(g.total);
    dot_block.compute_at(block)
        .reorder_storage(g.h, g.t)
        .split(g.t, tt, tk, keys, guard)
        .split(g.h, hv, hl, 2 * vec, guard)
        .reorder(hl, tk, hv, tt)
        .vectorize(hl, vec, guard)
        .prefetch(g.ik, tt, tt, 2);
    g.dot.compute_at(dot_block, hv)
        .bound_extent(g.h, 2 * vec)
        .bound_extent(g.t, keys)
        .reorder_storage(g.h, g.t)
        .split(g.h, hp, hl, vec)
        .reorder(hl, hp, g.t)
        .vectorize(hl)
        .unroll(hp)
        .unroll(g.t);
    if (g.bf16_pairs) {
        // A pair's two products summed into one lane (a VectorReduce: vdpbf16ps), a key's pair one
        // 32-bit broadcast; the queries' pairs staged once per query, heads-fastest after the pair.
        g.dot.update().split(g.h, hp, hl, vec).reorder(g.rd.x, hl, hp, g.t, g.rd.y).atomic().vectorize(g.rd.x)
            .vectorize(hl).unroll(hp).unroll(g.t);
        g.queries.compute_inline();
        g.q_pairs.compute_at(g.score, g.s).bound_extent(g.pair, 2).reorder(g.pair, g.h, g.d)
            .vectorize(g.pair).vectorize(g.h, vec, TailStrategy::RoundUp);
    } else {
        g.dot.update().split(g.h, hp, hl, vec).reorder(hl, hp, g.t, g.rd).vectorize(hl).unroll(hp).unroll(g.t);
        g.queries.compute_at(g.score, g.s).reorder_storage(g.h, g.d).reorder(g.h, g.d)
            .vectorize(g.h, vec, TailStrategy::RoundUp);
    }
    // GLM-5's index keys (128 values a row, stored densely) at a constant stride: the tile's key
    // rows are then one address plus constant offsets.
    g.dot.update().specialize(g.ik.dim(1).stride() == 128);
}

// The absorbed form (one latent head for every query head): per query, the logits and PV are
// small matrix products over the heads, in register tiles, each gathered key row read once per
// tile of heads rather than once per head; the keys' logits and the value tiles in parallel, so
// that a decode step (one query) uses every core.
static void schedule_shared_kv(DsaSparseAttention &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf;
    constexpr int head_tile = 8, key_tile = 8, key_block = 64;
    Var dt("dt"), di("di"), ht("ht"), hi("hi");
    // PV: tiles of 2 vectors of value dims x 8 heads, each summed over every selected key in
    // registers, the tiles in parallel. The last tile is shifted inwards, as one computed past the
    // last value dim would read past the values; outputs of fewer heads take tiles of one head,
    // and narrower ones tiles of 1 x 1.
    const Expr out_dims = g.out.dim(0).extent(), out_heads = g.out.dim(1).extent();
    const TailStrategy shift = TailStrategy::ShiftInwards;
    struct Tile {
        int dims, heads;
    };
    // An int8 latent's value dims in whole groups (R a multiple of the group): the tiles split each
    // group, so that a tile's dims share one scale, loaded once, rather than each lane's gathered.
    if (g.latent_scale) {
        const int group = DsaSparseAttention::latent_group;
        g.out.dim(0).set_min(0);  // (the runtime's buffers start at 0: a tile's groups are then known)
        Var dg("dg"), dr("dr");
        g.out.specialize(out_dims % group == 0 && out_heads >= head_tile)
            .split(g.d, dg, dr, group)
            .split(dr, dt, di, 2 * vec)
            .split(g.h, ht, hi, head_tile, shift)
            .reorder(di, hi, ht, dt, dg, g.s, g.b)
            .vectorize(di, vec)
            .unroll(hi)
            .parallel(dg)
            .parallel(g.s);
    }
    const Tile by_preference[] = {{2 * vec, head_tile}, {2 * vec, 1}, {1, 1}};
    for (const Tile &tile : by_preference) {
        const bool last = &tile == std::end(by_preference) - 1;  // the general case
        // bf16 pairs: values at least a tile wide (kernel_contract.h), as the 1 x 1 tiles load the
        // values' 16-bit elements alone (the sapphirerapids target's vmovw, which Zen lacks).
        if (last && g.bf16_pairs) {
            g.out.specialize_fail("dsa_latent_attention (bf16 pairs): fewer latent values than its tiles");
            break;
        }
        Stage tiles = last ? Stage(g.out) : g.out.specialize(out_dims >= tile.dims && out_heads >= tile.heads);
        tiles.split(g.d, dt, di, tile.dims, shift)
            .split(g.h, ht, hi, tile.heads, shift)
            .reorder(di, hi, ht, dt, g.s, g.b)
            .parallel(dt)
            .parallel(g.s);
        if (tile.dims > 1) tiles.vectorize(di, vec).unroll(hi);
    }
    const LoopLevel query(g.out, g.s);
    g.acc.compute_at(g.out, ht).vectorize(g.d, vec, guard).unroll(g.d).unroll(g.h);
    g.acc.update().reorder(g.d, g.h, g.rn).vectorize(g.d, vec, guard).unroll(g.d).unroll(g.h);

    // Logits: tiles of a vector of heads x 8 keys; the key's values broadcast, the queries staged
    // heads-fastest so a vector of heads is one load.
    Var kb("kb"), ko("ko"), ki("ki"), hv("hv"), hl("hl");
    Func logits = g.logit.in();
    logits.compute_at(query)
        .reorder_storage(g.h, g.n)
        .split(g.n, kb, ko, key_block, guard)
        .split(ko, ko, ki, key_tile)
        .split(g.h, hv, hl, vec, guard)
        .reorder(hl, ki, hv, ko, kb)
        .vectorize(hl)
        .unroll(ki)
        .parallel(kb);
    g.logit.compute_at(logits, hv).reorder_storage(g.h, g.n).vectorize(g.h, vec, guard).unroll(g.n);
    // Both updates alike: the latent's R dims (an int8 latent's groups, each group's sum computed
    // alike for the tile), then the rotary ones.
    if (g.latent_scale) {
        g.logit.update(0).reorder(g.h, g.n, g.rg).vectorize(g.h, vec, guard).unroll(g.n);
        g.group_logit.compute_at(g.logit, g.rg).reorder_storage(g.h, g.n, g.group).vectorize(g.h, vec, guard)
            .unroll(g.n);
        g.group_logit.update().reorder(g.h, g.n, g.ri, g.group).vectorize(g.h, vec, guard).unroll(g.n);
    } else if (g.bf16_pairs) {
        // A pair's two products summed into one lane (a VectorReduce: vdpbf16ps), a key's pair one
        // 32-bit broadcast; the queries' pairs staged once per query, heads-fastest after the pair.
        // Whole vectors of heads (q_pairs clamps them): a tail would load 16-bit values alone.
        const TailStrategy round_up = TailStrategy::RoundUp;
        g.logit.update(0).reorder(g.rd.x, g.h, g.n, g.rd.y).atomic().vectorize(g.rd.x).vectorize(g.h, vec, round_up)
            .unroll(g.n);
        g.q_pairs.compute_at(query).bound_extent(g.pair, 2).reorder(g.pair, g.h, g.d).vectorize(g.pair)
            .vectorize(g.h, vec, round_up);
    } else {
        g.logit.update(0).reorder(g.h, g.n, g.rd).vectorize(g.h, vec, guard).unroll(g.n);
    }
    g.logit.update(1).reorder(g.h, g.n, g.rr).vectorize(g.h, vec, guard).unroll(g.n);
    Func queries = g.latent_scale ? g.q.in({g.logit, g.group_logit}) : g.q.in(g.logit);
    const std::vector<Var> qd = queries.args();  // (d, h, s, b)
    queries.compute_at(query).reorder_storage(qd[1], qd[0]).reorder(qd[1], qd[0]).vectorize(qd[1], vec, guard);

    // The row statistics and probabilities, vectors of heads.
    for (Func f : {g.row_max, g.row_sum}) {
        f.compute_at(query).vectorize(g.h, vec, guard);
        f.update().reorder(g.h, g.rn).vectorize(g.h, vec, guard);
    }
    g.prob.compute_at(query).reorder_storage(g.h, g.n).reorder(g.h, g.n).vectorize(g.h, vec, guard);
}

void schedule_dsa_sparse_attention(DsaSparseAttention &g, const Target &t) {
    if (g.shared_kv) return schedule_shared_kv(g, t);
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
