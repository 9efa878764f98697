#include "strided_copy.h"

#include <vector>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn::detail {

std::optional<std::pair<Halide::Runtime::Buffer<float>, Halide::Runtime::Buffer<float>>> copy_kernel_buffers(
    const ConstTensorView &src, const TensorView &dst) {
    return copy_kernel_buffers(halide_buffer(src), halide_buffer(dst));
}

std::optional<std::pair<Halide::Runtime::Buffer<float>, Halide::Runtime::Buffer<float>>> copy_kernel_buffers(
    const Halide::Runtime::Buffer<float> &from, const Halide::Runtime::Buffer<float> &to) {
    // (extent, source stride, destination stride), innermost first, extent-1 dims left out.
    struct Dim {
        int32_t extent, from_stride, to_stride;
    };
    std::vector<Dim> dims;
    for (int d = 0; d < from.dimensions(); d++) {
        const halide_dimension_t &f = from.raw_buffer()->dim[d], &t = to.raw_buffer()->dim[d];
        if (f.extent == 1) continue;
        if (!dims.empty()) {
            Dim &inner = dims.back();
            const int64_t from_run = int64_t(inner.extent) * inner.from_stride, to_run = int64_t(inner.extent) * inner.to_stride;
            if (f.stride == from_run && t.stride == to_run && int64_t(inner.extent) * f.extent <= INT32_MAX) {
                inner.extent *= f.extent;  // contiguous across both: one dim
                continue;
            }
        }
        dims.push_back({f.extent, f.stride, t.stride});
    }
    if (dims.empty()) return std::nullopt;  // one element
    const bool one_run = dims.size() == 1 && dims[0].from_stride == 1 && dims[0].to_stride == 1;
    if (one_run || dims.size() > 4 || dims[0].from_stride != 1 || dims[0].to_stride != 1) return std::nullopt;
    // Views whose spans overlap are copied run by run, in order, as before: where they share
    // memory the kernel's threads would race. (No caller copies within one tensor today.)
    const auto ends = [](const Halide::Runtime::Buffer<float> &b) {
        return std::make_pair(b.begin(), b.end());
    };
    const auto [from_begin, from_end] = ends(from);
    const auto [to_begin, to_end] = ends(to);
    if (from_begin < to_end && to_begin < from_end) return std::nullopt;
    halide_dimension_t from_shape[4], to_shape[4];
    for (size_t d = 0; d < 4; d++) {
        const Dim k = d < dims.size() ? dims[d] : Dim{1, 0, 0};
        from_shape[d] = halide_dimension_t(0, k.extent, k.from_stride);
        to_shape[d] = halide_dimension_t(0, k.extent, k.to_stride);
    }
    return std::make_pair(Halide::Runtime::Buffer<float>(from.data(), 4, from_shape),
                          Halide::Runtime::Buffer<float>(to.data(), 4, to_shape));
}

void copy_with_kernel(const ConstTensorView &src, const TensorView &dst) {
    require(src.shape == dst.shape, "strided copy: the views' shapes differ");
    auto buffers = copy_kernel_buffers(src, dst);
    require(buffers.has_value(), "strided copy: these views are not the kernel's (one run, or over 4 dims)");
    run_kernel<kernels::strided_copy>(buffers->first.raw_buffer(), buffers->second.raw_buffer());
}

}  // namespace hattn::detail
