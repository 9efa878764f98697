#include <string>

#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "kernel_contract.h"
#include "schedules/gpu/lanes.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

namespace {

// Block tiles (a query tile of T > 1): a block owns T = 64 query rows of one head and walks the key
// chunks (C = 64 keys) in step, 256 threads; the small tiles, T = 32 with 128 threads, are the same
// schedule for devices that allow a block less shared memory (kernel_contract.h). Both products run
// in register tiles: a thread computes 4 rows x 4 keys of the chunk's scores (per head dim, two
// 128-bit loads for 16 FMAs) and 4 rows x D/16 head dims of its PV (per key, 1 + D/64 such loads
// for 4 D/16 FMAs), each tile a Func computed inside the thread's loop (qk, pv) with every index
// unrolled, so that it lives in registers. (A Func stored in registers at the block level gets the
// whole block's box per thread, in local memory: Halide 14 does not narrow it to the thread's
// part.)
//
// The block's tiles live in shared memory (the runtime raises the kernel's dynamic limit past 48 KB,
// runtime/src/cuda_driver.cpp; kernel_contract.h bounds their size): the chunk's queries, keys and
// values, staged per chunk (see q_tile and v_panel below); the chunk's scores and probabilities
// (query-fastest, so the row statistics' threads read consecutive words); the running (output, max,
// sum) tuple, 3 T D floats. The queries and keys are stored head-dim-major, so that a thread's 4
// rows or keys of one head dim are one aligned 128-bit load (LLVM merges the unrolled loads where
// it can prove the alignment: rows a multiple of 4 floats apart). The products' loads, the staging's
// stores and the state update (vectorized over a thread's head dims) are all 128-bit: a quarter of
// the instructions and of the conflicting bank cycles (docs/perf/log.md, "GPU prefill block tiles").
//
// A block's threads are (x 4, y T / 4, z 4), so that a warp is 4 x 8: in QK its 4 key threads read
// 4 keys 4 apart and its 8 row threads 8 queries 4 apart (distinct banks, no conflict); in PV its
// 4 head-dim threads read 4 values 8 apart and its row threads 8 probabilities 4 apart.
constexpr int block_threads_x = 4, block_threads_z = 4;
constexpr int rows_per_thread = 4, keys_per_thread = 4;

// A thread's state and PV elements, or the output's: rows (ty, qr), 4 rows per thread; head dims
// (dz, dx, dr), dims_per_thread each. `outer` goes outside the thread loops (the chunk loop, for
// the state's update; the block loops, for the output).
void map_state(Stage s, const Var &rows, const Var &d, int dims_per_thread, std::vector<VarOrRVar> outer = {}) {
    Var ty("ty"), qr("qr"), dt("dt"), dr("dr"), dz("dz"), dx("dx");
    std::vector<VarOrRVar> order = {dr, qr, dx, ty, dz};
    order.insert(order.end(), outer.begin(), outer.end());
    s.split(rows, ty, qr, rows_per_thread)
        .split(d, dt, dr, dims_per_thread)
        .split(dt, dz, dx, block_threads_x)
        .reorder(order)
        .gpu_threads(dx, ty, dz)
        .unroll(qr);
    // The thread's head dims of a row are contiguous: one vector of 2, 4 or 8 (two 128-bit
    // accesses), each tuple element's loads and stores merged. OpenCL C has no vector of 5 or 6
    // floats (D = 80, 96), which unroll.
    const bool has_vector_type = dims_per_thread == 2 || dims_per_thread == 4 || dims_per_thread == 8;
    if (has_vector_type) {
        s.vectorize(dr);
    } else {
        s.unroll(dr);
    }
}

// A tile of `extent` rows staged in shared memory, (d, rows): consecutive threads on consecutive
// head dims (`dims_per_step` a step, the x and y threads: T), so that the global loads coalesce,
// and the rows over z, each thread's loads unrolled, in flight together. Stored head-dim-major
// (`transposed`), a thread takes extent / 4 contiguous rows, whose stores merge into 128-bit ones;
// else every 4th row (consecutive threads storing consecutive words).
void map_staging(Func f, const Var &d, const Var &rows, int extent, int dims_per_step, bool transposed) {
    Var dg("dg"), dl("dl"), dy("dy"), dx("dx"), ro("ro"), rz("rz");
    f.split(d, dg, dl, dims_per_step, TailStrategy::GuardWithIf).split(dl, dy, dx, block_threads_x);
    if (transposed) {
        f.split(rows, rz, ro, extent / block_threads_z);
    } else {
        f.split(rows, ro, rz, block_threads_z);
    }
    f.reorder(ro, dg, dx, dy, rz).gpu_threads(dx, dy, rz).unroll(ro);
}

// One thread per query row (x, y: consecutive rows, consecutive words).
void map_rows(Stage s, const Var &qi) {
    Var qy("qy"), qx("qx");
    s.split(qi, qy, qx, block_threads_x).gpu_threads(qx, qy);
}

void schedule_block_tiles(AttentionPrefill &g) {
    ChunkedAttention &a = *g.attention;
    // The staging's x and y threads: as many as the products' (the block's threads are the most
    // any stage asks for).
    const int staging_dims = block_threads_x * a.T / rows_per_thread;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var io("io"), ii("ii"), hb("hb");
    // The output: the block's grid, a kernel per head dim of the contract's list (a thread's D / 16
    // head dims unroll); its threads divide the state by the running state's map.
    for (int D : kernel_contract::gpu_prefill_block_tile_head_dims) {
        Stage s = g.out.specialize(a.head_dim == D);
        s.split(a.i, io, ii, a.T, guard).fuse(a.hk, a.b, hb);
        map_state(s, ii, a.d, D / 16, {io, a.hg, hb});
        s.gpu_blocks(io, a.hg, hb);
    }
    g.out.specialize_fail("attention_prefill (GPU block tiles): head dim not one of " +
                          kernel_contract::gpu_prefill_block_tile_head_dims_text());

    a.running.compute_at(g.out, io);
    for (int D : kernel_contract::gpu_prefill_block_tile_head_dims) {
        map_state(a.running.specialize(a.head_dim == D), a.qi, a.d, D / 16);
        map_state(a.running.update().specialize(a.head_dim == D), a.qi, a.d, D / 16, {a.rc});
    }
    // Never run (the output's specialize_fail), but every branch needs the loops pv is computed at.
    map_state(a.running, a.qi, a.d, 8);
    map_state(a.running.update(), a.qi, a.d, 8, {a.rc});
    const LoopLevel chunk(a.running, RVar(a.rc));

    // The queries are staged again for each chunk: staged once per block, before the chunk loop,
    // Halide 14 packed the chunk's probabilities into their shared memory (its liveness analysis of
    // a block's shared allocations ignores the loop: the queries' last use in the body comes
    // before the probabilities' first), and every chunk after the first read them overwritten.
    // (That packing is why kernel_contract.h's bound counts the queries and probabilities as one.)
    //
    // Each head dim's row of queries or keys is padded by 4 floats, 4 banks apart, so that a
    // quarter warp's 128-bit stores (8 consecutive head dims) hit distinct banks (unpadded, the
    // queries' conflicted 8 ways: docs/perf/log.md, "GPU prefill block tiles").
    a.q_tile.compute_at(chunk).reorder_storage(a.qi, a.d).align_storage(a.qi, a.T + 4);
    map_staging(a.q_tile, a.d, a.qi, a.T, staging_dims, true);
    a.k_panel.compute_at(chunk).reorder_storage(a.j, a.d).align_storage(a.j, a.C + 4);
    map_staging(a.k_panel, a.d, a.j, a.C, staging_dims, true);

    // Scores: a thread's 4 x 4 tile (rows ty, keys kt = (kz, kx)), its dot products (qk) in
    // registers; stored query-fastest, unpadded so that a key's 4 rows are one 128-bit store.
    Var ty("ty"), qr("qr"), kt("kt"), ju("ju"), kz("kz"), kx("kx");
    a.score.compute_at(chunk)
        .reorder_storage(a.qi, a.j)
        .split(a.qi, ty, qr, rows_per_thread)
        .split(a.j, kt, ju, keys_per_thread)
        .split(kt, kz, kx, block_threads_x)
        .reorder(ju, qr, kx, ty, kz)
        .gpu_threads(kx, ty, kz)
        .unroll(ju)
        .unroll(qr);
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
    RVar rdo("rdo"), rdi("rdi");
    a.qk.compute_at(a.score, kx).store_in(MemoryType::Register).unroll(a.qi).unroll(a.j);
    a.qk.update()
        .split(a.rd, rdo, rdi, 8, guard)
        .reorder(a.qi, a.j, rdi, rdo)
        .unroll(a.qi)
        .unroll(a.j)
        .unroll(rdi);

    // Row statistics: a thread per row, its max or sum in a register (the Func computed inside the
    // thread's loop), then stored once to shared memory (the wrapper every consumer reads):
    // computed in shared memory, each step was a load and a store, a chain through memory.
    for (Func f : {a.chunk_max, a.chunk_sum}) {
        Func stored = f.in();
        stored.compute_at(chunk);
        map_rows(stored, a.qi);
        f.compute_at(stored, Var("qx")).store_in(MemoryType::Register);
        f.update().unroll(a.rj, 8);
    }
    Var qy("qy"), qx("qx"), jo("jo"), jz("jz");
    a.prob.compute_at(chunk)
        .reorder_storage(a.qi, a.j)
        .split(a.qi, qy, qx, block_threads_x)
        .split(a.j, jo, jz, block_threads_z)
        .reorder(jo, qx, qy, jz)
        .gpu_threads(qx, qy, jz)
        .unroll(jo, 4);
    a.chunk_out.compute_inline();
    // V staged per chunk like K (natural layout: in PV a thread's D/16 head dims are 128-bit
    // loads, a warp's 4 head-dim threads D/16 words apart, distinct banks). Read through the L1
    // instead, it ran slower: the block's shared memory leaves the L1 too little for the chunk's V,
    // read twice by each of 8 warps (docs/perf/log.md, "GPU prefill block tiles").
    a.v_panel.compute_at(chunk);
    map_staging(a.v_panel, a.d, a.j, a.C, staging_dims, false);

    // PV: the thread's 4 rows x D/16 dims in registers, summed over the chunk's keys, then added
    // to the state it updates (same elements).
    a.pv.compute_at(a.running, Var("dx")).store_in(MemoryType::Register).unroll(a.d).unroll(a.qi);
    a.pv.update().reorder(a.d, a.qi, a.rj).unroll(a.d).unroll(a.qi).unroll(a.rj, 2);
}

}  // namespace

// The contract's tiles of the kind (the runtime sizes their shared memory from them); the GPU's
// scores cover whole chunks, so no key step.
PrefillTile prefill_tile(kernel_contract::GpuPrefillTileKind kind) {
    const kernel_contract::GpuPrefillTiles tiles = kernel_contract::gpu_prefill_tiles_of(kind);
    return {tiles.query_tile, tiles.key_chunk, 1};
}

// The query tile the GPU variant was generated with picks the schedule: block tiles (T > 1: 64
// rows, or the small tiles' 32), or the `rows` schedule's (T = 1): one GPU
// thread per query row of one head, which runs the chunk loop for its row with the chunk's scores
// in its own memory; blocks are (rows, head in group, KV head x sequence). (With T > 1 that mapping
// would compute the whole tile per thread: Halide's bounds of running(d, i % T, ...) cover it.) The
// head dims with a fast path get their own specialisation, where every per-thread array has a
// constant size and lives in the thread's local memory rather than a global scratch buffer.
void schedule(AttentionPrefill &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    if (a.T > 1) {
        schedule_block_tiles(g);
        return;
    }
    const int rows_per_block = 64;
    Var io("io"), ii("ii"), hb("hb");
    auto map_rows = [&](Stage s) {
        s.split(a.i, io, ii, rows_per_block, TailStrategy::GuardWithIf)
            .reorder(a.d, ii, io, a.hg, a.hk, a.b)
            .fuse(a.hk, a.b, hb)
            .gpu_blocks(io, a.hg, hb)
            .gpu_threads(ii);
    };
    for (int D : {32, 64, 128}) map_rows(g.out.specialize(a.head_dim == D));
    map_rows(g.out);
    const LoopLevel row(g.out, ii);
    a.q_tile.compute_at(row);
    a.running.compute_at(row);
    const LoopLevel chunk(a.running, RVar(a.rc));
    for (Func f : {a.qk, a.score, a.chunk_max, a.prob, a.chunk_sum, a.pv, a.chunk_out}) {
        f.compute_at(chunk);
    }
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
}

// CUDA: the hardware's exp2 approximation (libdevice's __nv_fast_expf: ex2.approx of x log2(e),
// subnormals flushed to 0), a few instructions where Halide 14's fast_exp is a polynomial; its error
// is largest at the callers' clamp (-87), where a term is negligible beside a row's largest
// (docs/perf/log.md, "GPU prefill block tiles"). OpenCL keeps Halide's (a target with both runs its
// kernels as OpenCL).
Expr fast_exp(const Expr &x, const Target &t) {
    if (!t.has_feature(Target::CUDA) || t.has_feature(Target::OpenCL)) return Halide::fast_exp(x);
    return Internal::Call::make(Float(32), "__nv_fast_expf", {x}, Internal::Call::PureExtern);
}

// A decode block is one chunk of keys, its scores computed 32 keys at a time (see below); longer
// chunks ran slower (docs/perf/log.md, "Decode key chunks").
int decode_key_chunk(const Target &) { return 128; }

// Split-KV: one block per (chunk, KV head, sequence, up to 4 heads of the group) computes the
// chunk's partial result for those heads. The keys are scored 32 at a time: each such K tile is staged in shared memory
// by a thread per head dim (coalesced reads, its 32 loads unrolled so that they are in flight
// together), stored key-fastest and padded by one key per head dim, so that both those stores and
// the score threads' reads (a thread per key) hit distinct banks; 33 KB at D = 256. (A thread per
// key read its own K row from global memory before, 32 lines per warp load and once per head.)
// Thread loops over the keys (QK, softmax) and over the head dim (PV for every head of the block
// at once, V read from global memory, consecutive threads reading consecutive floats); the
// queries and scores stay in shared memory. Then one block per (head, KV head, sequence), threads
// over (head dim, lane), merges the chunks.
void schedule(AttentionDecode &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    const Var hk = g.out.args()[2], b = g.out.args()[3];
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const int tile_keys = 32;
    Var hb("hb"), jo("jo"), ji("ji"), hgo("hgo"), hgi("hgi");
    // A block takes up to 4 heads of the group (2 past D = 128), a large group (MQA's dozens of
    // heads) several blocks per chunk, which stage the same K tile, mostly from L2. Not 8: PV's
    // register tile has a block's most heads whatever the group (below), so for a group of 4 half
    // its accumulators and its probability loads were for heads past the group's (docs/perf/log.md,
    // "GPU decode blocks").
    //
    // A chunk's partial result is D + 2 values a head (its output, then its max and sum), written
    // by whole warps: a thread per value made a fifth warp at D = 128, with 2 busy threads, that
    // held registers all through the block and left fewer blocks an SM (docs/perf/log.md, "GPU
    // decode blocks"). A thread takes every (threads)th value instead.
    a.part.compute_root();
    auto map_chunks = [&](Stage s, int heads_per_block, int threads) {
        Var xo("xo"), xi("xi");
        s.split(a.x, xo, xi, threads, guard)
            .split(a.hg, hgo, hgi, heads_per_block, guard)
            .reorder(xo, xi, a.qi, hgi, a.c, hgo, a.qt, a.hk, a.b)
            .fuse(a.hk, a.b, hb)
            .gpu_blocks(a.c, hgo, hb)
            .gpu_threads(xi);
    };
    constexpr int max_heads_per_block = 4;
    map_chunks(a.part.specialize(a.head_dim <= 128), max_heads_per_block, 128);
    map_chunks(a.part, max_heads_per_block / 2, kernel_contract::gpu_decode_max_head_dim);
    const LoopLevel block(a.part, a.c);
    // The group's scaled queries once per block in shared memory: inlined, every key's dot product
    // loaded them from global memory and scaled them again.
    a.q_tile.compute_at(block).gpu_threads(a.d);
    // The scores are stored (shared); each one's dot product accumulates in a register (qk at the
    // thread), not in shared memory, which could alias the queries and took a store per FMA.
    // A thread per (key, head of the group): the 32 keys of a K tile times g heads (a single warp
    // walking the heads took the whole chunk's QK on itself).
    Var t("t");
    a.score.compute_at(block)
        .split(a.j, jo, ji, tile_keys, guard)
        .reorder(a.qi, ji, a.hg, jo)
        .fuse(ji, a.hg, t)
        .gpu_threads(t);
    // Not specialised on soft-capping: each branch would stage its own K tile (two allocations,
    // 67 KB of shared memory at D = 256); the tanh costs a few instructions per score.
    RVar rdo("rdo"), rdi("rdi");
    a.qk.compute_at(a.score, t);
    a.qk.update().split(a.rd, rdo, rdi, 8, guard).unroll(rdi);  // 16 loads in flight
    a.k_panel.compute_at(a.score, jo)
        .reorder_storage(a.j, a.d)
        .align_storage(a.j, tile_keys + 1)
        .reorder(a.j, a.d)
        .gpu_threads(a.d)
        .unroll(a.j);
    a.v_panel.compute_inline();
    // The chunk's max and sum over its keys: 32 lanes each take every 32nd key (rfactor), then one
    // thread per head combines the lanes.
    constexpr int lanes = 32;
    for (Func f : {a.chunk_max, a.chunk_sum}) {
        RVar rjo("rjo"), rji("rji");
        Var u("u");
        Func per_lane = f.update().split(a.rj, rjo, rji, lanes, guard).rfactor(rji, u);
        if (f.name() == a.chunk_max.name()) start_lanes_at(per_lane, ChunkedAttention::masked_score);
        per_lane.compute_at(block).reorder(u, a.hg).gpu_threads(u);
        per_lane.update().reorder(u, rjo, a.hg).gpu_threads(u);
        f.compute_at(block).gpu_threads(a.hg);
        f.update().gpu_threads(a.hg);
    }
    a.prob.compute_at(block).reorder(a.j, a.hg).gpu_threads(a.j);
    // PV: a thread per head dim accumulates every head of the block at once, in registers (pv at
    // the thread, a block's most heads whatever the group: the unrolled tile needs a constant
    // extent), so that each V value is loaded once for all of them; stored per (head dim, head)
    // in shared memory.
    // (A pass per head read the chunk's V once per head, from the L2 once the L1 had lost it.)
    a.chunk_out.compute_at(block).reorder(a.hg, a.d).gpu_threads(a.d);
    a.pv.compute_at(a.chunk_out, a.d).bound_extent(a.hg, max_heads_per_block).store_in(MemoryType::Register).unroll(a.hg);
    // Sixteen V loads in flight per thread: fewer or more ran slower (docs/perf/log.md, "GPU decode blocks").
    a.pv.update().reorder(a.hg, a.rj).unroll(a.hg).unroll(a.rj, 16);
    // A block per (head, KV head, sequence), a thread per (head dim, lane): at most 256 x 4
    // threads (the runtime refuses wider heads). Each lane takes every 4th chunk (rfactor) and
    // walks them eight at a time, so that eight loads are in flight; the lanes' results then meet
    // in shared memory. (A thread walking every chunk itself waited on the L2 once per 8 of them,
    // three times over, with a block per head: 32 blocks at B = 1.)
    constexpr int merge_lanes = 4, chunks_per_step = 8;
    const Var head_dim_var = g.out.args()[0], head_var = g.out.args()[1];
    g.out.gpu_blocks(head_var, hk, b).gpu_threads(head_dim_var);
    const LoopLevel block_of_head(g.out, head_var);
    // A Func's sum (or max) over the chunks split into the lanes' (rfactor): each lane's loop
    // (`step`, serial, inside the thread loops) takes eight chunks a step, unrolled.
    struct Lanes {
        Func per_lane;
        Var u;
        RVar step, in_step;
    };
    auto split_lanes = [&](Func f) {
        Lanes l{Func(), Var("u"), RVar("step"), RVar("in_step")};
        RVar rco("rco"), rci("rci");
        l.per_lane = f.update().split(a.rc, rco, rci, merge_lanes, guard).rfactor(rci, l.u);
        if (f.name() == a.merged_max.name()) start_lanes_at(l.per_lane, ChunkedAttention::masked_score);
        l.per_lane.update().split(rco, l.step, l.in_step, chunks_per_step, guard).unroll(l.in_step);
        f.compute_at(block_of_head);
        l.per_lane.compute_at(block_of_head);
        return l;
    };
    // The row statistics: a thread per lane, then one thread takes the lanes together.
    for (Func f : {a.merged_max, a.merged_sum}) {
        Lanes l = split_lanes(f);
        l.per_lane.gpu_threads(l.u);
        l.per_lane.update().reorder(l.in_step, l.step, l.u).gpu_threads(l.u);
        f.gpu_threads(a.qi);  // extent 1 in the block
        f.update().gpu_threads(a.qi);
    }
    // The output's sums: threads over (head dim, lane), then a thread per head dim over the lanes.
    Lanes l = split_lanes(a.merged_out);
    l.per_lane.reorder(a.d, l.u).gpu_threads(a.d, l.u);
    l.per_lane.update().reorder(l.in_step, l.step, a.d, l.u).gpu_threads(a.d, l.u);
    a.merged_out.gpu_threads(a.d);
    a.merged_out.update().gpu_threads(a.d);
    a.weight.compute_inline();  // stored, it would need a global array per thread (one per chunk)
}

}  // namespace hattn::schedules::gpu
