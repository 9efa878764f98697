// The register-tiled CPU projection schedule shared by x86 and ARM; each family picks the tile.
#pragma once

#include "generators/projection.h"

namespace hattn::schedules::cpu {

struct ProjectionTile {
    int vectors_per_row;  // output columns per tile, in vectors of the target's natural width
    int rows;             // rows per register tile
};

void schedule_projection_tiled(Projection &g, const Halide::Target &t, ProjectionTile tile);

// The few-rows (gemv) variant: W rows streamed as stored, each dot product split across vector
// lanes and summed at the end; parallel over outputs.
void schedule_projection_gemv(Projection &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
