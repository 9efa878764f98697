#include "generators/projection.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

// One block computes a 32 x 8 tile of outputs, one thread per output. The reduction over k runs in
// slices of 32: each slice of x and of W is staged into shared memory by the whole block, then every
// thread accumulates from shared memory. The accumulators live in registers.
void schedule(Projection &g, const Target &) {
    constexpr int tile_o = 32, tile_r = 8, slice = 32;
    Var ob("ob"), rb("rb"), ot("ot"), rt("rt");
    RVar ko("ko"), ki("ki");

    g.y.gpu_tile(g.o, g.r, ob, rb, ot, rt, tile_o, tile_r, TailStrategy::GuardWithIf);

    g.acc.compute_at(g.y, ob).gpu_threads(g.o, g.r);
    g.acc.update()
        .split(g.k, ko, ki, slice, TailStrategy::GuardWithIf)
        .reorder(ki, g.o, g.r, ko)
        .gpu_threads(g.o, g.r);
    g.acc.bound_extent(g.o, tile_o).bound_extent(g.r, tile_r);

    g.x_rows.compute_at(g.acc, ko).store_in(MemoryType::GPUShared).gpu_threads(g.x_rows.args()[0], g.r);
    g.weight_t.compute_at(g.acc, ko).store_in(MemoryType::GPUShared).gpu_threads(g.o, g.weight_t.args()[1]);
}

}  // namespace hattn::schedules::cuda
