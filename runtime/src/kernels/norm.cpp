#include "hattn/kernels/norm.h"

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

namespace {

void row_norm(bool layer, const ConstTensorView &x, const Tensor &weight, const Tensor &bias, float eps,
              const TensorView &y) {
    const char *name = layer ? "layer_norm" : "rms_norm";
    require(x.rank() == 2 && y.shape == x.shape && weight.shape() == Shape{x.dim(1)} &&
                bias.shape() == Shape{x.dim(1)},
            std::string(name) + ": x " + shape_to_string(x.shape) + ", y " + shape_to_string(y.shape) +
                " and weight " + shape_to_string(weight.shape()) + " do not fit");
    if (x.size() == 0) return;
    auto xb = detail::halide_buffer(x), yb = detail::halide_buffer(y);
    auto wb = detail::halide_buffer(weight.view()), bb = detail::halide_buffer(bias.view());
    detail::call_kernel(name, layer ? detail::layer_norm_kernel() : detail::rms_norm_kernel(), xb.raw_buffer(),
                        wb.raw_buffer(), bb.raw_buffer(), eps, yb.raw_buffer());
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
