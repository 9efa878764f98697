#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

namespace {

// One block per (chunk, query tile, KV head, sequence); one thread per query row of the tile,
// which keeps its strip of scores for the chunk. The merge runs one thread per query and head.
void schedule_chunked(ChunkedAttention &a, Func out, Var out_query, Var out_batch) {
    Var tile("tile"), hb("hb"), io("io"), ii("ii");
    a.part.compute_root()
        .reorder(a.x, a.hg, a.qi, a.c, a.qt, a.hk, a.b)
        .fuse(a.hk, a.b, hb)
        .fuse(a.qt, hb, tile)
        .gpu_blocks(a.c, tile)
        .gpu_threads(a.qi);
    const LoopLevel row(a.part, a.qi);
    for (Func f : {a.score, a.chunk_max, a.prob, a.chunk_sum, a.chunk_out}) f.compute_at(row);

    out.split(out_query, io, ii, 32, TailStrategy::GuardWithIf).gpu_blocks(io, out_batch).gpu_threads(ii);
    const LoopLevel query(out, ii);
    for (Func f : {a.merged_max, a.weight, a.merged_sum, a.merged_out}) f.compute_at(query);
}

}  // namespace

void schedule(AttentionPrefill &g, const Target &) {
    schedule_chunked(*g.attention, g.out, g.attention->i, g.attention->b);
}

void schedule(AttentionDecode &g, const Target &) {
    const Var h = g.out.args()[1], b = g.out.args()[2];
    schedule_chunked(*g.attention, g.out, h, b);
}

}  // namespace hattn::schedules::cuda
