#include "schedules/cpu/round_values.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_round_values(RoundValues &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    Var block("block"), inner("inner");
    g.out.split(g.i, block, inner, 64 * vec, TailStrategy::GuardWithIf)
        .parallel(block)
        .vectorize(inner, vec, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cpu
