#include "schedules/cpu/bitlinear.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_bitlinear(BitLinear &g, const Target &) {
    RVar ko("ko"), ki("ki");
    g.y.parallel(g.o, 8, TailStrategy::GuardWithIf);
    g.code.compute_at(g.y, g.o).vectorize(g.k, BitLinear::k_multiple);
    g.dot.compute_at(g.y, g.o);
    g.dot.update().split(g.rk, ko, ki, BitLinear::k_multiple).atomic().vectorize(ki);
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
