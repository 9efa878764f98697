#include "schedules/x86/projection_bf16_pairs.h"

namespace hattn::schedules::x86 {

using namespace Halide;

// The blocked GEMM's loop nest (cpu::schedule_projection_blocked), its products in bf16 pairs:
// within a register tile each step multiplies a word of x's two bf16 values, broadcast, by 16
// outputs' word pairs of W and adds the pairs' sums into 16 float32 lanes (the pair vectorised
// atomically: a VectorReduce, which Halide emits as vdpbf16ps). The packed W has the pair
// innermost, so a step's 32 bf16 weights are one 512-bit load.
// No 16-bit element is loaded alone anywhere: Halide compiles this target for LLVM's
// sapphirerapids CPU, whose 16-bit loads use AVX512-FP16's vmovw, which Zen 4 and 5 lack
// although they run this target. W is packed from 32-bit words (two weights each) and x from
// float32 values; the assembly test forbids FP16 instructions. The panels are 48 outputs wide
// (projection_tile), as 64-output ones left a 16-bit gather (docs/perf/log.md, "bf16 pairs in
// the projection").
void schedule_projection_bf16_pairs(Projection &g, const Target &t, cpu::ProjectionBlocks blocks) {
    const int vec = 16;  // a vdpbf16ps's float32 lanes
    if (blocks.k % 2 != 0) throw CompileError("projection (bf16 pairs): a slice of k must be whole pairs");
    const Var block = cpu::schedule_projection_blocks(g, vec, blocks);

    const std::vector<Var> x_args = g.x_tiles.args(), w_args = g.weight_panels.args();
    // x: a word's pair and a tile's rows, 16 lanes converted at once (vcvtneps2bf16).
    g.x_tiles.compute_root()
        .bound_extent(x_args[0], 2)
        .bound_extent(x_args[1], g.row_tile)
        .reorder(x_args[0], x_args[1], x_args[2], x_args[3])
        .vectorize(x_args[0])
        .vectorize(x_args[1])
        .parallel(x_args[3]);
    // W: each word split into its pair as 16 outputs' words are read (a transposing read of
    // 32-bit words), stored as 32 interleaved bf16 values.
    g.weight_panels.compute_root()
        .bound_extent(w_args[0], 2)
        .bound_extent(w_args[1], g.output_tile)
        .unroll(w_args[0])
        .vectorize(w_args[1], vec)
        .parallel(w_args[3]);

    cpu::schedule_projection_sums(g, block, vec, g.k.y, blocks.k / 2, g.k.x);
}

}  // namespace hattn::schedules::x86
