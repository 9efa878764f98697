#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

// A first, simple mapping (tuning is the CUDA issue's work): one GPU thread per query row, which
// runs the chunk loop for its row with the chunk's scores in its own memory.
void schedule(AttentionPrefill &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    Var io("io"), ii("ii"), hb("hb");
    g.out.split(a.i, io, ii, a.T, TailStrategy::GuardWithIf)
        .reorder(a.d, a.hg, ii, io, a.hk, a.b)
        .fuse(a.hk, a.b, hb)
        .gpu_blocks(io, hb)
        .gpu_threads(ii);
    const LoopLevel row(g.out, ii);
    a.q_tile.compute_at(row);
    a.running.compute_at(row);
    const LoopLevel chunk(a.running, RVar(a.rc));
    for (Func f : {a.qk, a.score, a.chunk_max, a.prob, a.chunk_sum, a.pv, a.chunk_out}) {
        f.compute_at(chunk);
    }
}

// One block per (chunk, KV head, sequence), one thread per head of the group; then one thread per
// (head, sequence) merges the chunks.
void schedule(AttentionDecode &g, const Target &) {
    ChunkedAttention &a = *g.attention;
    const Var hk = g.out.args()[2], b = g.out.args()[3];
    Var hb("hb");
    a.part.compute_root()
        .reorder(a.x, a.qi, a.hg, a.c, a.qt, a.hk, a.b)
        .fuse(a.hk, a.b, hb)
        .gpu_blocks(a.c, hb)
        .gpu_threads(a.hg);
    const LoopLevel row(a.part, a.hg);
    for (Func f : {a.qk, a.score, a.chunk_max, a.prob, a.chunk_sum, a.pv, a.chunk_out}) {
        f.compute_at(row);
    }
    g.out.gpu_blocks(hk, b).gpu_threads(g.out.args()[1]);
    const LoopLevel head(g.out, g.out.args()[1]);
    for (Func f : {a.merged_max, a.weight, a.merged_sum, a.merged_out}) f.compute_at(head);
}

}  // namespace hattn::schedules::cuda
