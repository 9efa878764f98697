// The storage types' rounding (spec/attention.md section 5) for the float64 references, written
// apart from the runtime's (hattn/half.h, hattn/int8_group.h): bf16 by its bits, f16 by the
// compiler's IEEE half, int8 groups by their definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hattn/dtype.h"
#include "hattn/tensor.h"

namespace hattn::reference {

#if defined(__aarch64__)
using IeeeHalf = __fp16;  // AArch64's; C++ has _Float16 on x86-64 with GCC 12
#else
using IeeeHalf = _Float16;
#endif

// x as `type` stores it, through float32 (the layers compute in float32): to nearest, ties to even;
// an f16 value past its range as +-65504.
inline double stored_as(DType type, double x) {
    const float f = static_cast<float>(x);
    if (type == DType::BF16) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
        float rounded;
        std::memcpy(&rounded, &bits, 4);
        return rounded;
    }
    if (type == DType::F16) {
        const double h = static_cast<double>(static_cast<IeeeHalf>(f));
        return std::isinf(h) ? std::copysign(65504.0, f) : h;
    }
    return x;  // f32: the reference's own float64 values (int8 rounds whole groups: store_rows)
}

// `t` with each value as `type` stores it (the weights of a layer of that dtype).
inline Tensor stored_tensor(DType type, const Tensor &t) {
    Tensor out = t;
    for (int64_t i = 0; i < out.size(); i++) out.data()[i] = static_cast<float>(stored_as(type, t.data()[i]));
    return out;
}

// Rows of `width` values as `type` stores them: each value rounded, or for int8 each row one
// group of codes round(x / s), s = max |x| / 127 (a zero row stores zeros).
inline void store_rows(DType type, std::vector<double> &values, int64_t width) {
    if (type == DType::F32) return;
    if (type != DType::Int8) {
        for (double &v : values) v = stored_as(type, v);
        return;
    }
    for (size_t row = 0; row < values.size(); row += width) {
        double largest = 0;
        for (int64_t i = 0; i < width; i++) largest = std::max(largest, std::fabs(double(float(values[row + i]))));
        const float s = static_cast<float>(largest / 127.0);
        for (int64_t i = 0; i < width; i++) {
            values[row + i] = s == 0.0f ? 0.0 : std::nearbyint(float(values[row + i]) / s) * double(s);
        }
    }
}

}  // namespace hattn::reference
