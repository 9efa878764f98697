// The 16-bit storage types' rounding against independent rules: the compiler's half for f16,
// and for bf16 a choice between the two neighbouring bf16 values made in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hattn/half.h"

namespace hattn {
namespace {

// The compiler's IEEE half: C++ has _Float16 on x86-64 with GCC 12, AArch64 its __fp16.
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#else
using CompilerHalf = _Float16;
#endif

float float_of(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

uint32_t bits_of(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

// The bf16 nearest to x, ties to the even one, chosen in double precision.
float nearest_bf16(float x) {
    const float below = float_of(bits_of(x) & 0xffff0000u);  // towards zero
    const float above = float_of((bits_of(x) & 0xffff0000u) + 0x10000u);
    const double to_below = std::fabs(double(x) - below), to_above = std::fabs(double(above) - x);
    if (to_below != to_above) return to_below < to_above ? below : above;
    return (bits_of(below) >> 16) % 2 == 0 ? below : above;
}

std::vector<float> sample_floats() {
    std::mt19937 rng(53);
    std::vector<float> values;
    std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
    for (int i = 0; i < 200000; i++) {
        const float x = float_of(any_bits(rng));
        if (std::isfinite(x)) values.push_back(x);
    }
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int i = 0; i < 200000; i++) values.push_back(normal(rng));
    // Exact ties and the values next to them.
    for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f800800u, 0x3f801000u, 0x3f803000u, 0x33000000u, 0x33800000u}) {
        for (int delta = -1; delta <= 1; delta++) values.push_back(float_of(bits + delta));
    }
    return values;
}

TEST(Half, Bf16RoundsToNearestEven) {
    for (float x : sample_floats()) {
        if (std::fabs(x) >= 3.38e38f) continue;  // rounds to inf: no bf16 neighbour above
        ASSERT_EQ(round_to(DType::BF16, x), nearest_bf16(x)) << x;
    }
    EXPECT_EQ(round_to(DType::BF16, 1.0f + 0x1p-8f), 1.0f);  // a tie to the even neighbour
    EXPECT_EQ(round_to(DType::BF16, 1.0f + 0x1p-8f + 0x1p-23f), 1.0f + 0x1p-7f);
    // The in-place form keeps every NaN a NaN, a full mantissa too (whose rounding would carry
    // into the sign).
    float nans[2] = {float_of(0x7fffffffu), float_of(0xffffffffu)};
    round_to(DType::BF16, nans, 2);
    EXPECT_TRUE(std::isnan(nans[0]) && std::isnan(nans[1]));
}

TEST(Half, F16RoundsAsTheCompilersHalfDoes) {
    for (float x : sample_floats()) {
        if (std::fabs(x) >= 65520.0f) continue;  // past the range: clamped, below
        ASSERT_EQ(round_to(DType::F16, x), float(CompilerHalf(x))) << x;
    }
}

TEST(Half, F16ReadsEveryHalfExactly) {
    for (uint32_t bits = 0; bits < 0x10000; bits++) {
        CompilerHalf half;
        const uint16_t h = uint16_t(bits);
        std::memcpy(&half, &h, sizeof half);
        if (std::isnan(float(half))) continue;
        ASSERT_EQ(from_f16_bits(h), float(half)) << bits;
        ASSERT_EQ(f16_bits(float(half)), std::isinf(float(half)) ? (h & 0x8000) | 0x7bff : h) << bits;
    }
}

TEST(Half, F16BeyondItsRangeIsStoredAs65504NotInf) {
    for (float x : {65504.0f, 65519.0f, 65520.0f, 70000.0f, 1e30f, 3.4e38f}) {
        EXPECT_EQ(round_to(DType::F16, x), 65504.0f) << x;
        EXPECT_EQ(round_to(DType::F16, -x), -65504.0f) << x;
    }
    EXPECT_EQ(round_to(DType::F16, 65503.0f), 65504.0f);
}

TEST(Half, F32LeavesValuesAlone) {
    float values[] = {0.1f, -3.3f, 1e-40f};
    round_to(DType::F32, values, 3);
    EXPECT_EQ(values[0], 0.1f);
    EXPECT_EQ(values[2], 1e-40f);
    round_to(DType::BF16, values, 3);
    EXPECT_EQ(values[0], nearest_bf16(0.1f));
}

}  // namespace
}  // namespace hattn
