// The row-norm kernels against float64 references, on strided rows too.
#include <gtest/gtest.h>

#include <cmath>

#include "hattn/kernels/norm.h"
#include "support/compare.h"
#include "support/kernel_checks.h"
#include "support/random.h"

namespace hattn {
namespace {

// Normalises the first n of each `width`-wide row (width >= n) of a random [rows, width] tensor.
double norm_error(bool layer, int64_t rows, int64_t n, int64_t width, uint32_t seed) {
    const Tensor x = testing::random_tensor({rows, width}, seed);
    const Tensor w = testing::random_tensor({n}, seed + 1), b = testing::random_tensor({n}, seed + 2);
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
        for (int64_t i = 0; i < n; i++) {
            ref[r * n + i] = layer ? (row[i] - mean) / std::sqrt(sq + 1e-6) * w.data()[i] + b.data()[i]
                                   : w.data()[i] * row[i] / std::sqrt(sq + 1e-6);
        }
    }
    return testing::relative_l2(y, ref);
}

TEST(RowNorm, RmsNormOnStridedRows) { EXPECT_LE(norm_error(false, 9, 32, 40, 1), 1e-6); }
TEST(RowNorm, LayerNormOneRowAndOdd) {
    EXPECT_LE(norm_error(true, 1, 16, 16, 2), 1e-6);
    EXPECT_LE(norm_error(true, 17, 37, 37, 3), 1e-6);
}

const bool checks_registered =
    testing::register_kernel_check("rms_norm", {[] { return norm_error(false, 21, 48, 56, 4); }, 1e-6,
                                                [] { return norm_error(false, 512, 2048, 2048, 5); }}) &&
    testing::register_kernel_check("layer_norm", {[] { return norm_error(true, 21, 48, 48, 6); }, 1e-6,
                                                  [] { return norm_error(true, 512, 2048, 2048, 7); }});

}  // namespace
}  // namespace hattn
