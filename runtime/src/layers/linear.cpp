#include "hattn/layers/linear.h"

#include <cmath>

#include "device_residency.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernels/projection.h"

namespace hattn {

namespace {

// W's values in a 16-bit type, two to a float32 word: [out, in / 2] words (in is even).
Tensor stored_as(DType dtype, const Tensor &weight) {
    Tensor words({weight.dim(0), weight.dim(1) / 2}, Tensor::unset);
    to_bits(dtype, weight.data(), reinterpret_cast<uint16_t *>(words.data()), weight.size());
    return words;
}

}  // namespace

Linear Linear::dense(Tensor weight, std::optional<Tensor> bias, float clip, DType dtype) {
    require(weight.rank() == 2,
            [&] { return "linear: weight must be [out, in], got " + shape_to_string(weight.shape()); });
    require(clip == 0.0f || (std::isfinite(clip) && clip > 0.0f),
            [&] { return "linear: clip must be 0 (none) or positive and finite, got " + std::to_string(clip); });
    require(!bias || bias->shape() == Shape{weight.dim(0)}, [&] {
        return "linear: bias " + shape_to_string(bias ? bias->shape() : Shape{}) + " does not match weight " +
               shape_to_string(weight.shape());
    });
    require(dtype == DType::F32 || ((dtype == DType::BF16 || dtype == DType::F16) && weight.dim(1) % 2 == 0), [&] {
        return std::string("linear: weights of ") + type_name(dtype) + " " + shape_to_string(weight.shape()) +
               " are not supported (f32, or bf16 and f16 with an even number of inputs)";
    });
    if (bias) round_to(dtype, bias->data(), bias->size());
    Linear l;
    l.dtype_ = dtype;
    l.in_ = weight.dim(1);
    l.weight_ = dtype == DType::F32 ? std::move(weight) : stored_as(dtype, weight);
    l.bias_ = std::move(bias);
    l.clip_ = clip;
    // On a GPU the weights are uploaded once, at the first call, and stay there.
    l.weight_.keep_on_device(Residency::ReadOnly);
    if (l.bias_) l.bias_->keep_on_device(Residency::ReadOnly);
    return l;
}

const Tensor &Linear::weight() const {
    require(dtype_ == DType::F32, [&] {
        return std::string("linear: its weights are held as ") + type_name(dtype_) + " (widened_weight() gives float32)";
    });
    return weight_;
}

Tensor Linear::widened_weight() const {
    if (dtype_ == DType::F32) return weight_;
    Tensor widened({out(), in()}, Tensor::unset);
    widen_into(stored_weight(), widened.view());
    return widened;
}

StoredView Linear::stored_weight() const {
    if (dtype_ == DType::F32) return weight_.view();
    return StoredView(weight_.data(), dtype_, {weight_.dim(0), in_}, {});
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
    return weight_.size() * static_cast<int64_t>(sizeof(float)) + bias;  // (16-bit values: two a word)
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
    project(x, stored_weight(), bias_ ? &b : nullptr, y, clip_);
}

}  // namespace hattn
