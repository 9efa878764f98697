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

// Rows [..., width] of t as an int8 cache stores them (spec/attention.md section 5): each row's
// groups of `group` values (the last may be shorter) quantised to codes and a scale, read back in
// place. For layers whose int8 state is held as float32 values.
void store_as_int8_groups(Tensor &t, int64_t width, int64_t group);

// x as the layer takes it, converted once on entry: x itself for f32; else a copy rounded to
// `dtype`, kept in `copy`.
const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy);

}  // namespace hattn::detail
