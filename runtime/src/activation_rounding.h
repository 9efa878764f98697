// A layer's activations in its dtype (spec/attention.md section 5): each kernel's result is rounded
// to the dtype where the layer stores it, once. The values stay in float32 buffers, rounded.
#pragma once

#include <optional>

#include "hattn/dtype.h"
#include "hattn/tensor.h"

namespace hattn::detail {

// Rounds t's values to `dtype` in place (nothing for f32), with the round_to_bf16/f16 kernel on
// the current device.
void store_as(DType dtype, Tensor &t);

// x as the layer takes it, converted once on entry: x itself for f32; else a copy rounded to
// `dtype`, kept in `copy`.
const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy);

}  // namespace hattn::detail
