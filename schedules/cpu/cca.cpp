#include "schedules/cpu/cca.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_cca_qk_latent(CcaQkLatent &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var so("so"), si("si");
    g.conv1_w_t.compute_root().vectorize(g.d, vec, guard);
    g.conv1.compute_root()
        .split(g.s, so, si, 16, guard)
        .reorder(g.d, Var("grp"), si, so, g.b)
        .vectorize(g.d, vec, guard)
        .parallel(so);
    g.conv1.update()
        .split(g.s, so, si, 16, guard)
        .reorder(g.d, g.r1.y, g.r1.x, Var("grp"), si, so, g.b)
        .vectorize(g.d, vec, guard)
        .parallel(so);
    g.conv0.compute_at(g.conv1, so).vectorize(g.c, vec, guard);
    g.conv0.update().reorder(g.c, Var("e")).vectorize(g.c, vec, guard);

    for (Func out : {Func(g.q_out), Func(g.k_out)}) {
        out.reorder(g.d, g.h, g.s, g.b).vectorize(g.d, vec, guard).parallel(g.s, 8, guard);
    }
    g.q_norm.compute_at(g.q_out, g.s);
    g.k_norm.compute_at(g.k_out, g.s);
    g.mean_k.compute_at(g.k_out, g.s).vectorize(g.d, vec, guard);
    g.mean_k.update().vectorize(g.d, vec, guard);
}

}  // namespace hattn::schedules::cpu
