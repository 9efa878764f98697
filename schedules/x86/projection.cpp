#include "generators/projection.h"
#include "schedules/cpu/projection_tiled.h"
#include "schedules/dispatch.h"
#include "schedules/x86/projection_bf16_pairs.h"

namespace hattn::schedules::x86 {

// AVX-512 has 32 vector registers: a 64-output x 6-row tile keeps 24 accumulators live beside the
// 4 W vectors and the broadcast x (6 broadcasts and 4 loads per 24 FMAs, where 2 vectors x 8 rows
// needed 10 per 16). AVX2 and SSE have 16: 3 vectors x 4 rows keeps 12 accumulators, the chains
// that an FMA unit of two pipes of latency 5 needs. docs/perf/log.md, "x86 projection tiles and
// blocks".
// bf16 pairs: 48 outputs x 8 rows, the same 24 accumulators (schedule_projection_bf16_pairs).
ProjectionTile projection_tile(const Halide::Target &t, bool bf16_pairs) {
    if (bf16_pairs) return {8, 48};
    if (t.has_feature(Halide::Target::AVX512)) return {6, 64};
    return {4, 3 * t.natural_vector_size<float>()};
}

// AVX2 blocks for a 32 KB L1d and a 512 KB L2: a 24 KB slice of a W panel (256 inputs) in L1,
// 256 KB of x (256 rows) in L2, blocks of 480 outputs. AVX-512 keeps the W slice at 32 KB (128
// inputs of 64 outputs); its blocks are sized by the same rule (with a 48 KB L1d and 2 MB L2 other
// blockings ran level: the tile, not the blocking, sets the rate there).
// The gemv's tile: 4 outputs x 4 rows (16 accumulators, 8 loads per 16 FMAs) where there are 32
// registers; 4 x 2 where there are 16 (8 accumulators beside 4 W vectors and one of x: 3 x 3
// leaves tails, 4 x 3 spills). docs/perf/log.md, "x86 projection tiles and blocks".
cpu::GemvTile gemv_tile(const Halide::Target &t) {
    return t.has_feature(Halide::Target::AVX512) ? cpu::GemvTile{4, 4} : cpu::GemvTile{4, 2};
}

void schedule(Projection &g, const Halide::Target &t) {
    if (g.gemv) return cpu::schedule_projection_gemv(g, t, gemv_tile(t));
    // Slices of 256 inputs ran faster than 128 (docs/perf/log.md, "bf16 pairs in the projection").
    if (g.bf16_pairs) return schedule_projection_bf16_pairs(g, t, {256, 240, 480});
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_projection_blocked(g, t, avx512 ? cpu::ProjectionBlocks{128, 240, 512}
                                                  : cpu::ProjectionBlocks{256, 256, 480});
}

}  // namespace hattn::schedules::x86
