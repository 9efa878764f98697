#include "generators/strided_copy.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// A block of 32 x 8 threads per tile of (x, y), a warp along a contiguous row (coalesced); every
// other index fused into the grid's x dimension, which is the one that takes more than 65,535
// blocks (a KV cache's tokens can be the z dim).
void schedule(StridedCopy &g, const Target &) {
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), tile("tile"), tile_z("tile_z"), block("block");
    g.out.split(g.x, xo, xi, 32, TailStrategy::GuardWithIf)
        .split(g.y, yo, yi, 8, TailStrategy::GuardWithIf)
        .reorder(xi, yi, xo, yo, g.z, g.w)
        .fuse(xo, yo, tile)
        .fuse(tile, g.z, tile_z)
        .fuse(tile_z, g.w, block)
        .gpu_blocks(block)
        .gpu_threads(xi, yi);
}

}  // namespace hattn::schedules::gpu
