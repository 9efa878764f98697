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

}  // namespace hattn::schedules::cpu
