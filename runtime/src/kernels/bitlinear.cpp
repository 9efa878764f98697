#include "hattn/kernels/bitlinear.h"

#include <algorithm>
#include <cmath>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

namespace {
constexpr int64_t k_multiple = 64;  // BitLinear::k_multiple in the generator
}  // namespace

PackedTernary pack_ternary(const Tensor &w) {
    require(w.rank() == 2, "BitLinear: weight must be [out, in], got " + shape_to_string(w.shape()));
    PackedTernary p;
    p.out = w.dim(0);
    p.in = w.dim(1);
    p.in_padded = (p.in + k_multiple - 1) / k_multiple * k_multiple;
    double total = 0;
    for (float v : w.values()) total += std::fabs(v);
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

void bitlinear(const TensorView &x, const PackedTernary &w, const TensorView &y) {
    require(x.rank() >= 1 && x.shape.back() == w.in && x.is_contiguous(),
            "BitLinear: input " + shape_to_string(x.shape) + " must be contiguous [..., " + std::to_string(w.in) + "]");
    Shape y_shape(x.shape.begin(), x.shape.end() - 1);
    y_shape.push_back(w.out);
    require(y.shape == y_shape && y.is_contiguous(),
            "BitLinear: output " + shape_to_string(y.shape) + ", expected " + shape_to_string(y_shape));
    const int64_t rows = w.in == 0 ? 0 : x.size() / w.in;
    if (rows == 0 || w.out == 0) return;

    const detail::BitLinearChoice choice = detail::bitlinear_kernel();
    // The activations are quantised here, on the host (on a GPU too: a round trip for x).
    detail::host_reads(x);
    std::vector<int8_t> xq(rows * w.in_padded, 0);
    std::vector<int32_t> correction(rows, 0);
    std::vector<float> row_scale(rows);
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x.data + r * w.in;
        float peak = 0;
        for (int64_t k = 0; k < w.in; k++) peak = std::max(peak, std::fabs(row[k]));
        const float a_x = 127.0f / std::max(peak, 1e-5f);
        int32_t sum = 0;
        for (int64_t k = 0; k < w.in; k++) {
            const int8_t q = static_cast<int8_t>(std::clamp(std::nearbyint(row[k] * a_x), -128.0f, 127.0f));
            xq[r * w.in_padded + k] = q;
            sum += q;
        }
        // The u8 x s8 form multiplies by the codes Wq + 1: subtract sum_k xq to get xq . Wq.
        correction[r] = choice.u8s8 ? sum : 0;
        row_scale[r] = 1.0f / (a_x * w.scale);
    }
    Halide::Runtime::Buffer<int8_t> xb(xq.data(), static_cast<int>(w.in_padded), static_cast<int>(rows));
    Halide::Runtime::Buffer<uint8_t> wb(const_cast<uint8_t *>(w.codes.data()), static_cast<int>(w.in_padded / 4),
                                        static_cast<int>(w.out));
    Halide::Runtime::Buffer<int32_t> cb(correction.data(), static_cast<int>(rows));
    Halide::Runtime::Buffer<float> sb(row_scale.data(), static_cast<int>(rows));
    auto yb = TensorView(y.data, {rows, w.out}).halide_buffer();
    detail::call_kernel(choice.name, choice.kernel, xb.raw_buffer(), wb.raw_buffer(), cb.raw_buffer(),
                        sb.raw_buffer(), yb.raw_buffer());
}

}  // namespace hattn
