#include "generators/rope.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// One thread per element of a head, one block per (head, token) pair group.
void schedule(Rope &g, const Target &) {
    Var hs("hs");
    g.y.fuse(g.h, g.s, hs).gpu_blocks(hs, g.b).gpu_threads(g.d);
}

}  // namespace hattn::schedules::gpu
