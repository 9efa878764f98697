// Comparing kernel outputs with float64 references.
#pragma once

#include <cmath>
#include <vector>

#include "hattn/tensor.h"

namespace hattn::testing {

// ||out - ref|| / ||ref||, or +inf when out holds a NaN or Inf (so any bound rejects it).
inline double relative_l2(const Tensor &out, const std::vector<double> &ref) {
    if (static_cast<size_t>(out.size()) != ref.size()) return INFINITY;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double o = out.data()[i];
        if (!std::isfinite(o)) return INFINITY;
        diff += (o - ref[i]) * (o - ref[i]);
        norm += ref[i] * ref[i];
    }
    return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Against another float32 result (the same computation on another device, say).
inline double relative_l2(const Tensor &out, const Tensor &ref) {
    return relative_l2(out, std::vector<double>(ref.values().begin(), ref.values().end()));
}

}  // namespace hattn::testing
