// Seeded random inputs for tests: every run sees the same values, and a failure reproduces.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "hattn/tensor.h"

namespace hattn::testing {

// A tensor of uniform values in [-1, 1) from a generator seeded with `seed`.
inline Tensor random_tensor(const Shape &shape, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(element_count(shape));
    for (float &v : values) v = uniform(rng);
    return Tensor(shape, std::move(values));
}

}  // namespace hattn::testing
