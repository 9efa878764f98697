#include "generators/cca/qk_latent.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// A first mapping: the grouped conv one thread per (channel, token); the outputs one thread per
// element of a head, a block per (head, token). Tiles guard their tails: with ShiftInwards a tile
// wider than a small extent (few groups) would shift below zero, outside the weights.
void schedule(CcaQkLatent &g, const Target &) {
    Var grp("grp"), gs("gs"), hs("hs");
    g.conv1.compute_root().fuse(grp, g.s, gs).gpu_blocks(gs, g.b).gpu_threads(g.d);
    g.conv1.update().fuse(grp, g.s, gs).gpu_blocks(gs, g.b).gpu_threads(g.d);
    const TailStrategy guard = TailStrategy::GuardWithIf;
    g.conv0.compute_root().gpu_tile(g.c, g.e, Var("cb"), Var("eb"), Var("ct"), Var("et"), 32, 4, guard);
    g.conv0.update().gpu_tile(g.c, g.e, Var("cb"), Var("eb"), Var("ct"), Var("et"), 32, 4, guard);
    for (Func out : {Func(g.q_out), Func(g.k_out)}) {
        out.fuse(g.h, g.s, hs).gpu_blocks(hs, g.b).gpu_threads(g.d);
    }
    g.q_norm.compute_at(g.q_out, g.d);
    g.k_norm.compute_at(g.k_out, g.d);
    g.mean_k.compute_at(g.k_out, g.d);
}

}  // namespace hattn::schedules::gpu
