#include "schedules/cpu/projection_tiled.h"

namespace hattn::schedules::cpu {

using namespace Halide;

// Outputs are cut into panels of `vectors_per_row` vectors; each thread takes whole panels, packs
// that panel of W once (weight_t, transposed so the inner product loads contiguous vectors), and
// streams every row tile through it. The accumulator of one tile stays in registers: the row loop
// and the vector loop are unrolled inside the reduction over k.
void schedule_projection_tiled(Projection &g, const Target &t, ProjectionTile tile) {
    const int vec = t.natural_vector_size<float>();
    const int panel = vec * tile.vectors_per_row;
    Var oo("oo"), oi("oi"), ro("ro"), ri("ri"), ov("ov"), ovi("ovi");

    g.y.tile(g.o, g.r, oo, ro, oi, ri, panel, tile.rows, TailStrategy::GuardWithIf)
        .reorder(oi, ri, ro, oo)
        .vectorize(oi, vec, TailStrategy::GuardWithIf)
        .parallel(oo);

    g.weight_t.compute_at(g.y, oo).vectorize(g.o, vec);

    g.acc.compute_at(g.y, ro).vectorize(g.o, vec).unroll(g.r);
    g.acc.update()
        .reorder(g.o, g.r, g.k)
        .split(g.o, ov, ovi, vec)
        .vectorize(ovi)
        .unroll(ov)
        .unroll(g.r);
    g.acc.bound_extent(g.o, panel).bound_extent(g.r, tile.rows);
}

void schedule_projection_gemv(Projection &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    Var oo("oo"), oi("oi"), lane("lane");
    RVar ko("ko"), ki("ki");
    g.y.split(g.o, oo, oi, 32, TailStrategy::GuardWithIf).parallel(oo);
    g.acc.compute_at(g.y, oi);
    g.acc.update().split(g.k, ko, ki, vec, TailStrategy::GuardWithIf);
    Func lanes = g.acc.update().rfactor(ki, lane);
    lanes.compute_at(g.acc, g.r).vectorize(lane);
    lanes.update().reorder(lane, ko).vectorize(lane);
}

}  // namespace hattn::schedules::cpu
