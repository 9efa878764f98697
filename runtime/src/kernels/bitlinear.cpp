#include "hattn/kernels/bitlinear.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernel_contract.h"
#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

PackedTernary pack_ternary(const Tensor &w) {
    require(w.rank() == 2, [&] { return "BitLinear: weight must be [out, in], got " + shape_to_string(w.shape()); });
    PackedTernary p;
    p.out = w.dim(0);
    p.in = w.dim(1);
    constexpr int64_t k_multiple = kernel_contract::bitlinear_k_multiple;
    p.in_padded = (p.in + k_multiple - 1) / k_multiple * k_multiple;
    double total = 0;
    for (float v : w.values()) total += std::fabs(v);
    // A NaN or an infinity would make the scale NaN or 0 (every code 0, or undefined).
    require(std::isfinite(total), "BitLinear: the weight holds a NaN or an infinity");
    const float mean = static_cast<float>(total / double(std::max<int64_t>(w.size(), 1)));
    p.scale = 1.0f / std::max(mean, 1e-5f);
    p.codes.assign(p.out * (p.in_padded / 4), 0x55);  // code 1 (weight 0) everywhere, padding included
    for (int64_t o = 0; o < p.out; o++) {
        for (int64_t k = 0; k < p.in; k++) {
            const float q = std::clamp(std::nearbyint(w.data()[o * p.in + k] * p.scale), -1.0f, 1.0f);
            uint8_t &byte = p.codes[o * (p.in_padded / 4) + k / 4];
            const int shift = 2 * (k % 4);
            byte = static_cast<uint8_t>((byte & ~(3 << shift)) | ((static_cast<int>(q) + 1) << shift));
        }
    }
    return p;
}

void bitlinear(const ConstTensorView &x, const PackedTernary &w, const TensorView &y) {
    // A PackedTernary built by hand rather than by pack_ternary: its parts must agree. Its extents
    // are the kernels' (Halide's are int32), which also keeps out * in_padded from overflowing.
    constexpr int64_t k_multiple = kernel_contract::bitlinear_k_multiple, extent_limit = INT32_MAX;
    require(w.out >= 0 && w.in >= 0 && w.out <= extent_limit && w.in_padded <= extent_limit && w.in_padded >= w.in &&
                w.in_padded % k_multiple == 0 && w.in_padded - w.in < k_multiple &&
                w.bytes() == w.out * (w.in_padded / 4) && std::isnormal(w.scale) && w.scale > 0,
            [&] {
                return "BitLinear: packed weights out " + std::to_string(w.out) + ", in " + std::to_string(w.in) +
                       ", in_padded " + std::to_string(w.in_padded) + ", " + std::to_string(w.bytes()) +
                       " code bytes, scale " + std::to_string(w.scale) + " do not agree (as pack_ternary makes them)";
            });
    require(x.rank() >= 1 && x.shape.back() == w.in && x.is_contiguous(), [&] {
        return "BitLinear: input " + shape_to_string(x.shape) + " must be contiguous [..., " + std::to_string(w.in) +
               "]";
    });
    Shape y_shape(x.shape.begin(), x.shape.end() - 1);
    y_shape.push_back(w.out);
    require(y.shape == y_shape && y.is_contiguous(),
            [&] { return "BitLinear: output " + shape_to_string(y.shape) + ", expected " + shape_to_string(y_shape); });
    if (w.in == 0) {  // an empty sum: zeros (y need not start as zeros)
        std::fill(y.data, y.data + y.size(), 0.0f);
        return;
    }
    const int64_t rows = x.size() / w.in;
    if (rows == 0 || w.out == 0) return;

    // The activations are quantised by a kernel of their own; on a GPU the quantised rows, their
    // sums and scales live only on the device between the two kernels.
    std::vector<int8_t> xq(rows * w.in_padded);
    std::vector<int32_t> xq_sum(rows);
    std::vector<float> row_scale(rows);
    const int64_t word = sizeof(float);
    const detail::ScopedRegion on_device[] = {
        detail::ScopedRegion(xq.data(), static_cast<int64_t>(xq.size()), Residency::DeviceOutput),
        detail::ScopedRegion(xq_sum.data(), rows * word, Residency::DeviceOutput),
        detail::ScopedRegion(row_scale.data(), rows * word, Residency::DeviceOutput)};
    auto xb = detail::halide_buffer(ConstTensorView(x.data, {rows, w.in}));
    Halide::Runtime::Buffer<int8_t> xqb(xq.data(), static_cast<int>(w.in_padded), static_cast<int>(rows));
    Halide::Runtime::Buffer<int32_t> sumb(xq_sum.data(), static_cast<int>(rows));
    Halide::Runtime::Buffer<float> scaleb(row_scale.data(), static_cast<int>(rows));
    detail::run_kernel<detail::kernels::bitlinear_quantize>(xb.raw_buffer(), w.scale,
                        xqb.raw_buffer(), sumb.raw_buffer(), scaleb.raw_buffer());

    const detail::BitLinearChoice choice = detail::bitlinear_kernel();
    Halide::Runtime::Buffer<uint8_t> wb(const_cast<uint8_t *>(w.codes.data()), static_cast<int>(w.in_padded / 4),
                                        static_cast<int>(w.out));
    auto yb = detail::halide_buffer(TensorView(y.data, {rows, w.out}));
    detail::call_kernel(choice.name, choice.kernel, xqb.raw_buffer(), wb.raw_buffer(), sumb.raw_buffer(),
                        scaleb.raw_buffer(), yb.raw_buffer());
}

}  // namespace hattn
