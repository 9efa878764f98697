#pragma once

#include "generators/row_norm.h"

namespace hattn::schedules::cpu {

// Rows in parallel; per row the two sums, then the vectorised scale.
void schedule_row_norm(RowNorm &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
