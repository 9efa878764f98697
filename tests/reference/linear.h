// Float64 reference of a linear projection on row-major rows.
#pragma once

#include <optional>
#include <vector>

#include "hattn/tensor.h"

namespace hattn::reference {

// y[r, o] = sum_k x[r, k] W[o, k] + b[o] for `rows` rows of x.
inline std::vector<double> linear(const std::vector<double> &x, int64_t rows, const Tensor &w,
                                  const std::optional<Tensor> &b) {
    const int64_t out = w.dim(0), in = w.dim(1);
    std::vector<double> y(rows * out);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            double s = b ? b->data()[o] : 0.0;
            for (int64_t k = 0; k < in; k++) s += x[r * in + k] * w.data()[o * in + k];
            y[r * out + o] = s;
        }
    return y;
}

}  // namespace hattn::reference
