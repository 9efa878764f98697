#include "generators/projection.h"
#include "schedules/cpu/projection_tiled.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// AVX-512 has 32 vector registers: a 4 x 6 tile keeps 24 accumulators live beside the 4 W vectors
// and the broadcast x (6 broadcasts and 4 loads per 24 FMAs; 2 x 8 needed 10 per 16 and ran at
// 80-84% of OpenBLAS sgemm, 4 x 6 at 97%). AVX2 and SSE have 16: 2 x 4 keeps 8 accumulators.
void schedule(Projection &g, const Halide::Target &t) {
    if (g.gemv) return cpu::schedule_projection_gemv(g, t);
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_projection_tiled(g, t, avx512 ? cpu::ProjectionTile{4, 6} : cpu::ProjectionTile{2, 4});
}

}  // namespace hattn::schedules::x86
