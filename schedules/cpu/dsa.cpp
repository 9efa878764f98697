#include "schedules/cpu/dsa.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_dsa_index_scores(DsaIndexScores &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    g.score.vectorize(g.t, vec, TailStrategy::GuardWithIf).parallel(g.s);
    g.total.compute_at(g.score, g.s).vectorize(g.t, vec, TailStrategy::RoundUp);
    g.total.update().reorder(g.t, g.rh).vectorize(g.t, vec, TailStrategy::RoundUp);
    // Each dot product reads one contiguous key row: vector lanes along it (rfactor), summed at the
    // end in a fixed order that does not depend on how many queries or keys there are.
    RVar rdo("rdo"), rdi("rdi");
    Var lane("lane");
    g.dot.compute_at(g.score, g.s);
    g.dot.update().split(g.rd, rdo, rdi, vec, TailStrategy::GuardWithIf);
    Func lanes = g.dot.update().rfactor(rdi, lane);
    lanes.compute_at(g.dot, g.t).vectorize(lane);
    lanes.update().reorder(lane, rdo).vectorize(lane);
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
