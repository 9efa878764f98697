// Reductions split into lanes (rfactor) on the GPU.
#pragma once

#include <cmath>
#include <stdexcept>

#include "Halide.h"

namespace hattn::schedules::gpu {

// rfactor starts each lane of a reduction at its operation's identity: 0 for a sum, but -inf for
// a max, which no kernel may hold (Halide's fast-math codegen assumes no inf or NaN). A maximum's
// lanes start at `floor` instead: the algorithm's masked value, at or below where the maximum
// itself starts (the masked value, or an attention sink's score), so the result is the same and
// a lane that sees no element holds a finite value. Throws where `per_lane` is not the lanes of a
// max (Halide's internals, checked: a start other than -inf).
inline void start_lanes_at(Halide::Func per_lane, float floor) {
    std::vector<Halide::Expr> &start = per_lane.function().definition().values();
    const auto *identity = start.size() == 1 ? start[0].as<Halide::Internal::FloatImm>() : nullptr;
    if (!identity || !std::isinf(identity->value) || identity->value > 0) {
        throw std::logic_error("start_lanes_at: " + per_lane.name() + " is not the lanes of a max");
    }
    start[0] = Halide::Expr(floor);
}

}  // namespace hattn::schedules::gpu
