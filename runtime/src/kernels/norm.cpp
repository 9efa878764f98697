#include "hattn/kernels/norm.h"

#include <cmath>
#include <string>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

namespace {

void row_norm(bool layer, const ConstTensorView &x, const Tensor &weight, const Tensor &bias, float eps,
              const TensorView &y) {
    const char *name = layer ? "layer_norm" : "rms_norm";
    // [n], or [k, n] with k dividing the rows.
    const auto fits = [&](const Tensor &t) {
        return t.rank() >= 1 && x.rank() == 2 && t.shape().back() == x.dim(1) &&
               (t.rank() == 1 || (t.rank() == 2 && t.dim(0) > 0 && x.dim(0) % t.dim(0) == 0));
    };
    require(x.rank() == 2 && y.shape == x.shape && fits(weight) && fits(bias), [&] {
        return std::string(name) + ": x " + shape_to_string(x.shape) + ", y " + shape_to_string(y.shape) + ", weight " +
               shape_to_string(weight.shape()) + " and bias " + shape_to_string(bias.shape()) +
               " do not fit (each [n], or [k, n] with k dividing the rows)";
    });
    // eps keeps a zero (or, for LayerNorm, constant) row finite; the kernels are fast-math.
    require(std::isfinite(eps) && eps > 0,
            [&] { return std::string(name) + ": eps must be positive and finite, got " + std::to_string(eps); });
    if (x.size() == 0) return;
    auto xb = detail::halide_buffer(x), yb = detail::halide_buffer(y);
    // Both as [k, n] (k = 1 for one row of weights), which Halide sees as (n, k).
    const auto rows_of = [](const Tensor &t) {
        return t.rank() == 2 ? t.view() : ConstTensorView(t.data(), {1, t.dim(0)});
    };
    auto wb = detail::halide_buffer(rows_of(weight)), bb = detail::halide_buffer(rows_of(bias));
    if (layer) {
        detail::run_kernel<detail::kernels::layer_norm>(xb.raw_buffer(), wb.raw_buffer(), bb.raw_buffer(), eps,
                                                        yb.raw_buffer());
    } else {
        detail::run_kernel<detail::kernels::rms_norm>(xb.raw_buffer(), wb.raw_buffer(), bb.raw_buffer(), eps,
                                                      yb.raw_buffer());
    }
}

}  // namespace

void rms_norm(const ConstTensorView &x, const Tensor &weight, float eps, const TensorView &y) {
    // RMSNorm never reads the bias; the kernel gets the weight again in its place.
    row_norm(false, x, weight, weight, eps, y);
}

void layer_norm(const ConstTensorView &x, const Tensor &weight, const Tensor &bias, float eps, const TensorView &y) {
    row_norm(true, x, weight, bias, eps, y);
}

}  // namespace hattn
