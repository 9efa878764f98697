#include "schedules/cpu/strided_copy.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_strided_copy(StridedCopy &g, const Target &t) {
    Var yz("yz"), rows("rows");
    g.out.fuse(g.y, g.z, yz)
        .fuse(yz, g.w, rows)
        .parallel(rows, 64, TailStrategy::GuardWithIf)
        .vectorize(g.x, t.natural_vector_size<float>(), TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cpu
