// The projection kernel against its float64 reference, on shapes chosen to miss every tile size.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "kernel_contract.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernel_table.h"
#include "hattn/kernels/projection.h"
#include "kernel_variants.h"
#include "reference/projection.h"
#include "support/dot_forms.h"
#include "support/kernels_ran.h"
#include "support/compare.h"
#include "support/device.h"
#include "support/errors.h"
#include "support/kernel_checks.h"
#include "support/random.h"

namespace hattn {
namespace {

// A sequence length whose two batches make more rows than the CPU's gemv variant takes: the tiled kernel's.
constexpr int64_t tiled_seq = kernel_contract::projection_gemv_max_rows_cpu / 2 + 1;

struct ProjectionShape {
    Shape x_leading;  // the row dimensions of x, e.g. {batch, seq}
    int64_t in, out;
    bool bias;
};

class ProjectionTest : public ::testing::TestWithParam<ProjectionShape> {};

TEST_P(ProjectionTest, MatchesFloat64Reference) {
    const ProjectionShape s = GetParam();
    Shape x_shape = s.x_leading, y_shape = s.x_leading;
    x_shape.push_back(s.in);
    y_shape.push_back(s.out);
    const Tensor x = testing::random_tensor(x_shape, 1);
    const Tensor w = testing::random_tensor({s.out, s.in}, 2);
    const Tensor b = testing::random_tensor({s.out}, 3);
    Tensor y(y_shape);
    const ConstTensorView bias_view = b.view();

    project(x.view(), w.view(), s.bias ? &bias_view : nullptr, y.view());

    EXPECT_LE(testing::relative_l2(y, reference::projection(x, w, s.bias ? &b : nullptr)), 1e-5);
}

// Rows (batch x seq) and widths that are 1, odd, or just past a multiple of the CPU schedules'
// register tiles (4 or 6 rows, 4 to 64 outputs, the gemv's vector of inputs), and the last
// shape past their cache blocks too (240 or 256 rows, 480 or 512 outputs, 128 or 256 inputs).
INSTANTIATE_TEST_SUITE_P(
    Shapes, ProjectionTest,
    ::testing::Values(ProjectionShape{{1}, 1, 1, true}, ProjectionShape{{1}, 7, 3, false},
                      ProjectionShape{{1, 1}, 64, 64, true}, ProjectionShape{{3}, 5, 1, true},
                      ProjectionShape{{2, 7}, 37, 29, true}, ProjectionShape{{3, 11}, 64, 33, false},
                      ProjectionShape{{1, 9}, 129, 70, true}, ProjectionShape{{2, 37}, 96, 97, true},
                      ProjectionShape{{65}, 256, 48, false}, ProjectionShape{{2, 131}, 300, 517, true}));

// OLMo 1's clip_qkv: outputs clamped to [-clip, clip]; at 2 most of these sums (about +-4) bend.
TEST(Projection, AClipClampsTheOutputs) {
    const Tensor x = testing::random_tensor({2, tiled_seq, 48}, 4), w = testing::random_tensor({33, 48}, 5);
    const Tensor b = testing::random_tensor({33}, 6);
    const ConstTensorView bias = b.view();
    for (const int64_t rows : {int64_t{1}, tiled_seq}) {  // the gemv variant and the tiled one
        const Tensor xs({2, rows, 48}, std::vector<float>(x.data(), x.data() + 2 * rows * 48));
        Tensor y({2, rows, 33});
        project(xs.view(), w.view(), &bias, y.view(), 2.0f);
        EXPECT_LE(testing::relative_l2(y, reference::projection(xs, w, &b, 2.0)), 1e-5) << rows;
        EXPECT_GT(testing::relative_l2(y, reference::projection(xs, w, &b)), 1e-2) << rows;
    }
    Tensor y({2, tiled_seq, 33});
    EXPECT_EQ(testing::error_message([&] { project(x.view(), w.view(), &bias, y.view(), -1.0f); }),
              "projection: clip must be 0 (none) or positive and finite, got -1.000000");
}

TEST(Projection, ShapeMismatchNamesBothShapes) {
    Tensor x({2, 5}), w({3, 4}), y({2, 3});
    try {
        project(x.view(), w.view(), nullptr, y.view());
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_TRUE(e.is_invalid_input());
        EXPECT_NE(std::string(e.what()).find("[2, 5]"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos) << e.what();
    }
}

// Every output of a weight without inputs would be its bias; the kernels' tiles assume inputs.
TEST(Projection, AWeightWithoutInputsIsRefused) {
    Tensor x({2, 0}), w({3, 0}), y({2, 3});
    EXPECT_EQ(testing::error_message([&] { project(x.view(), w.view(), nullptr, y.view()); }),
              "projection: weight [3, 0] has no inputs");
}

TEST(Projection, WrongOutputShapeIsRejectedBeforeAnyWrite) {
    Tensor x({2, 4}), w({3, 4}), y({2, 2}, {7, 7, 7, 7});
    EXPECT_THROW(project(x.view(), w.view(), nullptr, y.view()), Error);
    EXPECT_EQ(y.values(), std::vector<float>({7, 7, 7, 7}));
}

// One head's slice of x [B, S, H, in] projected into its slice of y [B, S, Hy, out], in place:
// each matches the projection of the slice copied out, and y's other heads keep their values.
void expect_head_slices_project_in_place(int64_t seq) {
    const int64_t B = 2, H = 3, Hy = 2, in = 37, out = 29;
    const Tensor x = testing::random_tensor({B, seq, H, in}, 7), w = testing::random_tensor({out, in}, 8);
    const Tensor b = testing::random_tensor({out}, 9);
    const ConstTensorView bias = b.view();
    Tensor y({B, seq, Hy, out}, std::vector<float>(B * seq * Hy * out, 5.0f));
    const ConstTensorView x_head(x.data() + 1 * in, {B, seq, in}, {seq * H * in, H * in, 1});
    const TensorView y_head(y.data() + 1 * out, {B, seq, out}, {seq * Hy * out, Hy * out, 1});
    project(x_head, w.view(), &bias, y_head);
    Tensor x_copy({B, seq, in}), y_copy({B, seq, out});
    copy_into(x_head, x_copy.view());
    copy_into(y_head, y_copy.view());
    EXPECT_LE(testing::relative_l2(y_copy, reference::projection(x_copy, w, &b)), 1e-5) << seq;
    Tensor y_other({B, seq, out});
    copy_into(ConstTensorView(y.data(), {B, seq, out}, {seq * Hy * out, Hy * out, 1}), y_other.view());
    EXPECT_EQ(y_other.values(), std::vector<float>(B * seq * out, 5.0f)) << seq;
}

TEST(Projection, ReadsAndWritesHeadSlicesInPlace) {
    for (const int64_t seq : {int64_t{1}, tiled_seq}) expect_head_slices_project_in_place(seq);  // gemv, tiled
}

class ProjectionOnGpu : public testing::OnEachGpu {};

TEST_P(ProjectionOnGpu, ReadsAndWritesHeadSlicesInPlace) {
    const testing::OnDevice on(GetParam());
    for (const int64_t seq : {1, 40}) expect_head_slices_project_in_place(seq);  // the gemv and the tiled kernel
}

HATTN_INSTANTIATE_ON_EACH_GPU(ProjectionOnGpu);

TEST(Projection, RowsNotOneStrideApartAreRejected) {
    const Tensor w = testing::random_tensor({3, 4}, 10);
    Tensor x({2, 3, 8}), y({2, 3, 6}, std::vector<float>(36, 7.0f));
    // The message of a projection of x's and y's memory seen with these shapes and strides.
    const auto refusal = [&](Shape x_shape, Shape x_strides, Shape y_shape, Shape y_strides) {
        return testing::error_message([&] {
            project(ConstTensorView(x.data(), x_shape, x_strides), w.view(), nullptr,
                    TensorView(y.data(), y_shape, y_strides));
        });
    };
    // Values not contiguous in a row (every other one).
    testing::expect_contains(refusal({6, 4}, {8, 2}, {6, 3}, {6, 1}),
                             "projection: input [6, 4] (strides [8, 2]) must be rows of contiguous values");
    // Rows at two strides: the outer dim does not step over the inner one whole.
    testing::expect_contains(refusal({2, 3, 4}, {20, 8, 1}, {2, 3, 3}, {18, 6, 1}),
                             "must be rows of contiguous values, one stride apart");
    // A row repeated (stride 0): as an output's rows, or inside an input's.
    testing::expect_contains(refusal({3, 4}, {8, 1}, {3, 3}, {0, 1}),
                             "projection: output [3, 3] (strides [0, 1]) must be rows of contiguous values");
    testing::expect_contains(refusal({2, 3, 4}, {4, 0, 1}, {2, 3, 3}, {18, 6, 1}),
                             "projection: input [2, 3, 4] (strides [4, 0, 1]) must be rows");
    // Output rows overlapping (two apart, three wide).
    testing::expect_contains(refusal({6, 4}, {8, 1}, {6, 3}, {2, 1}), "one stride apart and not overlapping");
    EXPECT_EQ(y.values(), std::vector<float>(36, 7.0f));
}

TEST(Projection, WrongBiasShapeIsRejected) {
    Tensor x({2, 4}), w({3, 4}), b({4}), y({2, 3});
    const ConstTensorView bias = b.view();
    EXPECT_THROW(project(x.view(), w.view(), &bias, y.view()), Error);
}

}  // namespace
}  // namespace hattn

namespace hattn {
namespace {

// y = x W^T + b on seeded data of the given size; the reference covers `sampled` rows (the
// first, the last and a stride between) so that large shapes stay cheap to check.
// The weights are held in `weights` (bf16 and f16: their bits, the values the reference sees);
// x holds values of `inputs` (bf16 pairs round x to bf16: a bf16 layer's x is bf16 already).
double projection_error(int64_t rows, int64_t in, int64_t out, int64_t sampled, uint32_t seed, float clip = 0.0f,
                        DType weights = DType::F32, DType inputs = DType::F32) {
    Tensor x = testing::random_tensor({rows, in}, seed);
    round_to(inputs, x.data(), x.size());
    Tensor w = testing::random_tensor({out, in}, seed + 1);
    const Tensor b = testing::random_tensor({out}, seed + 2);
    Tensor y({rows, out});
    const ConstTensorView bias = b.view();
    round_to(weights, w.data(), w.size());
    std::vector<uint16_t> bits(weights == DType::F32 ? 0 : w.size());
    if (weights != DType::F32) to_bits(weights, w.data(), bits.data(), w.size());
    const StoredView stored = weights == DType::F32 ? StoredView(w.view()) : StoredView(bits.data(), weights, w.shape(), {});
    project(x.view(), stored, &bias, y.view(), clip);
    const int64_t n = std::min(rows, sampled), step = std::max<int64_t>(1, (rows - 1) / std::max<int64_t>(n - 1, 1));
    Tensor x_rows({n, in}), y_rows({n, out});
    for (int64_t k = 0; k < n; k++) {
        const int64_t r = k == n - 1 ? rows - 1 : k * step;
        std::copy_n(x.data() + r * in, in, x_rows.data() + k * in);
        std::copy_n(y.data() + r * out, out, y_rows.data() + k * out);
    }
    return testing::relative_l2(y_rows, reference::projection(x_rows, w, &b, clip));
}

// The projections of 16-bit weights: the f32 checks' shapes (odd widths, a clip, tails), widened.
bool register_16_bit_weight_checks(DType type, const std::string &suffix) {
    testing::register_kernel_check("projection_" + suffix,
                                   {[type] {
                                        const int64_t rows = 2 * tiled_seq + 1;
                                        return testing::with_bf16_form(Bf16DotForm::Widened, [&] {
                                            return std::max({projection_error(rows, 71, 45, rows, 111, 0.0f, type),
                                                             projection_error(rows, 71, 45, rows, 115, 2.0f, type),
                                                             projection_error(130, 100, 150, 130, 117, 0.0f, type)});
                                        });
                                    },
                                    1e-5, [type] {
                                        return testing::with_bf16_form(Bf16DotForm::Widened, [&] {
                                            return projection_error(512, 2048, 2048, 9, 112, 0.0f, type);
                                        });
                                    }});
    testing::register_kernel_check("projection_gemv_" + suffix,
                                   {[type] {
                                        return std::max({projection_error(3, 71, 45, 3, 113, 0.0f, type),
                                                         projection_error(3, 71, 45, 3, 116, 2.0f, type),
                                                         projection_error(9, 71, 45, 9, 118, 0.0f, type)});
                                    },
                                    1e-5, [type] {
                                        return testing::with_bf16_form(Bf16DotForm::Widened, [&] {
                                            return projection_error(1, 2048, 2048, 1, 114, 0.0f, type);
                                        });
                                    }});
    return true;
}

// The projection's entry in the forced-variant tests: rows and widths off every tile size, the
// rows past what the CPU's gemv takes (the last shape past the GPU's 64 x 64 blocks in both
// directions and its slices of 32 inputs, with tails in each), and the generator's estimate
// sizes for the autoscheduled variant.
const bool projection_check_registered =
    testing::register_kernel_check("projection", {[] {
                                                      const int64_t rows = 2 * tiled_seq + 1;
                                                      return std::max({projection_error(rows, 71, 45, rows, 11),
                                                                       projection_error(rows, 71, 45, rows, 15, 2.0f),
                                                                       projection_error(130, 100, 150, 130, 17)});
                                                  },
                                                  1e-5, [] { return projection_error(512, 2048, 2048, 9, 12); }}) &&
    testing::register_kernel_check("projection_gemv", {[] {
                                                           return std::max({projection_error(3, 71, 45, 3, 13),
                                                                            projection_error(3, 71, 45, 3, 16, 2.0f),
                                                                            projection_error(9, 71, 45, 9, 18)});
                                                       },
                                                       1e-5, [] { return projection_error(1, 2048, 2048, 1, 14); }}) &&
    register_16_bit_weight_checks(DType::BF16, "bf16") && register_16_bit_weight_checks(DType::F16, "f16") &&
    // bf16 pairs (x86): x of bf16 values, even widths (whole words), outputs and rows off the tiles.
    testing::register_kernel_check(
         "projection_bf16_pairs",
         {[] {
              const int64_t rows = 2 * tiled_seq + 1;
              return testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
                  return std::max({projection_error(rows, 72, 45, rows, 121, 0.0f, DType::BF16, DType::BF16),
                                   projection_error(rows, 72, 45, rows, 125, 2.0f, DType::BF16, DType::BF16),
                                   projection_error(130, 300, 150, 130, 127, 0.0f, DType::BF16, DType::BF16)});
              });
          },
          1e-5, [] {
              return testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
                  return projection_error(512, 2048, 2048, 9, 122, 0.0f, DType::BF16, DType::BF16);
              });
          }}) &&
    // The gemv's bf16 pairs: x of bf16 values, whole blocks of 32 inputs (one, three and 64), one
    // row and several, outputs off its tile of 4 and its tasks of 32, a clip.
    testing::register_kernel_check(
         "projection_gemv_bf16_pairs",
         {[] {
              return testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
                  return std::max({projection_error(1, 32, 45, 1, 131, 0.0f, DType::BF16, DType::BF16),
                                   projection_error(3, 96, 45, 3, 133, 2.0f, DType::BF16, DType::BF16),
                                   projection_error(9, 2048, 70, 9, 135, 0.0f, DType::BF16, DType::BF16)});
              });
          },
          1e-5, [] {
              return testing::with_bf16_form(Bf16DotForm::Pairs, [&] {
                  return projection_error(1, 2048, 2048, 1, 132, 0.0f, DType::BF16, DType::BF16);
              });
          }});

// bf16 weights multiply bf16 pairs where the form allows: the gemv's for whole blocks of inputs
// (kernel_contract.h), the GEMM's past the gemv's rows; else they are widened. Pairs are forced, so
// that any x86 CPU checks the choice (one without AVX512-BF16 runs the kernels' fallback).
TEST(ProjectionBf16Pairs, TakenForWholeBlocksOfInputs) {
    const bool pairs_here = testing::with_bf16_form(Bf16DotForm::Pairs, [] {
        return current_device() == Device::CPU && detail::bf16_pairs_chosen() ? 1.0 : 0.0;
    }) > 0;
    if (!pairs_here) GTEST_SKIP() << "no bf16 pairs kernels here";
    const auto kernel_run = [](Bf16DotForm form, int64_t rows, int64_t in) {
        return testing::only_kernel_ran([&] {
            EXPECT_LE(testing::with_bf16_form(
                          form, [&] { return projection_error(rows, in, 40, rows, 140, 0.0f, DType::BF16, DType::BF16); }),
                      1e-5);
        });
    };
    const int64_t block = kernel_contract::projection_gemv_pairs_block;
    const int64_t gemv_rows = kernel_contract::projection_gemv_max_rows_cpu;
    EXPECT_EQ(kernel_run(Bf16DotForm::Pairs, 1, 2 * block), "projection_gemv_bf16_pairs");
    EXPECT_EQ(kernel_run(Bf16DotForm::Pairs, gemv_rows, block), "projection_gemv_bf16_pairs");
    EXPECT_EQ(kernel_run(Bf16DotForm::Pairs, 1, 2 * block + 2), "projection_gemv_bf16");
    EXPECT_EQ(kernel_run(Bf16DotForm::Widened, 1, 2 * block), "projection_gemv_bf16");
    EXPECT_EQ(kernel_run(Bf16DotForm::Pairs, gemv_rows + 1, 2 * block), "projection_bf16_pairs");
}

}  // namespace
}  // namespace hattn
