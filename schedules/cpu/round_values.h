#pragma once

#include "generators/round_values.h"

namespace hattn::schedules::cpu {

// Vectors of the natural width, in parallel blocks of 64 of them.
void schedule_round_values(RoundValues &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
