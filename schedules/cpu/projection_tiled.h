// The CPU projection schedules shared by x86 and ARM; each family picks the tile and the blocks.
#pragma once

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

// The few-rows (gemv) variant: W rows streamed as stored, each dot product split across vector
// lanes and summed at the end; parallel over outputs. Its register tile: `outputs` W rows meet
// `rows` rows of x, one vector accumulator each.
struct GemvTile {
    int outputs, rows;
};

void schedule_projection_gemv(Projection &g, const Halide::Target &t, GemvTile tile);

}  // namespace hattn::schedules::cpu
