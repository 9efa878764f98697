#include "schedules/cpu/rope.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_rope(Rope &g, const Target &t) {
    g.y.vectorize(g.d, t.natural_vector_size<float>(), TailStrategy::GuardWithIf).parallel(g.s, 8, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cpu
