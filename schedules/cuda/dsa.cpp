#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

// A first mapping: one thread per (key, query) score; one thread per (head, query) row.
void schedule(DsaIndexScores &g, const Target &) {
    Var tb("tb"), tt("tt");
    g.score.split(g.t, tb, tt, 64, TailStrategy::GuardWithIf).gpu_blocks(tb, g.s, g.b).gpu_threads(tt);
    g.total.compute_at(g.score, tt);
    g.dot.compute_at(g.score, tt);
}

void schedule(DsaSparseAttention &g, const Target &) {
    g.out.reorder(g.d, g.h, g.s, g.b).gpu_blocks(g.s, g.b).gpu_threads(g.h);
    const LoopLevel row(g.out, g.h);
    for (Func f : {g.logit, g.row_max, g.prob, g.row_sum, g.acc}) f.compute_at(row);
}

}  // namespace hattn::schedules::cuda
