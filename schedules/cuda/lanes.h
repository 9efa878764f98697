// Reductions split into lanes (rfactor) on the GPU.
#pragma once

#include "Halide.h"

namespace hattn::schedules::cuda {

// rfactor starts each lane of a reduction at its operation's identity: 0 for a sum, but -inf for
// a max, which no kernel may hold (Halide's fast-math codegen assumes no inf or NaN). A maximum's
// lanes start at `floor` instead, the value the maximum itself starts from: the same result, and
// a lane that sees no element holds a finite value.
inline void start_lanes_at(Halide::Func per_lane, float floor) {
    per_lane.function().definition().values() = {Halide::Expr(floor)};
}

}  // namespace hattn::schedules::cuda
