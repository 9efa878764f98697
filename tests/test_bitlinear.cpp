// BitLinear: ternary packing, and the integer kernels (both dot forms) against the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/kernels/bitlinear.h"
#include "reference/latent_attention.h"
#include "support/compare.h"
#include "support/dot_forms.h"
#include "support/errors.h"
#include "support/kernel_checks.h"
#include "support/random.h"

namespace hattn {
namespace {

TEST(PackTernary, RoundsHalfToEvenAndClamps) {
    // mean |W| = 1, so a_w = 1 and Wq = clamp(round(W), -1, 1).
    const Tensor w({1, 8}, {0.5f, 1.5f, -0.5f, -1.5f, 2.5f, 0.49f, -3.0f, 1.0f});
    const PackedTernary p = pack_ternary(w);
    const int expected[] = {0, 1, 0, -1, 1, 0, -1, 1};  // round(0.5) = 0, round(1.5) = 2 -> 1
    for (int k = 0; k < 8; k++) EXPECT_EQ(p.weight(0, k), expected[k]) << "k = " << k;
}

TEST(PackTernary, UsesTwoBitsPerWeight) {
    const PackedTernary p = pack_ternary(testing::random_tensor({48, 256}, 1));
    EXPECT_EQ(p.bytes(), 48 * 256 / 4);
    const PackedTernary odd = pack_ternary(testing::random_tensor({5, 70}, 2));
    EXPECT_EQ(odd.bytes(), 5 * 256 / 4);  // rows padded to a multiple of 256 inputs, padding weighs 0
    for (int64_t k = 70; k < 256; k++) EXPECT_EQ(odd.weight(4, k), 0);
}

double bitlinear_error(int64_t rows, int64_t in, int64_t out, IntegerDotForm form, uint32_t seed) {
    return testing::with_integer_form(form, [&] {
        const Tensor x = testing::random_tensor({rows, in}, seed);
        const Tensor w = testing::random_tensor({out, in}, seed + 1);
        Tensor y({rows, out});
        bitlinear(x.view(), pack_ternary(w), y.view());
        return testing::relative_l2(y,
                                    reference::latent_detail::bitlinear({x.values().begin(), x.values().end()}, rows, w));
    });
}

TEST(BitLinear, BothDotFormsMatchTheSpec) {
    EXPECT_LE(bitlinear_error(5, 130, 33, IntegerDotForm::S8S8, 3), 1e-6);
    EXPECT_LE(bitlinear_error(5, 130, 33, IntegerDotForm::U8S8, 3), 1e-6);
    EXPECT_LE(bitlinear_error(1, 64, 1, IntegerDotForm::Auto, 4), 1e-6);
}

TEST(BitLinear, RejectsWrongShapes) {
    const PackedTernary p = pack_ternary(testing::random_tensor({4, 8}, 5));
    Tensor x({2, 9}), y({2, 4});
    EXPECT_THROW(bitlinear(x.view(), p, y.view()), Error);
}

// Packed weights built by hand must agree with themselves as pack_ternary's do; a weight that
// is not finite has no scale.
TEST(BitLinear, RejectsPackedWeightsThatDisagreeAndWeightsThatAreNotFinite) {
    const PackedTernary good = pack_ternary(testing::random_tensor({4, 8}, 5));
    const Tensor x({2, 8});
    Tensor y({2, 4});
    const std::vector<std::function<void(PackedTernary &)>> breaks = {
        [](PackedTernary &p) { p.codes.clear(); },
        [](PackedTernary &p) { p.in_padded = 4; },
        [](PackedTernary &p) { p.in_padded = 260; },
        [](PackedTernary &p) { p.in_padded = 512; },
        [](PackedTernary &p) { p.scale = std::nanf(""); },
        [](PackedTernary &p) { p.scale = 0; },
        // out * in_padded / 4 wraps around to the 4 * 64 code bytes there are
        [](PackedTernary &p) { p.out += int64_t{1} << 58; },
    };
    for (const auto &change : breaks) {
        PackedTernary p = good;
        change(p);
        const std::string message = testing::error_message([&] { bitlinear(x.view(), p, y.view()); });
        EXPECT_NE(message.find("do not agree (as pack_ternary makes them)"), std::string::npos) << message;
    }
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        Tensor w = testing::random_tensor({4, 8}, 6);
        w.data()[5] = bad;
        EXPECT_EQ(testing::error_message([&] { pack_ternary(w); }), "BitLinear: the weight holds a NaN or an infinity");
    }
}

// The quantisation kernel is checked through the whole BitLinear: one activation rounded the
// other way moves y by about 1e-3 of its norm, far past the tolerance.
const bool checks_registered =
    testing::register_kernel_check(
        "bitlinear_quantize", {[] { return bitlinear_error(3, 200, 45, IntegerDotForm::Auto, 10); }, 1e-6,
                               [] { return bitlinear_error(1, 2048, 2048, IntegerDotForm::Auto, 11); }}) &&
    testing::register_kernel_check(
        "bitlinear_s8s8", {[] { return bitlinear_error(3, 200, 45, IntegerDotForm::S8S8, 6); }, 1e-6,
                           [] { return bitlinear_error(1, 2048, 2048, IntegerDotForm::S8S8, 7); }}) &&
    testing::register_kernel_check(
        "bitlinear_u8s8", {[] { return bitlinear_error(3, 200, 45, IntegerDotForm::U8S8, 8); }, 1e-6,
                           [] { return bitlinear_error(1, 2048, 2048, IntegerDotForm::U8S8, 9); }});

}  // namespace

TEST(BitLinear, NoInputsGiveZerosWhateverTheOutputHeld) {
    Tensor y({2, 3});
    std::fill_n(y.data(), y.size(), std::numeric_limits<float>::quiet_NaN());
    bitlinear(Tensor({2, 0}).view(), pack_ternary(Tensor({3, 0})), y.view());
    for (float v : y.values()) EXPECT_EQ(v, 0.0f);
}

}  // namespace hattn
