// A layer's activations in its dtype (spec/attention.md section 5): each kernel's result is rounded
// to the dtype where the layer stores it, once. The values stay in float32 buffers, rounded.
#pragma once

#include <optional>

#include "hattn/dtype.h"
#include "hattn/stored_tensor.h"
#include "hattn/tensor.h"

namespace hattn::detail {

// Rounds t's values to `dtype` in place (nothing for f32), with the round_to_bf16/f16 kernel on
// the current device.
void store_as(DType dtype, Tensor &t);

// x as the layer takes it, converted once on entry: x itself for f32; else a copy rounded to
// `dtype`, kept in `copy`.
const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy);

// A layer's input in any storage type (its StoredView calls), widened to float32 once; the call
// then converts it to its dtype as it does a Tensor. Throws Error, naming `what`, for int8 codes
// or a view that cannot be read.
Tensor widened_input(const StoredView &x, const char *what);

// A layer call over activations in a storage type: x widened once, and the output, which the layer
// rounded to `dtype` where it stored it, returned in that type (exactly).
template <typename Call>
StoredTensor in_dtype(DType dtype, const StoredView &x, const char *what, Call &&call) {
    return StoredTensor::rounded(dtype, call(widened_input(x, what)).view());
}

}  // namespace hattn::detail
