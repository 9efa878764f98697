#include "schedules/cpu/cca.h"

#include "kernel_contract.h"

namespace hattn::schedules::cpu {

using namespace Halide;

void schedule_cca_qk_latent(CcaQkLatent &g, const Target &t, int tokens) {
    const int vec = t.natural_vector_size<float>();
    // A tile of channels reads at most this far past a group's last one (kernel_contract.h).
    _halide_user_assert(2 * vec <= kernel_contract::cca_grouped_padding_channels)
        << "cca: tiles of " << 2 * vec << " channels, wider than the weights' padding";
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var so("so"), si("si");
    // The grouped conv is a small GEMM per group: its output is stored whole (conv1_rows), and
    // computed in register tiles of 2 vectors of channels x `tokens` tokens (conv1 at the tile),
    // so each weight vector loaded feeds every token of the tile and the sums stay in registers
    // over the group's inputs and taps. (Was: one channel vector at a time, its sum loaded and
    // stored for every input channel and tap.)
    Var grp("grp"), dt("dt"), dv("dv"), st("st"), sr("sr");
    Func conv1_rows = g.conv1.in();
    conv1_rows.compute_root()
        .split(g.s, so, si, 4 * tokens, guard)
        .split(si, st, sr, tokens, guard)
        .split(g.d, dt, dv, 2 * vec, guard)
        .reorder(dv, sr, dt, st, grp, so, g.b)
        .vectorize(dv, vec, guard)
        .parallel(so);
    // Whole vectors of channels (the algorithm clamps those past the last) and at most `tokens`
    // rows: a tile of constant size whose sums live in registers, not in a heap buffer per tile.
    // The rows are not rounded up, so a decode step computes its one row only.
    g.conv1.compute_at(conv1_rows, dt)
        .bound_extent(g.d, 2 * vec)
        .split(g.d, dt, dv, vec, guard)
        .reorder(dv, dt, g.s)
        .vectorize(dv)
        .unroll(dt)
        .unroll(g.s);
    g.conv1.update()
        .split(g.d, dt, dv, vec, guard)
        .reorder(dv, dt, g.s, g.r1.y, g.r1.x)
        .vectorize(dv)
        .unroll(dt)
        .unroll(g.s);
    g.conv0.compute_at(conv1_rows, so).vectorize(g.c, vec, guard);
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
