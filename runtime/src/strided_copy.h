// Device copies of strided views in one kernel launch (the strided_copy kernel), where Halide's
// buffer copy issues a memcpy per contiguous run. copy_on_device (device_residency.h) uses it.
#pragma once

#include <optional>
#include <utility>

#include "HalideBuffer.h"
#include "hattn/tensor.h"

namespace hattn::detail {

// src and dst (same shape) as the strided_copy kernel takes them: 4 dims, innermost first, the
// views' dims merged where both are contiguous across them, padded with extent-1 dims. None where
// the copy is one contiguous run in both views (one memcpy does it), more than 4 dims remain, an
// innermost stride is not 1, or the spans of memory the views cover overlap.
std::optional<std::pair<Halide::Runtime::Buffer<float>, Halide::Runtime::Buffer<float>>> copy_kernel_buffers(
    const ConstTensorView &src, const TensorView &dst);
// The same for the views' Halide buffers (detail::halide_buffer), where the caller has them.
std::optional<std::pair<Halide::Runtime::Buffer<float>, Halide::Runtime::Buffer<float>>> copy_kernel_buffers(
    const Halide::Runtime::Buffer<float> &from, const Halide::Runtime::Buffer<float> &to);

// Copies src into dst with the strided_copy kernel on the current device, a kernel call of its
// own: for the forced-variant tests, which run it on every variant. Throws Error where
// copy_kernel_buffers has none.
void copy_with_kernel(const ConstTensorView &src, const TensorView &dst);

}  // namespace hattn::detail
