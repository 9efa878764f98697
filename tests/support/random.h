// Seeded random inputs for tests: every run sees the same values, and a failure reproduces.
#pragma once

#include <cstdint>
#include <random>

#include "hattn/tensor.h"

namespace hattn::testing {

// A tensor of uniform values in [-1, 1) from a generator seeded with `seed`.
inline Tensor random_tensor(const Shape &shape, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    Tensor t(shape);
    for (float &v : t.values()) v = uniform(rng);
    return t;
}

}  // namespace hattn::testing
