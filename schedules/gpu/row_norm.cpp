#include "generators/row_norm.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// One block per row; its sums run in one thread, the scale across threads.
void schedule(RowNorm &g, const Target &) {
    Var io("io"), ii("ii");
    g.y.split(g.i, io, ii, 128, TailStrategy::GuardWithIf).reorder(ii, io, g.r).gpu_blocks(g.r).gpu_threads(ii);
    g.mean.compute_at(g.y, g.r);
    g.spread.compute_at(g.y, g.r);
}

}  // namespace hattn::schedules::gpu
