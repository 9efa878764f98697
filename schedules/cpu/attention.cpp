#include "schedules/cpu/attention.h"

#include <algorithm>

#include "kernel_contract.h"

namespace hattn::schedules::cpu {

using namespace Halide;

namespace {

// Head dims with a fast path: the D loop has a constant extent there, so register tiles unroll.
constexpr int fast_head_dims[] = {32, 64, 96, 128, 256};

// A family's lane count, where 0 asks for the target's natural vector of floats.
int lanes_or_natural(int lanes, const Target &t) { return lanes > 0 ? lanes : t.natural_vector_size<float>(); }

// The most vectors of `lanes` floats, up to `most`, that tile a head dim D exactly (a tile split
// without a tail reads past D otherwise: D = 96 in tiles of 4 x 16); 0 where none does.
int vectors_tiling(int D, int lanes, int most) {
    for (int v = std::min(most, D / lanes); v >= 1; v--) {
        if (D % (v * lanes) == 0) return v;
    }
    return 0;
}

// Decode PV into chunk_out, one register tile (rows x D/vec vectors) at a time; the rows are the
// heads of a group, which share V rows. `one_row` says that a call has a single row (one query
// head per KV head): then a tile is one row of as many vectors (of tiles.pv_row_lanes
// floats) as the accumulators allow.
void schedule_decode_pv(ChunkedAttention &a, const LoopLevel &chunk, const Target &t, DecodeCpuTiles tiles,
                        Expr one_row) {
    const int vec = t.natural_vector_size<float>();
    a.chunk_out.compute_at(chunk);
    Var ro("ro"), ri("ri"), dt("dt"), dv("dv"), di("di");
    RVar rjo("rjo"), rji("rji");
    // The keys go in blocks outside a tile's D slices, so that where a tile spans part of D (a
    // group's rows; one row at the widest head dims) a block's V rows stay in L1 for the other
    // slices, as prefill PV's blocks do; a tile of all of D has one slice (docs/perf/log.md, "bf16
    // pairs in decode").
    const int keys_per_block = 64;
    auto tile = [&](Expr condition, int rows, int vectors, int lanes) {
        a.chunk_out.specialize(condition).split(a.hg, ro, ri, rows, TailStrategy::GuardWithIf)
            .reorder(a.d, ri, ro).vectorize(a.d, lanes);
        a.pv.specialize(condition).vectorize(a.d, lanes);
        a.pv.update(0).specialize(condition)
            .split(a.d, dt, dv, vectors * lanes)
            .split(dv, dv, di, lanes)
            .split(a.rj, rjo, rji, keys_per_block, TailStrategy::GuardWithIf)
            .reorder(di, dv, a.hg, rji, dt, rjo)
            .vectorize(di)
            .unroll(dv)
            .unroll(a.hg);
    };
    const int one_row_lanes = lanes_or_natural(tiles.pv_row_lanes, t);
    for (int D : fast_head_dims) {
        // One row: fewer passes over the chunk's V rows, each reading more of every row.
        if (const int vectors = vectors_tiling(D, one_row_lanes, tiles.accumulators)) {
            tile(one_row && a.head_dim == D, 1, vectors, one_row_lanes);
        }
        // Else a register tile spans at most 4 vectors of D (more D loops outside the chunk), so
        // that each V load feeds several rows: rows x 4 vectors with 16 accumulators, not 2 x 8.
        if (const int vectors = vectors_tiling(D, vec, 4)) {
            // Rows a power of two, so that groups of 2, 4 and 8 heads fill whole tiles (3 vectors
            // of D = 96 left 5 rows of 16 accumulators).
            int rows = 1;
            while (rows * 2 <= std::min(8, tiles.accumulators / vectors)) rows *= 2;
            tile(a.head_dim == D, rows, vectors, vec);
        }
    }
    a.chunk_out.split(a.hg, ro, ri, 4, TailStrategy::GuardWithIf)
        .reorder(a.d, ri, ro)
        .vectorize(a.d, vec, TailStrategy::GuardWithIf);
    a.pv.compute_at(a.chunk_out, ro).vectorize(a.d, vec, TailStrategy::GuardWithIf);
    a.pv.update(0).reorder(a.d, a.hg, a.rj).vectorize(a.d, vec, TailStrategy::GuardWithIf);
}

// Prefill PV into chunk_out, stored queries-fastest like the probabilities it reads: a register
// tile is (query_vectors x values_per_step) accumulators, each step one vector load of a key's
// probabilities for the tile's queries and a broadcast of each of its V values, the way QK reads
// K. The chunk's keys go in blocks outside the tiles, so a block's probabilities and the V lines
// its D slices share stay in L1 (rows of D vectors re-read the whole chunk's V from L2 per row
// tile: docs/perf/log.md, "Causal prefill on the AVX2 machine").
void schedule_prefill_pv(ChunkedAttention &a, const LoopLevel &chunk, const Target &t,
                         PrefillCpuTiles tiles) {
    const int vec = t.natural_vector_size<float>();
    const int values_per_step = std::max(1, tiles.accumulators / tiles.query_vectors);
    // 128 keys' probabilities (32 KB at 64 queries) and V lines (128 per D slice) fit a 48 KB L1
    // together, and each block loads and stores the tile's accumulators once (docs/perf/log.md,
    // "Prefill: the running merge with one state per query row").
    const int keys_per_block = 128;
    Var qo("qo"), qv("qv"), qg("qg"), qr("qr"), dt("dt"), dv("dv");
    RVar rjo("rjo"), rji("rji");
    a.chunk_out.compute_at(chunk)
        .reorder_storage(a.qi, a.d, a.hg)
        .reorder(a.qi, a.d, a.hg)
        .vectorize(a.qi, vec, TailStrategy::GuardWithIf);
    a.pv.compute_at(a.chunk_out, a.hg).reorder_storage(a.qi, a.d).reorder(a.qi, a.d)
        .vectorize(a.qi, vec, TailStrategy::GuardWithIf);
    auto tile = [&](Stage pv) {
        pv.split(a.rj, rjo, rji, keys_per_block, TailStrategy::GuardWithIf)
            .split(a.qi, qo, qv, vec, TailStrategy::GuardWithIf)
            .split(qo, qg, qr, tiles.query_vectors, TailStrategy::GuardWithIf)
            .split(a.d, dt, dv, values_per_step, TailStrategy::GuardWithIf)
            .reorder(qv, qr, dv, rji, qg, dt, rjo)
            .vectorize(qv)
            .unroll(qr)
            .unroll(dv);
    };
    // A constant D splits exactly, so the unrolled V values carry no bounds check.
    for (int D : fast_head_dims) tile(a.pv.update(0).specialize(a.head_dim == D));
    tile(a.pv.update(0));
}

}  // namespace

void schedule_prefill(ChunkedAttention &a, Func out, const Target &t, PrefillCpuTiles tiles) {
    const int vec = t.natural_vector_size<float>();
    Var io("io"), ii("ii"), qo("qo"), qv("qv"), qg("qg"), qr("qr");

    // Parallel over sequences, KV heads and query tiles; a tile's queries and its group's heads
    // are computed together so each K/V chunk is loaded once for all of them.
    out.split(a.i, io, ii, a.T, TailStrategy::GuardWithIf)
        .reorder(a.d, a.hg, ii, io, a.hk, a.b)
        .vectorize(a.d, vec, TailStrategy::GuardWithIf)
        .parallel(a.b)
        .parallel(a.hk)
        .parallel(io);
    const LoopLevel tile(out, io);

    // Queries transposed once per tile so the QK product is vector(queries) x broadcast(key).
    // bf16 pairs: a vector is 16 queries' pairs of bf16 values (a vdpbf16ps operand) and a key's
    // pair one 32-bit broadcast; the tile's queries are rounded 32 at a time (vcvtneps2bf16).
    if (tiles.bf16_pairs) {
        a.q_tile.compute_inline();
        a.q_pairs.compute_at(tile).bound_extent(a.pair, 2).bound_extent(a.qi, a.T)
            .reorder(a.pair, a.qi, a.d, a.hg).vectorize(a.pair).vectorize(a.qi, vec);
    } else {
        a.q_tile.compute_at(tile).reorder_storage(a.qi, a.d, a.hg).vectorize(a.qi, vec, TailStrategy::GuardWithIf);
    }
    // The running merge of the tile (Merge::RunningRows); its chunk loop (bounded by causality)
    // holds the chunk stages. Stored queries-fastest like the chunk outputs and the softmax pieces
    // it merges. The channel loop is scalar, so LLVM branches to channel 0's exp: one exp per row
    // and chunk, where the per-element Running form takes two per element (docs/perf/log.md,
    // "Prefill: the running merge with one state per query row").
    const RVar channel = a.channel_chunk.x, chunk_var = a.channel_chunk.y;
    a.running_rows.compute_at(tile).bound(a.qi, 0, a.T).reorder_storage(a.qi, a.x, a.hg)
        .reorder(a.qi, a.x, a.hg).vectorize(a.qi, vec, TailStrategy::GuardWithIf);
    a.running_rows.update().reorder(a.qi, channel, a.hg, chunk_var)
        .vectorize(a.qi, vec, TailStrategy::GuardWithIf);
    const LoopLevel chunk(a.running_rows, chunk_var);

    // A 16-bit or int8 chunk widened once into float32 panels, which the products then broadcast
    // from as they do from a float32 cache, instead of converting every value at every broadcast.
    if (tiles.widened_panels) {
        for (Func panel : {a.k_panel, a.v_panel}) {
            panel.compute_at(chunk).vectorize(a.d, vec, TailStrategy::GuardWithIf);
        }
    }

    // QK: the scores are an update in steps of the algorithm's key_step keys (Merge::RunningRows),
    // the steps ending at the tile's last visible key; a step is a register tile of (query_vectors
    // x key_step) computed in qk, so the tile's keys are the algorithm's.
    a.score.compute_at(chunk);
    a.score.update()
        .split(a.qi, qo, qv, vec)
        .split(qo, qg, qr, tiles.query_vectors)
        .reorder(qv, qr, a.rs.x, qg, a.rs.y, a.hg)
        .vectorize(qv)
        .unroll(qr)
        .unroll(a.rs.x);
    // Both branches keep that schedule; the one without soft-capping computes no tanh.
    a.score.update().specialize(a.has_softcap);
    a.qk.compute_at(a.score, qg).split(a.qi, qo, qv, vec).vectorize(qv).unroll(qo).unroll(a.j);
    if (tiles.bf16_pairs) {
        // A pair's two products summed into one lane: a VectorReduce, which is vdpbf16ps.
        a.qk.update().split(a.qi, qo, qv, vec).reorder(a.rd.x, qv, qo, a.j, a.rd.y).atomic().vectorize(a.rd.x)
            .vectorize(qv).unroll(qo).unroll(a.j);
    } else {
        a.qk.update().split(a.qi, qo, qv, vec).reorder(qv, qo, a.j, a.rd).vectorize(qv).unroll(qo).unroll(a.j);
    }

    // Softmax pieces, vectorised across the tile's queries.
    for (Func f : {a.chunk_max, a.chunk_sum}) {
        f.compute_at(chunk).vectorize(a.qi, vec);
        f.update().reorder(a.qi, a.rj, a.hg).vectorize(a.qi, vec);
    }
    a.prob.compute_at(chunk).reorder(a.qi, a.j, a.hg).vectorize(a.qi, vec);
    // A masked kernel's mask bytes once a chunk, for every head of the tile and both softmax
    // passes, stored queries-fastest like the probabilities; read along the mask's rows.
    if (a.mask_tile.defined()) {
        a.mask_tile.compute_at(chunk).reorder(a.j, a.qi).vectorize(a.j, vec, TailStrategy::GuardWithIf);
    }

    schedule_prefill_pv(a, chunk, t, tiles);
}

void schedule_decode(ChunkedAttention &a, Func out, const Target &t, DecodeCpuTiles tiles) {
    const int vec = t.natural_vector_size<float>();
    const Var d = out.args()[0], b = out.args()[3];
    out.vectorize(d, vec, TailStrategy::GuardWithIf).parallel(b);
    const LoopLevel sequence(out, b);

    if (tiles.bf16_pairs) {
        a.q_tile.compute_inline();
        a.q_pairs.compute_at(sequence);
    } else {
        a.q_tile.compute_at(sequence);
    }
    if (tiles.int8_dots) {
        for (Func f : {a.q_peak, a.q_code_sum, a.q_codes}) f.compute_at(sequence);
        a.q_codes.vectorize(a.d, vec, TailStrategy::GuardWithIf);
    }
    for (Func f : {a.merged_max, a.merged_sum}) {
        f.compute_at(sequence);
        f.update().reorder(a.qi, a.rc, a.hg);
    }
    a.weight.compute_at(sequence);
    a.merged_out.compute_at(sequence).vectorize(a.d, vec, TailStrategy::GuardWithIf);
    a.merged_out.update().reorder(a.d, a.rc, a.qi, a.hg).vectorize(a.d, vec, TailStrategy::GuardWithIf);

    // Split-KV: every (chunk, KV head) pair is a task of its own.
    a.part.compute_at(sequence).reorder(a.x, a.qi, a.hg, a.hk, a.c).parallel(a.c).parallel(a.hk);
    const LoopLevel chunk(a.part, a.hk);

    // Scores and probabilities are stored keys-fastest, so the softmax's passes read whole
    // vectors of keys (heads-fastest made every one a gather of stride g).
    for (Func f : {a.qk, a.score, a.prob}) f.reorder_storage(a.j, a.hg);
    a.score.compute_at(chunk).reorder(a.j, a.qi, a.hg).vectorize(a.j, vec, TailStrategy::GuardWithIf);
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
    a.prob.compute_at(chunk).reorder(a.j, a.qi, a.hg).vectorize(a.j, vec, TailStrategy::GuardWithIf);

    // QK: one key row at a time against the heads of the group (the row stays in L1). Each dot
    // product is split into vector lanes (rfactor) that are summed once at the end. A group that
    // is a multiple of 4 (GQA) takes its heads 4 at a time, one of 2 in pairs: they share every K
    // vector load and keep independent FMA chains in flight, where one head alone waits on a
    // chain of D / vec FMAs. Other groups go one head at a time (the split by 1 gives every
    // branch the `ho` loop that the lanes are computed at). `keys_per_step` key rows go side by
    // side, sharing each load of the heads' queries, below the family's `one_key_from_head_dim`
    // (docs/perf/log.md, "Decode QK and PV tiles").
    const Expr group = out.output_buffer().dim(1).extent();
    RVar rdo("rdo"), rdi("rdi");
    Var lane("lane"), ho("ho"), hi("hi");
    // The zero fill in storage order: heads-fastest, it was a scalar store per score with a
    // stride of the chunk (docs/perf/log.md, "Decode QK and PV tiles").
    a.qk.compute_at(chunk).reorder(a.j, a.qi, a.hg).vectorize(a.j, vec, TailStrategy::GuardWithIf);
    const int lanes_width = lanes_or_natural(tiles.qk_lanes, t);
    // bf16 pairs and int8 dots: the lanes split the pairs' (quads') index, each lane summing the
    // products of its pairs (quads).
    const bool grouped_products = tiles.bf16_pairs || tiles.int8_dots;
    const RVar along_d = grouped_products ? RVar(a.rd.y) : RVar(a.rd.x);
    a.qk.update().reorder(a.qi, a.hg, a.j).split(along_d, rdo, rdi, lanes_width, TailStrategy::GuardWithIf);
    Func lanes = a.qk.update().rfactor(rdi, lane);
    a.qk.update().atomic().vectorize(rdi);  // the lanes' sum as a shuffle tree, not dependent adds
    Var jo("jo"), ji("ji");
    auto heads_by = [&](Stage qk, int heads, int keys) {
        qk.split(a.j, jo, ji, keys).split(a.hg, ho, hi, heads).reorder(rdi, hi, ji, a.qi, ho, jo);
    };
    const int from_dim = tiles.one_key_from_head_dim;
    for (int heads : {4, 2}) {
        const Expr grouped = group % heads == 0;
        if (from_dim > 0) heads_by(a.qk.update().specialize(grouped && a.head_dim >= from_dim), heads, 1);
        heads_by(a.qk.update().specialize(grouped), heads, tiles.keys_per_step);
    }
    if (from_dim > 0) heads_by(a.qk.update().specialize(a.head_dim >= from_dim), 1, 1);
    heads_by(a.qk.update(), 1, tiles.keys_per_step);
    lanes.compute_at(a.qk, ho).reorder_storage(lane, a.hg, a.j).vectorize(lane).unroll(a.hg).unroll(a.j);
    if (grouped_products) {
        // A pair's two products (a quad's four) summed into its lane: a VectorReduce, which is
        // vdpbf16ps (vpdpbusd).
        lanes.update().reorder(a.rd.x, lane, a.hg, a.j, rdo).atomic().vectorize(a.rd.x)
            .vectorize(lane).unroll(a.hg).unroll(a.j);
    } else {
        lanes.update().reorder(lane, a.hg, a.j, rdo).vectorize(lane).unroll(a.hg).unroll(a.j);
    }
    // At a constant head dim the lanes' walk along D unrolls, which read the cache faster at
    // D = 32 and 64 (docs/perf/log.md, "Decode QK and PV tiles").
    if (tiles.int8_dots) {
        // Only the contract's head dims, in whole vectors of lanes: no tail of narrower dot
        // products (kernel_contract.h).
        for (int D : kernel_contract::int8_dots_head_dims) lanes.update().specialize(a.head_dim == D).unroll(rdo);
        lanes.update().specialize_fail("attention_decode_int8_dots: a head dim the kernel contract does not list");
    } else {
        for (int D : fast_head_dims) lanes.update().specialize(a.head_dim == D).unroll(rdo);
    }
    for (Func f : {a.chunk_max, a.chunk_sum}) f.compute_at(chunk);
    schedule_decode_pv(a, chunk, t, tiles, group == 1);
}

}  // namespace hattn::schedules::cpu
