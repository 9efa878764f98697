#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

namespace {

// Block tiles (a query tile of T > 1): a block owns T query rows of one head and walks the key
// chunks in step. Per chunk the whole block stages the K and V tiles (C keys) in shared memory,
// computes the T x C scores there (a thread per score, K stored key-fastest so the threads of a
// row read consecutive words), the row statistics and probabilities, then each thread accumulates
// PV for eight consecutive head dims of one row in registers and rescales the block's running
// state (shared memory) for them. The running (output, max, sum) tuple costs
// 3 T D floats of shared memory; with T = C = 16 a block stays under 48 KB at D = 128.
void schedule_block_tiles(AttentionPrefill &g) {
    ChunkedAttention &a = *g.attention;
    // 8 head dims per thread keep a block at 16 x 16 = 256 threads at D = 128, so that it launches
    // whatever registers the driver's PTX compiler gives a thread (up to 255; Halide 14 states no
    // launch bounds, and 512 threads would allow only 128).
    const int dims_per_thread = 8;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var io("io"), ii("ii"), hb("hb"), dt("dt"), dv("dv");
    auto map_blocks = [&](Stage s) {
        s.split(a.i, io, ii, a.T, guard)
            .split(a.d, dt, dv, dims_per_thread, guard)
            .reorder(dv, dt, ii, io, a.hg, a.hk, a.b)
            .fuse(a.hk, a.b, hb)
            .gpu_blocks(io, a.hg, hb)
            .gpu_threads(dt, ii);
    };
    for (int D : {32, 64, 128}) map_blocks(g.out.specialize(a.head_dim == D));
    map_blocks(g.out);

    a.running.compute_at(g.out, io)
        .split(a.d, dt, dv, dims_per_thread, guard)
        .reorder(dv, dt, a.qi)
        .gpu_threads(dt, a.qi);
    a.running.update()
        .split(a.d, dt, dv, dims_per_thread, guard)
        .reorder(dv, dt, a.qi, a.rc)
        .gpu_threads(dt, a.qi);
    const LoopLevel chunk(a.running, RVar(a.rc));
    for (Func panel : {a.k_panel, a.v_panel}) {
        panel.compute_at(chunk)
            .split(a.d, dt, dv, dims_per_thread, guard)
            .reorder(dv, dt, a.j)
            .gpu_threads(dt, a.j);
    }
    a.k_panel.reorder_storage(a.j, a.d);
    a.q_tile.compute_inline();
    a.score.compute_at(chunk).gpu_threads(a.j, a.qi);
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
    a.qk.compute_at(a.score, a.j);
    a.chunk_max.compute_at(chunk).gpu_threads(a.qi);
    a.chunk_max.update().gpu_threads(a.qi);
    a.prob.compute_at(chunk).gpu_threads(a.j, a.qi);
    a.chunk_sum.compute_at(chunk).gpu_threads(a.qi);
    a.chunk_sum.update().gpu_threads(a.qi);
    a.chunk_out.compute_inline();
    // Unrolled, not vectorised: Halide 14's OpenCL C backend cannot extract lanes of the masked
    // vectors a guarded tail makes (the generic head dim has one).
    a.pv.compute_at(a.running, dt).bound_extent(a.d, dims_per_thread).unroll(a.d);
    a.pv.update().reorder(a.d, a.rj).unroll(a.d);
}

}  // namespace

// The block tiles' 16 query rows (kernels.cmake also passes it, with the row schedule's 1); the
// GPU's scores cover whole chunks, so no key step.
PrefillTile prefill_tile(const Target &) { return {16, 1}; }

// The query tile the GPU variant was generated with picks the schedule: block tiles (T > 1, the
// default GPU_PARAMS), or the `rows` family's (T = 1): one GPU thread per query row of one head,
// which runs the chunk loop for its row with the chunk's scores in its own memory; blocks are
// (rows, head in group, KV head x sequence). (With T > 1 that mapping would compute the whole tile
// per thread: Halide's bounds of running(d, i % T, ...) cover it.) The head dims with a fast path
// get their own specialisation, where every per-thread array has a constant size and lives in the
// thread's local memory rather than a global scratch buffer.
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

// A decode block is one chunk of keys, a thread per key.
int decode_key_chunk(const Target &) { return 256; }

// Split-KV: one block per (chunk, KV head, sequence) computes the chunk's partial result for the
// whole head group, with thread loops over its keys (QK, softmax) and over the head dim (PV), so
// consecutive threads read consecutive floats of each V row; the queries and scores stay in shared
// memory. (A thread's K row is read with scalar loads, 32 lines per warp load: a lead for the
// H200 is float4 loads through an rfactor'd QK, specialised per head dim.)
// Then one block per (KV head, sequence), a thread per (head dim, head), merges the chunks.
void schedule(AttentionDecode &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    const Var hk = g.out.args()[2], b = g.out.args()[3];
    Var hb("hb");
    a.part.compute_root()
        .reorder(a.x, a.qi, a.hg, a.c, a.qt, a.hk, a.b)
        .fuse(a.hk, a.b, hb)
        .gpu_blocks(a.c, hb)
        .gpu_threads(a.x);
    const LoopLevel block(a.part, a.c);
    // The group's scaled queries once per block in shared memory: inlined, every key's dot product
    // loaded them from global memory and scaled them again.
    a.q_tile.compute_at(block).gpu_threads(a.d);
    // The scores are stored (shared); each one's dot product accumulates in a register (qk at the
    // thread), not in shared memory, which could alias the queries and took a store per FMA.
    a.score.compute_at(block).reorder(a.j, a.hg).gpu_threads(a.j);
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
    a.qk.compute_at(a.score, a.j);
    // The chunk's max and sum over its keys: 32 lanes each take every 32nd key (rfactor), then one
    // thread per head combines the lanes: about 40 dependent steps where one thread took 256.
    constexpr int lanes = 32;
    for (Func f : {a.chunk_max, a.chunk_sum}) {
        RVar rjo("rjo"), rji("rji");
        Var u("u");
        Func per_lane = f.update().split(a.rj, rjo, rji, lanes, TailStrategy::GuardWithIf).rfactor(rji, u);
        per_lane.compute_at(block).reorder(u, a.hg).gpu_threads(u);
        per_lane.update().reorder(u, rjo, a.hg).gpu_threads(u);
        f.compute_at(block).gpu_threads(a.hg);
        f.update().gpu_threads(a.hg);
    }
    a.prob.compute_at(block).reorder(a.j, a.hg).gpu_threads(a.j);
    // PV stored per (head dim, head) in shared memory, each accumulated over the chunk's keys in a
    // register (pv at the thread) rather than in shared memory.
    a.chunk_out.compute_at(block).reorder(a.d, a.hg).gpu_threads(a.d);
    a.pv.compute_at(a.chunk_out, a.d);
    // A block per (head, KV head, sequence), a thread per head dim: at most 128 threads, where
    // threads over (head dim, head in group) reached 1024 for groups of 8.
    g.out.gpu_blocks(g.out.args()[1], hk, b).gpu_threads(g.out.args()[0]);
    const LoopLevel head(g.out, g.out.args()[0]);
    for (Func f : {a.merged_max, a.merged_sum, a.merged_out}) f.compute_at(head);
    a.weight.compute_inline();  // stored, it would need a global array per thread (one per chunk)
}

}  // namespace hattn::schedules::cuda
