// The dense projection kernel: y = x W^T + b, clamped to [-clip, clip] where clip > 0.
#pragma once

#include "hattn/tensor.h"

namespace hattn {

// x [..., in] and y [..., out] share their leading (row) dimensions; each row's values are
// contiguous and the rows one stride apart (contiguous tensors, or slices such as one head's of
// [rows, H, in], read and written in place), y's rows overlapping neither each other nor x, the
// weight or the bias (y = x in place would read rows already written); weight is [out, in] as
// safetensors stores it, in f32, bf16 or f16; bias is [out] or null for none; clip 0 (none) or
// positive and finite. Shapes are checked first and a mismatch throws Error naming both shapes.
// bf16 weights may multiply x rounded to bf16 (bf16 pairs, where the CPU has them: see
// Bf16DotForm), as a bf16 layer's x is; every other product is float32.
void project(const ConstTensorView &x, const StoredView &weight, const ConstTensorView *bias,
             const TensorView &y, float clip = 0.0f);

}  // namespace hattn
