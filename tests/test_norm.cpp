// The row-norm kernels against float64 references, on strided rows too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hattn/kernels/norm.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/kernel_checks.h"
#include "support/random.h"

namespace hattn {
namespace {

// Normalises the first n of each `width`-wide row (width >= n) of a random [rows, width] tensor,
// with `weight_rows` rows of weights and biases that the rows take in turn (1: a weight [n]).
double norm_error(bool layer, int64_t rows, int64_t n, int64_t width, uint32_t seed, int64_t weight_rows = 1) {
    const Tensor x = testing::random_tensor({rows, width}, seed);
    const Shape weight_shape = weight_rows == 1 ? Shape{n} : Shape{weight_rows, n};
    const Tensor w = testing::random_tensor(weight_shape, seed + 1), b = testing::random_tensor(weight_shape, seed + 2);
    Tensor y({rows, n});
    const ConstTensorView rows_view(x.data(), {rows, n}, {width, 1});
    if (layer) {
        layer_norm(rows_view, w, b, 1e-6f, y.view());
    } else {
        rms_norm(rows_view, w, 1e-6f, y.view());
    }
    std::vector<double> ref(rows * n);
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x.data() + r * width;
        double mean = 0, sq = 0;
        for (int64_t i = 0; i < n; i++) mean += row[i] / double(n);
        for (int64_t i = 0; i < n; i++) {
            const double c = layer ? row[i] - mean : row[i];
            sq += c * c / double(n);
        }
        const float *wr = w.data() + (r % weight_rows) * n, *br = b.data() + (r % weight_rows) * n;
        for (int64_t i = 0; i < n; i++) {
            ref[r * n + i] = layer ? (row[i] - mean) / std::sqrt(sq + 1e-6) * wr[i] + br[i]
                                   : wr[i] * row[i] / std::sqrt(sq + 1e-6);
        }
    }
    return testing::relative_l2(y, ref);
}

TEST(RowNorm, RmsNormOnStridedRows) { EXPECT_LE(norm_error(false, 9, 32, 40, 1), 1e-6); }
TEST(RowNorm, LayerNormOneRowAndOdd) {
    EXPECT_LE(norm_error(true, 1, 16, 16, 2), 1e-6);
    EXPECT_LE(norm_error(true, 17, 37, 37, 3), 1e-6);
}

// Each head its own weights: rows (token, head) take the weights' rows in turn.
TEST(RowNorm, WeightRowsTakenInTurn) {
    EXPECT_LE(norm_error(true, 4 * 6, 16, 16, 8, 4), 1e-6);
    EXPECT_LE(norm_error(false, 3 * 5, 24, 32, 9, 3), 1e-6);
}

TEST(RowNorm, WeightsThatDoNotFitAreRefused) {
    const Tensor x({6, 8}), w({4, 8}), b({8});
    Tensor y({6, 8});
    EXPECT_EQ(testing::error_message([&] { layer_norm(x.view(), w, b, 1e-6f, y.view()); }),
              "layer_norm: x [6, 8], y [6, 8], weight [4, 8] and bias [8] do not fit (each [n], or [k, n] with k "
              "dividing the rows)");
    // A weight of no dimensions (a default Tensor) is named too, not read past its shape.
    EXPECT_EQ(testing::error_message([&] { rms_norm(x.view(), Tensor(), 1e-6f, y.view()); }),
              "rms_norm: x [6, 8], y [6, 8], weight [] and bias [] do not fit (each [n], or [k, n] with k dividing "
              "the rows)");
}

// eps keeps a zero row finite: zero, negative or NaN would give NaN rows from fast-math kernels.
TEST(RowNorm, EpsMustBePositiveAndFinite) {
    const Tensor x({2, 8}), w({8}), b({8});
    Tensor y({2, 8});
    for (float eps : {0.0f, -1e-6f, NAN}) {
        EXPECT_EQ(testing::error_message([&] { rms_norm(x.view(), w, eps, y.view()); }),
                  "rms_norm: eps must be positive and finite, got " + std::to_string(eps));
        EXPECT_EQ(testing::error_message([&] { layer_norm(x.view(), w, b, eps, y.view()); }),
                  "layer_norm: eps must be positive and finite, got " + std::to_string(eps));
    }
}

const bool checks_registered =
    testing::register_kernel_check("rms_norm", {[] { return norm_error(false, 21, 48, 56, 4); }, 1e-6,
                                                [] { return norm_error(false, 512, 2048, 2048, 5); }}) &&
    testing::register_kernel_check("layer_norm", {[] { return std::max(norm_error(true, 21, 48, 48, 6),
                                                                       norm_error(true, 21, 48, 48, 10, 7)); },
                                                  1e-6,
                                                  [] { return norm_error(true, 512, 2048, 2048, 7); }});

}  // namespace
}  // namespace hattn
