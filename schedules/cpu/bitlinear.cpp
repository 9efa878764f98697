#include "schedules/cpu/bitlinear.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_bitlinear(BitLinear &g, const Target &, BitLinearLanes step) {
    // A step of packed bytes meets as many activations per code position s (the byte's 2-bit
    // field); each lane sums step.products byte products, the grouping of the target's
    // dot-product instruction, so its results accumulate without shuffles. Each s has lanes of its
    // own, so the four products of a vector of bytes are independent chains; all of them are summed
    // once per output, not once per step.
    RVar po("po"), pi("pi"), pg("pg"), pq("pq");
    Var lane("lane"), field("field");
    g.xq_by_code.compute_root().parallel(g.r).vectorize(g.p, step.bytes);
    // Tasks of 64 outputs: with 8, a decode step spent half its time handing out tasks.
    g.y.reorder(g.r, g.o).parallel(g.o, 64, TailStrategy::GuardWithIf);
    g.dot.compute_at(g.y, g.o);
    g.dot.update().split(g.rk.x, po, pi, step.bytes).split(pi, pg, pq, step.products);
    Func lanes = g.dot.update().rfactor({{pg, lane}, {g.rk.y, field}});
    g.dot.update().atomic().vectorize(pg).vectorize(g.rk.y);
    lanes.compute_at(g.dot, g.o).reorder_storage(lane, field, g.o, g.r).vectorize(lane).unroll(field);
    lanes.update().reorder(pq, lane, field, po).atomic().vectorize(pq).vectorize(lane).unroll(field);
}

void schedule_bitlinear_quantize(BitLinearQuantize &g, const Target &t) {
    const int lanes = t.natural_vector_size<float>();
    for (Func f : {g.peak, g.sum}) {
        f.compute_root().parallel(g.r);
        f.update().parallel(g.r).atomic().vectorize(g.rk, lanes);
    }
    g.xq.parallel(g.r).vectorize(g.k, 4 * lanes, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cpu
