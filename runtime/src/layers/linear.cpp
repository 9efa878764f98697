#include "hattn/layers/linear.h"

#include <cmath>

#include "device_residency.h"
#include "hattn/error.h"
#include "hattn/kernels/projection.h"

namespace hattn {

Linear Linear::dense(Tensor weight, std::optional<Tensor> bias, float clip) {
    require(weight.rank() == 2,
            [&] { return "linear: weight must be [out, in], got " + shape_to_string(weight.shape()); });
    require(clip == 0.0f || (std::isfinite(clip) && clip > 0.0f),
            [&] { return "linear: clip must be 0 (none) or positive and finite, got " + std::to_string(clip); });
    require(!bias || bias->shape() == Shape{weight.dim(0)}, [&] {
        return "linear: bias " + shape_to_string(bias ? bias->shape() : Shape{}) + " does not match weight " +
               shape_to_string(weight.shape());
    });
    Linear l;
    l.weight_ = std::move(weight);
    l.bias_ = std::move(bias);
    l.clip_ = clip;
    // On a GPU the weights are uploaded once, at the first call, and stay there.
    l.weight_.keep_on_device(Residency::ReadOnly);
    if (l.bias_) l.bias_->keep_on_device(Residency::ReadOnly);
    return l;
}

Linear Linear::bitnet(const Tensor &weight) {
    Linear l;
    auto packed = std::make_shared<const PackedTernary>(pack_ternary(weight));
    if (packed->bytes() > 0) l.ternary_on_device_ = std::make_shared<detail::ResidentRegion>(
        const_cast<uint8_t *>(packed->codes.data()), packed->bytes() / static_cast<int64_t>(sizeof(float)),
        Residency::ReadOnly);
    l.ternary_ = std::move(packed);
    return l;
}

int64_t Linear::weight_bytes() const {
    const int64_t bias = bias_ ? bias_->size() * static_cast<int64_t>(sizeof(float)) : 0;
    if (ternary_) return ternary_->bytes() + static_cast<int64_t>(sizeof(ternary_->scale)) + bias;
    return weight_.size() * static_cast<int64_t>(sizeof(float)) + bias;
}

Tensor Linear::apply(const Tensor &x) const {
    Shape shape = x.shape();
    require(!shape.empty(), "linear: input must have at least one dimension");
    shape.back() = out();
    Tensor y(shape, Tensor::unset);
    apply(x.view(), y.view());
    return y;
}

void Linear::apply(const ConstTensorView &x, const TensorView &y) const {
    if (ternary_) {
        bitlinear(x, *ternary_, y);
        return;
    }
    const ConstTensorView b = bias_ ? bias_->view() : ConstTensorView();
    project(x, weight_.view(), bias_ ? &b : nullptr, y, clip_);
}

}  // namespace hattn
