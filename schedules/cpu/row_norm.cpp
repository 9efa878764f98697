#include "schedules/cpu/row_norm.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_row_norm(RowNorm &g, const Target &t) {
    g.y.vectorize(g.i, t.natural_vector_size<float>(), TailStrategy::GuardWithIf)
        .parallel(g.r, 16, TailStrategy::GuardWithIf);
    g.mean.compute_at(g.y, g.r);
    g.spread.compute_at(g.y, g.r);
}

}  // namespace hattn::schedules::cpu
