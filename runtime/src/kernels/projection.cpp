#include "hattn/kernels/projection.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernel_contract.h"
#include "halide_call.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

namespace {

// The rows of t [..., n] as the Halide matrix (n, rows): each row's n values contiguous, the rows
// one stride apart (a contiguous tensor, or a slice such as one head's [rows, n] of [rows, H, n],
// which then needs no copy). An output's rows must not overlap.
Halide::Runtime::Buffer<float> as_matrix(const ConstTensorView &t, const char *what, bool output) {
    require(t.rank() >= 1, [&] { return std::string("projection: ") + what + " must have at least one dimension"; });
    const int64_t cols = t.shape.back();
    const int64_t rows = cols == 0 ? 0 : t.size() / cols;
    if (t.is_contiguous()) return detail::halide_buffer(ConstTensorView(t.data, {rows, cols}));
    // The leading dims merge into one row dim where each (of extent above 1) steps over the ones
    // inside it whole, the innermost at a positive stride (0 would repeat rows).
    bool rows_merge = cols <= 1 || t.strides.back() == 1;
    std::optional<int64_t> first_stride;
    int64_t spanned = 1;  // the rows the dims inside the current one cover
    for (int d = t.rank() - 2; d >= 0 && rows_merge; d--) {
        if (t.shape[d] == 1) continue;
        if (!first_stride) {
            first_stride = t.strides[d];
            rows_merge = *first_stride > 0;
        } else {
            rows_merge = t.strides[d] == *first_stride * spanned;
        }
        spanned *= t.shape[d];
    }
    const int64_t row_stride = first_stride.value_or(std::max<int64_t>(cols, 1));  // or a single row
    require(rows_merge && (!output || rows <= 1 || row_stride >= cols), [&] {
        return std::string("projection: ") + what + " " + shape_to_string(t.shape) + " (strides " +
               shape_to_string(t.strides) + ") must be rows of contiguous values, one stride apart" +
               (output ? " and not overlapping" : "");
    });
    return detail::halide_buffer(ConstTensorView(t.data, {rows, cols}, {row_stride, 1}));
}

}  // namespace

void project(const ConstTensorView &x, const StoredView &weight, const ConstTensorView *bias,
             const TensorView &y, float clip) {
    // Before as_matrix reads their strides.
    detail::require_well_formed(x, "projection: input");
    detail::require_well_formed(ConstTensorView(static_cast<const float *>(weight.data), weight.shape, weight.strides),
                                "projection: weight");
    require(weight.dtype != DType::Int8, [&] { return std::string("projection: weights of int8 are not supported"); });
    if (bias) detail::require_well_formed(*bias, "projection: bias");
    detail::require_well_formed(y, "projection: output");
    require(weight.rank() == 2,
            [&] { return "projection: weight must be [out, in], got " + shape_to_string(weight.shape); });
    const int64_t out = weight.dim(0), in = weight.dim(1);
    // No inputs would make every output its bias; the kernels' tiles assume at least one.
    require(in > 0, [&] { return "projection: weight " + shape_to_string(weight.shape) + " has no inputs"; });
    require(x.rank() >= 1 && x.shape.back() == in, [&] {
        return "projection: input " + shape_to_string(x.shape) + " does not end in in=" + std::to_string(in) +
               " of weight " + shape_to_string(weight.shape);
    });
    Shape expected_y(x.shape.begin(), x.shape.end() - 1);
    expected_y.push_back(out);
    require(y.shape == expected_y, [&] {
        return "projection: output is " + shape_to_string(y.shape) + ", expected " + shape_to_string(expected_y);
    });
    if (bias) {
        require(bias->shape == Shape{out}, [&] {
            return "projection: bias is " + shape_to_string(bias->shape) + ", expected [" + std::to_string(out) + "]";
        });
    }
    require(clip == 0.0f || (std::isfinite(clip) && clip > 0.0f),
            [&] { return "projection: clip must be 0 (none) or positive and finite, got " + std::to_string(clip); });
    if (y.size() == 0) return;

    auto b = detail::halide_buffer(bias ? *bias : detail::resident_zeros(out));
    auto xb = as_matrix(x, "input", false);
    auto wb = detail::halide_storage_buffer(weight);
    auto yb = as_matrix(y, "output", true);
    // Few rows (decode, short prompts): the variant that streams W as stored instead of packing
    // it, up to the rows where it meets the GEMM (kernel_contract.h).
    const int64_t gemv_max_rows = current_device() == Device::CPU ? kernel_contract::projection_gemv_max_rows_cpu
                                                                     : kernel_contract::projection_gemv_max_rows_gpu;
    const bool few_rows = xb.dim(1).extent() <= gemv_max_rows;
    namespace k = detail::kernels;
#if defined(__x86_64__)
    // The gemv's bf16 pairs read W's values as stored, in whole blocks of inputs.
    if (few_rows && weight.dtype == DType::BF16 && in % kernel_contract::projection_gemv_pairs_block == 0 &&
        detail::bf16_pairs_chosen()) {
        return detail::run_kernel<k::projection_gemv_bf16_pairs>(xb.raw_buffer(), wb.raw_buffer(), b.raw_buffer(), clip,
                                                                 yb.raw_buffer());
    }
    // bf16 pairs read W as words of two weights: whole rows of them, 4-byte aligned.
    if (!few_rows && weight.dtype == DType::BF16 && in % 2 == 0 && wb.dim(0).stride() == 1 &&
        wb.dim(1).stride() % 2 == 0 && reinterpret_cast<uintptr_t>(weight.data) % 4 == 0 && detail::bf16_pairs_chosen()) {
        halide_dimension_t words[2] = {{0, static_cast<int32_t>(in / 2), 1, 0},
                                       {0, static_cast<int32_t>(out), wb.dim(1).stride() / 2, 0}};
        Halide::Runtime::Buffer<uint32_t> w_words(static_cast<uint32_t *>(wb.data()), 2, words);
        return detail::run_kernel<k::projection_bf16_pairs>(xb.raw_buffer(), w_words.raw_buffer(), b.raw_buffer(), clip,
                                                            yb.raw_buffer());
    }
#endif
    const auto run = [&](auto f32, auto bf16, auto f16) {
        using F32 = decltype(f32);
        using BF16 = decltype(bf16);
        using F16 = decltype(f16);
        if (weight.dtype == DType::BF16) return detail::run_kernel<BF16>(xb.raw_buffer(), wb.raw_buffer(), b.raw_buffer(), clip, yb.raw_buffer());
        if (weight.dtype == DType::F16) return detail::run_kernel<F16>(xb.raw_buffer(), wb.raw_buffer(), b.raw_buffer(), clip, yb.raw_buffer());
        detail::run_kernel<F32>(xb.raw_buffer(), wb.raw_buffer(), b.raw_buffer(), clip, yb.raw_buffer());
    };
    if (few_rows) {
        run(k::projection_gemv{}, k::projection_gemv_bf16{}, k::projection_gemv_f16{});
    } else {
        run(k::projection{}, k::projection_bf16{}, k::projection_f16{});
    }
}

}  // namespace hattn
