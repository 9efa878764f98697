#include "schedules/cpu/dsa.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_dsa_index_scores(DsaIndexScores &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    g.score.vectorize(g.t, vec, TailStrategy::GuardWithIf).parallel(g.s);
    g.total.compute_at(g.score, g.s).vectorize(g.t, vec, TailStrategy::RoundUp);
    g.total.update().reorder(g.t, g.rh).vectorize(g.t, vec, TailStrategy::RoundUp);
    g.dot.compute_at(g.score, g.s).vectorize(g.t, vec, TailStrategy::RoundUp);
    g.dot.update().reorder(g.t, g.rd, g.h).vectorize(g.t, vec, TailStrategy::RoundUp);
}

void schedule_dsa_sparse_attention(DsaSparseAttention &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf;
    g.out.reorder(g.d, g.h, g.s, g.b).vectorize(g.d, vec, guard).parallel(g.s);
    const LoopLevel row(g.out, g.h);
    g.logit.compute_at(row).vectorize(g.n, vec, guard);
    g.logit.update().reorder(g.n, g.rd).vectorize(g.n, vec, guard);
    g.row_max.compute_at(row);
    g.prob.compute_at(row).vectorize(g.n, vec, guard);
    g.row_sum.compute_at(row);
    g.acc.compute_at(row).vectorize(g.d, vec, guard);
    g.acc.update().reorder(g.d, g.rn).vectorize(g.d, vec, guard);
}

}  // namespace hattn::schedules::cpu
