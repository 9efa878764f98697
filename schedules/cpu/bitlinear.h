#pragma once

#include "generators/bitlinear.h"

namespace hattn::schedules::cpu {

// Parallel over outputs; per output, the weight row is unpacked once and every row's dot product
// is a vectorised reduction over k (atomic), which the backends lower to their dot-product units.
void schedule_bitlinear(BitLinear &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
