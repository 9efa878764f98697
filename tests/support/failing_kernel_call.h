// A kernel call that fails inside Halide, for tests of how failures reach the caller.
#pragma once

#include <cstdint>

#include "halide_call.h"
#include "hattn/tensor.h"
#include "kernel_variants.h"

namespace hattn::testing {

// Calls the projection kernel with a bias of `bias_size` entries for the weight's 3 outputs: with
// fewer than 3, Halide's bounds check fails and call_kernel throws hattn::Error.
inline void call_projection_with_bias_of(int64_t bias_size) {
    Tensor x({2, 4}), w({3, 4}), b({bias_size}), y({2, 3});
    auto xb = detail::halide_buffer(x.view()), wb = detail::halide_buffer(w.view());
    auto bb = detail::halide_buffer(b.view()), yb = detail::halide_buffer(y.view());
    detail::run_kernel<detail::kernels::projection>(xb.raw_buffer(), wb.raw_buffer(), bb.raw_buffer(), 0.0f,
                                                    yb.raw_buffer());
}

}  // namespace hattn::testing
