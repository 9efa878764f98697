// The CPU projection schedules shared by x86 and ARM; each family picks the tile and the blocks.
#pragma once

#include <optional>

#include "generators/projection.h"

namespace hattn::schedules::cpu {

// Cache blocks around the register tile (the generator's row_tile x output_tile): a slice of
// `k` inputs of one panel of W stays in L1 while it meets every row tile of a block of `rows`
// rows (a slice of packed x that stays in L2); a thread owns a block of `rows` x `outputs`.
// `rows` is a multiple of the row tile and `outputs` of the output tile.
struct ProjectionBlocks {
    int k, rows, outputs;
};

void schedule_projection_blocked(Projection &g, const Halide::Target &t, ProjectionBlocks blocks);

// y in thread blocks of blocks.rows x blocks.outputs (whole register tiles, checked), their outputs
// in `vec`-lane vectors: returns the blocks' Var, which runs in parallel.
Halide::Var schedule_projection_blocks(Projection &g, int vec, ProjectionBlocks blocks);

// The blocked GEMM's sums, for y's thread `block` (the float32 GEMM's and x86's bf16 pairs'): acc
// per block, rounded out to whole register tiles; `step` (k, or the bf16 pairs' words) in slices of
// `k_slice`, each slice's products summed in a register tile of `vec`-lane vectors, then added to
// acc. `pair`: the bf16 pair, innermost and vectorised atomically (a VectorReduce: vdpbf16ps).
void schedule_projection_sums(Projection &g, const Halide::Var &block, int vec, const Halide::RVar &step,
                              int k_slice, const std::optional<Halide::RVar> &pair);

// The few-rows (gemv) variant: W rows streamed as stored, each dot product split across vector
// lanes and summed at the end; parallel over outputs. Its register tile: `outputs` W rows meet
// `rows` rows of x, one vector accumulator each.
struct GemvTile {
    int outputs, rows;
};

void schedule_projection_gemv(Projection &g, const Halide::Target &t, GemvTile tile);

}  // namespace hattn::schedules::cpu
