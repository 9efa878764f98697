#include "activation_rounding.h"

#include "device_residency.h"
#include "kernel_variants.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/half.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace hattn::detail {

namespace {

// `count` values rounded to dtype (BF16 or F16) into `rounded` (which may be `values`) by the
// kernel on the device the kernels run on.
void round_by_kernel(DType dtype, const float *values, float *rounded, int64_t count) {
    require(count <= std::numeric_limits<int32_t>::max(),
            [&] { return "rounding to " + std::string(type_name(dtype)) + ": more than 2^31 - 1 values"; });
    const int n = static_cast<int>(count);
    Halide::Runtime::Buffer<float> in(const_cast<float *>(values), n), out(rounded, n);
    if (dtype == DType::BF16) return run_kernel<kernels::round_to_bf16>(in.raw_buffer(), out.raw_buffer());
    run_kernel<kernels::round_to_f16>(in.raw_buffer(), out.raw_buffer());
}

}  // namespace

void store_as(DType dtype, Tensor &t) {
    if (dtype == DType::F32 || t.size() == 0) return;
    // In place, on the device the kernels run on: on a GPU the values stay there.
    round_by_kernel(dtype, t.data(), t.data(), t.size());
}

const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy) {
    if (dtype == DType::F32) return x;
    if (current_device() != Device::CPU || x.size() == 0) {
        copy = x;  // the caller's host values, rounded on the host (no kernel reads the caller's tensor)
        round_to(dtype, copy->data(), copy->size());
        return *copy;
    }
    // On a CPU the kernel rounds out of place: one parallel pass, not a copy and a serial rounding.
    copy.emplace(x.shape(), Tensor::unset);
    round_by_kernel(dtype, x.data(), copy->data(), x.size());
    return *copy;
}

Tensor widened_input(const StoredView &x, const char *what) {
    require(x.dtype != DType::Int8, [&] {
        return std::string(what) + ": int8 codes are a cache type; a layer takes f32, bf16 or f16 values";
    });
    ConstTensorView layout;  // the element layout alone, checked as a float32 view's
    layout.data = static_cast<const float *>(x.data);
    layout.shape = x.shape;
    layout.strides = x.strides;
    require_well_formed(layout, what);
    Tensor widened(x.shape, Tensor::unset);
    widen_into(x, widened.view());
    return widened;
}

}  // namespace hattn::detail
