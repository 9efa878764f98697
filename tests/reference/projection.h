// Float64 reference of the dense projection, written as plainly as possible.
#pragma once

#include <algorithm>
#include <vector>

#include "hattn/tensor.h"

namespace hattn::reference {

// y[r, o] = sum_k x[r, k] W[o, k] + b[o], in double, clamped to [-clip, clip] where clip > 0. x is
// [rows, in] (leading dims flattened).
inline std::vector<double> projection(const Tensor &x, const Tensor &weight, const Tensor *bias, double clip = 0) {
    const int64_t out = weight.dim(0), in = weight.dim(1), rows = x.size() / in;
    std::vector<double> y(rows * out);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t o = 0; o < out; o++) {
            double sum = bias ? bias->data()[o] : 0.0;
            for (int64_t k = 0; k < in; k++) {
                sum += double(x.data()[r * in + k]) * double(weight.data()[o * in + k]);
            }
            y[r * out + o] = clip > 0 ? std::clamp(sum, -clip, clip) : sum;
        }
    }
    return y;
}

}  // namespace hattn::reference
