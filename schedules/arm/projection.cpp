#include "generators/projection.h"
#include "schedules/cpu/projection_tiled.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// NEON has 32 128-bit registers: a 4-vector x 4-row tile keeps 16 accumulators live.
void schedule(Projection &g, const Halide::Target &t) {
    if (g.gemv) return cpu::schedule_projection_gemv(g, t);
    cpu::schedule_projection_tiled(g, t, cpu::ProjectionTile{4, 4});
}

}  // namespace hattn::schedules::arm
