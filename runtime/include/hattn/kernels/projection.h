// The dense projection kernel: y = x W^T + b.
#pragma once

#include "hattn/tensor.h"

namespace hattn {

// x [..., in] and y [..., out] share their leading (row) dimensions and are contiguous; weight is
// [out, in] as safetensors stores it; bias is [out] or null for none. Shapes are checked first and a
// mismatch throws Error naming both shapes.
void project(const ConstTensorView &x, const ConstTensorView &weight, const ConstTensorView *bias,
             const TensorView &y);

}  // namespace hattn
