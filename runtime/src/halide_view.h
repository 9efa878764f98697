// Halide's view of hattn's tensors. Kept out of the public headers, so that an application builds
// against hattn without Halide's headers (and with its own Halide, of any version, if it has one).
#pragma once

#include "HalideBuffer.h"
#include "hattn/tensor.h"

namespace hattn::detail {

// The same memory as a Halide buffer, dimensions reversed. Throws Error if an extent or stride
// does not fit Halide's 32-bit fields, or if the view has elements but no data.
Halide::Runtime::Buffer<float> halide_buffer(const ConstTensorView &view);
// The same for elements of any storage type, as a buffer of Halide's type for it.
Halide::Runtime::Buffer<void> halide_storage_buffer(const StoredView &view);

}  // namespace hattn::detail
