#include "generators/projection.h"
#include "schedules/cpu/projection_tiled.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// NEON has 32 128-bit registers: a 4-vector x 4-row tile keeps 16 accumulators live.
ProjectionTile projection_tile(const Halide::Target &) { return {4, 16}; }

// The x86 AVX2 blocks (a 16 KB slice of a W panel in L1); not measured on an ARM machine.
void schedule(Projection &g, const Halide::Target &t) {
    if (g.gemv) return cpu::schedule_projection_gemv(g, t, cpu::GemvTile{4, 4});  // as AVX-512: 32 registers
    cpu::schedule_projection_blocked(g, t, cpu::ProjectionBlocks{256, 256, 480});
}

}  // namespace hattn::schedules::arm
