#include "hattn/half.h"

#include <algorithm>
#include <cstring>

namespace hattn {

namespace {

uint32_t bits_of(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float float_of(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

}  // namespace

uint16_t bf16_bits(float value) {
    const uint32_t bits = bits_of(value);
    if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
    // Adding half an ulp less one, plus the kept part's lowest bit, rounds ties to even.
    return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

uint16_t f16_bits(float value) {
    uint32_t bits = bits_of(value);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
    bits &= 0x7fffffff;
    if (bits > 0x7f800000) return sign | 0x7e00;                   // NaN
    if (bits >= 0x477ff000) return sign | 0x7bff;                  // >= 65520: 65504, never inf
    if (bits < 0x38800000) {                                       // below 2^-14: a subnormal half
        // Adding 0.5 puts the half's last subnormal bit (2^-24) at float32's last mantissa bit, so
        // the FPU's own rounding (to nearest even) rounds it.
        return sign | uint16_t(bits_of(float_of(bits) + 0.5f) - bits_of(0.5f));
    }
    // A normal half: rebias the exponent (127 to 15) and round away 13 mantissa bits, ties to even.
    bits += (uint32_t(15 - 127) << 23) + 0xfff + ((bits >> 13) & 1);
    return sign | uint16_t(bits >> 13);
}

float from_bf16_bits(uint16_t bits) { return float_of(uint32_t(bits) << 16); }

float from_f16_bits(uint16_t bits) {
    const uint32_t sign = uint32_t(bits & 0x8000) << 16, rest = bits & 0x7fff;
    if (rest >= 0x7c00) return float_of(sign | 0x7f800000 | ((rest & 0x3ff) << 13));  // inf, NaN
    // Exponent and mantissa in float32's places, then scaled by 2^(127 - 15): exact, subnormal
    // halves included.
    return float_of(sign | bits_of(float_of(rest << 13) * 0x1p112f));
}

float round_to(DType dtype, float value) {
    switch (dtype) {
    case DType::BF16: return from_bf16_bits(bf16_bits(value));
    case DType::F16: return from_f16_bits(f16_bits(value));
    case DType::F32:
    case DType::Int8: break;
    }
    return value;
}

void to_bits(DType dtype, const float *values, uint16_t *bits, int64_t count) {
    if (dtype == DType::BF16) {
        for (int64_t i = 0; i < count; i++) bits[i] = bf16_bits(values[i]);
    } else {
        for (int64_t i = 0; i < count; i++) bits[i] = f16_bits(values[i]);
    }
}

void round_to(DType dtype, float *values, int64_t count) {
    if (dtype == DType::F32 || dtype == DType::Int8) return;
    if (dtype == DType::BF16) {
        // bf16_bits in a loop the compiler vectorises (its NaN case a select): an infinity stays
        // one, and a NaN stays NaN (the layers' checks see it).
        for (int64_t i = 0; i < count; i++) {
            const uint32_t bits = bits_of(values[i]);
            const float rounded = float_of((bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u);
            values[i] = (bits & 0x7fffffffu) > 0x7f800000u ? values[i] : rounded;
        }
        return;
    }
    for (int64_t i = 0; i < count; i++) values[i] = round_to(dtype, values[i]);
}

bool all_bf16(const float *values, int64_t count) {
    // Blocks of low halves or'ed together (a loop the compiler vectorises), stopping at the first
    // block with a bit set: float32 queries stop at once.
    constexpr int64_t block = 4096;
    for (int64_t start = 0; start < count; start += block) {
        const int64_t end = std::min(count, start + block);
        uint32_t low = 0;
        for (int64_t i = start; i < end; i++) low |= bits_of(values[i]) & 0xffffu;
        if (low != 0) return false;
    }
    return true;
}

}  // namespace hattn
