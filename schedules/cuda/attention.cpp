#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

namespace {

// Block tiles (a query tile of T > 1): a block owns T query rows of one head and walks the key
// chunks (C keys) in step. Per chunk the block stages the K tile in shared memory, computes the
// T x C scores in register tiles of 2 rows x 2 keys (each step of the head-dim loop loads two
// queries and two keys for four FMAs; a thread per score loaded two words per FMA), the row
// statistics and probabilities, then rescales the block's running state (shared memory) and adds
// the chunk's PV to it, one element per step, V read straight from global memory.
//
// Every global load and shared access is laid out for the warp, not the thread: on the H200 the
// L1's wavefronts bounded the first version (a thread owning eight consecutive head dims made each
// V load touch four lines and each running-state access an 8-way bank conflict; a thread loading
// its own K row made each load touch 32 lines). Here the 16 threads of a row take consecutive head
// dims (d = 16 dv + dt), the K tile is loaded the same way and stored key-fastest with a key of
// padding per head dim, so that the score threads' reads (consecutive keys) are conflict-free and
// its stores at most 2-way (a warp stores 16 head dims of 2 keys), and the scores are padded
// likewise for the row statistics (a thread per row).
//
// Shared memory, at most 48 KB a block (Halide 14's CUDA runtime sets no larger carve-out): the
// running (output, max, sum) tuple 3 T D floats, the K tile (C + 1) D, the scores and probabilities
// 2 T C. With T = 16 and C = 32 that is 45 KB at D = 128. The queries are read from global memory
// inside the QK loop (staging them would take the last 8 KB).
void schedule_block_tiles(AttentionPrefill &g) {
    ChunkedAttention &a = *g.attention;
    // 16 threads across the head dim, each taking every 16th, keep a block at 16 x 16 = 256
    // threads, so that it launches whatever registers the driver's PTX compiler gives a thread
    // (up to 255; Halide 14 states no launch bounds, and 512 threads would allow only 128).
    const int dim_threads = 16;
    const int score_rows = 2, score_keys = 2;  // a thread's register tile of scores
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var io("io"), ii("ii"), hb("hb"), dt("dt"), dv("dv"), qo("qo"), qv("qv"), jo("jo"), jv("jv");
    auto map_blocks = [&](Stage s) {
        s.split(a.i, io, ii, a.T, guard)
            .split(a.d, dv, dt, dim_threads, guard)
            .reorder(dv, dt, ii, io, a.hg, a.hk, a.b)
            .fuse(a.hk, a.b, hb)
            .gpu_blocks(io, a.hg, hb)
            .gpu_threads(dt, ii);
    };
    for (int D : {32, 64, 128}) map_blocks(g.out.specialize(a.head_dim == D));
    map_blocks(g.out);

    a.running.compute_at(g.out, io)
        .split(a.d, dv, dt, dim_threads, guard)
        .reorder(dv, dt, a.qi)
        .gpu_threads(dt, a.qi);
    a.running.update()
        .split(a.d, dv, dt, dim_threads, guard)
        .reorder(dv, dt, a.qi, a.rc)
        .gpu_threads(dt, a.qi);
    const LoopLevel chunk(a.running, RVar(a.rc));
    // 16 head dims by 16 keys of threads, two keys each (a block's thread dims are the maxima of
    // its stages', so 32 keys would launch 32 x 16).
    Var dq("dq"), jh("jh"), jy("jy");
    a.k_panel.compute_at(chunk)
        .reorder_storage(a.j, a.d)
        .align_storage(a.j, a.C + 1)
        .split(a.d, dq, dt, dim_threads, guard)
        .split(a.j, jh, jy, 16, guard)
        .reorder(dq, jh, dt, jy)
        .gpu_threads(dt, jy)
        .unroll(jh);
    // Its loads all in flight together where the head dim is known (the generic one's loop over
    // head-dim groups has no constant extent to unroll).
    for (int D : {32, 64, 128}) a.k_panel.specialize(a.head_dim == D).unroll(dq);
    a.v_panel.compute_inline();
    a.q_tile.compute_inline();
    // Stored key-fastest, each row padded by one key (storage only), so that the threads of the
    // row statistics and the probabilities (one per row, at the same key) hit 16 different banks
    // rather than one.
    a.score.compute_at(chunk)
        .reorder_storage(a.j, a.qi)
        .align_storage(a.j, a.C + 1)
        .split(a.qi, qo, qv, score_rows, guard)
        .split(a.j, jo, jv, score_keys, guard)
        .reorder(qv, jv, jo, qo)
        .gpu_threads(jo, qo)
        .unroll(qv)
        .unroll(jv);
    a.score.specialize(a.has_softcap);  // the branch without soft-capping computes no tanh
    // Every loop that loads is unrolled (by 4 to 8), so that several loads are in flight: a GPU
    // thread waits at a load's first use, one load per step made each loop latency-bound.
    RVar rdo("rdo"), rdi("rdi"), rjo("rjo"), rji("rji");
    a.qk.compute_at(a.score, jo).unroll(a.qi).unroll(a.j);
    a.qk.update()
        .split(a.rd, rdo, rdi, 4, guard)
        .reorder(a.qi, a.j, rdi, rdo)
        .unroll(a.qi)
        .unroll(a.j)
        .unroll(rdi);
    a.chunk_max.compute_at(chunk).gpu_threads(a.qi);
    a.chunk_max.update().gpu_threads(a.qi).unroll(a.rj, 8);
    a.prob.compute_at(chunk)
        .split(a.j, jo, jv, score_keys, guard)
        .reorder(jv, a.qi, jo)
        .gpu_threads(a.qi, jo)
        .unroll(jv);
    a.chunk_sum.compute_at(chunk).gpu_threads(a.qi);
    a.chunk_sum.update().gpu_threads(a.qi).unroll(a.rj, 8);
    a.chunk_out.compute_inline();
    // PV one element at a time, inside the state's update: its sum over the chunk's keys in a
    // register, each step loading a probability (a broadcast) and a V value (16 threads, 64
    // contiguous bytes).
    a.pv.compute_at(a.running, dv).store_in(MemoryType::Register);
    a.pv.update().split(a.rj, rjo, rji, 8, guard).unroll(rji);
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

// A decode block is one chunk of keys, its scores computed 32 keys at a time (see below).
int decode_key_chunk(const Target &) { return 64; }

// Split-KV: one block per (chunk, KV head, sequence) computes the chunk's partial result for the
// whole head group. The keys are scored 32 at a time: each such K tile is staged in shared memory
// by a thread per head dim (coalesced reads, its 32 loads unrolled so that they are in flight
// together), stored key-fastest and padded by one key per head dim, so that both those stores and
// the score threads' reads (a thread per key) hit distinct banks; 33 KB at D = 256. (A thread per
// key read its own K row from global memory before, 32 lines per warp load and once per head.)
// Thread loops over the keys (QK, softmax) and over the head dim (PV, V read from global memory,
// consecutive threads reading consecutive floats); the queries and scores stay in shared memory.
// Then one block per (head, KV head, sequence), a thread per head dim, merges the chunks.
void schedule(AttentionDecode &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    const Var hk = g.out.args()[2], b = g.out.args()[3];
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const int tile_keys = 32;
    Var hb("hb"), jo("jo"), ji("ji"), hgo("hgo"), hgi("hgi");
    // A block takes up to 8 heads of the group (4 past D = 128), so that a large group (MQA's
    // dozens of heads) stays within 48 KB of shared memory and 1024 threads: about 31 KB and 256
    // threads at D = 128, 44 KB at D = 256. A larger group's blocks stage the same K tile, mostly from L2.
    a.part.compute_root();
    auto map_chunks = [&](Stage s, int heads_per_block) {
        s.split(a.hg, hgo, hgi, heads_per_block, guard)
            .reorder(a.x, a.qi, hgi, a.c, hgo, a.qt, a.hk, a.b)
            .fuse(a.hk, a.b, hb)
            .gpu_blocks(a.c, hgo, hb)
            .gpu_threads(a.x);
    };
    map_chunks(a.part.specialize(a.head_dim <= 128), 8);
    map_chunks(a.part, 4);
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
    a.pv.update().unroll(a.rj, 8);  // eight V loads in flight
    // A block per (head, KV head, sequence), a thread per head dim: at most 256 threads (the
    // runtime refuses wider heads), where threads over (head dim, head in group) reached 1024 for
    // groups of 8.
    g.out.gpu_blocks(g.out.args()[1], hk, b).gpu_threads(g.out.args()[0]);
    const LoopLevel head(g.out, g.out.args()[0]);
    // Each thread walks every chunk three times; eight chunks per step keep eight loads in flight
    // (one at a time, each waited on the L2's latency, 512 chunks at T = 32768).
    constexpr int chunks_per_step = 8;
    for (Func f : {a.merged_max, a.merged_sum, a.merged_out}) {
        RVar rco("rco"), rci("rci");
        f.compute_at(head);
        f.update().split(a.rc, rco, rci, chunks_per_step, guard).unroll(rci);
    }
    a.weight.compute_inline();  // stored, it would need a global array per thread (one per chunk)
}

}  // namespace hattn::schedules::cuda
