// The round_to_bf16 and round_to_f16 kernels (a layer's activations rounded where they are stored)
// against the host's rounding (hattn/half.h, itself checked against independent rules in
// test_half.cpp), value for value: ties, subnormal halves, the f16 range's edge, infinities, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "activation_rounding.h"
#include "hattn/half.h"
#include "support/kernel_checks.h"

namespace hattn {
namespace {

float float_of(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

uint32_t bits_of(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return bits;
}

// Every edge, then seeded values of every exponent.
std::vector<float> probes() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 65536.0f, 1e30f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), float_of(0x7fbfffff),  // NaNs
                            0x1p-14f, std::nextafter(0x1p-14f, 0.0f), 0x1p-24f, 0x1p-25f, std::nextafter(0x1p-25f, 1.0f),
                            3 * 0x1p-25f, 5 * 0x1p-25f, 0x1p-30f, std::numeric_limits<float>::denorm_min(),
                            float_of(0x3f808000), float_of(0x3f818000), float_of(0x3f807fff),  // bf16 ties, below one
                            float_of(0x3f801000), float_of(0x3f803000)};                       // f16 ties
    std::mt19937 rng(81);
    for (int i = 0; i < 200000; i++) {
        const uint32_t bits = rng();
        if ((bits & 0x7f800000u) != 0x7f800000u) v.push_back(float_of(bits));
    }
    return v;
}

// 0 where the kernel gave every value's host rounding (NaN for NaN), else 1.
double kernel_error(DType dtype) {
    const std::vector<float> values = probes();
    Tensor t({int64_t(values.size())});
    std::copy(values.begin(), values.end(), t.data());
    detail::store_as(dtype, t);
    for (size_t i = 0; i < values.size(); i++) {
        const float want = round_to(dtype, values[i]), got = t.data()[i];
        if (std::isnan(want) ? !std::isnan(got) : bits_of(want) != bits_of(got)) {
            ADD_FAILURE() << type_name(dtype) << " of " << values[i] << " (bits " << std::hex << bits_of(values[i])
                          << "): got " << bits_of(got) << ", want " << bits_of(want);
            return 1.0;
        }
    }
    return 0.0;
}

const bool checks_registered =
    testing::register_kernel_check("round_to_bf16", {[] { return kernel_error(DType::BF16); }, 0.0,
                                                     [] { return kernel_error(DType::BF16); }}) &&
    testing::register_kernel_check("round_to_f16", {[] { return kernel_error(DType::F16); }, 0.0,
                                                    [] { return kernel_error(DType::F16); }});

TEST(RoundValues, KernelsRoundAsTheHostDoes) {
    EXPECT_EQ(kernel_error(DType::BF16), 0.0);
    EXPECT_EQ(kernel_error(DType::F16), 0.0);
}

}  // namespace
}  // namespace hattn
