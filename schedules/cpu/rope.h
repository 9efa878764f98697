#pragma once

#include "generators/rope.h"

namespace hattn::schedules::cpu {

// Element-wise: vectorised over D, parallel over tokens.
void schedule_rope(Rope &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
