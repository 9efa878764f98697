#pragma once

#include "generators/strided_copy.h"

namespace hattn::schedules::cpu {

// Rows (y, z, w) in parallel, each a vector loop. (CPU copies run on the host, tensor.cpp: this
// variant exists for the forced-variant tests and for symmetry with the GPU one.)
void schedule_strided_copy(StridedCopy &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
