// A linear projection as a layer holds it: y = x W^T + b in float32, or BitLinear (BitNet b1.58:
// ternary weights quantised once at load, int8 activations per token; spec/attention.md §2).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "hattn/kernels/bitlinear.h"
#include "hattn/tensor.h"

namespace hattn {

class Linear {
public:
    Linear() = default;
    // W [out, in] as stored, b [out] or none; outputs clamped to [-clip, clip] where clip > 0
    // (OLMo 1's clip_qkv).
    static Linear dense(Tensor weight, std::optional<Tensor> bias = std::nullopt, float clip = 0.0f);
    // W [out, in] quantised to packed ternary weights now; the float weights are not kept.
    static Linear bitnet(const Tensor &weight);

    int64_t in() const { return ternary_ ? ternary_->in : weight_.dim(1); }
    int64_t out() const { return ternary_ ? ternary_->out : weight_.dim(0); }
    const std::optional<Tensor> &bias() const { return bias_; }
    const Tensor &weight() const { return weight_; }  // [out, in]; empty for BitLinear
    const PackedTernary *ternary() const { return ternary_.get(); }  // null unless BitLinear
    // The bytes it holds: weight and bias as stored, or BitLinear's codes and scale.
    int64_t weight_bytes() const;

    // x [..., in] -> [..., out].
    Tensor apply(const Tensor &x) const;
    // The same into y [..., out] (contiguous), which may be a view of a larger tensor.
    void apply(const ConstTensorView &x, const TensorView &y) const;

private:
    Tensor weight_;
    std::optional<Tensor> bias_;
    float clip_ = 0.0f;
    // BitLinear: packed once, shared by copies, and (on a GPU) kept there like dense weights.
    std::shared_ptr<const PackedTernary> ternary_;
    std::shared_ptr<detail::ResidentRegion> ternary_on_device_;
};

}  // namespace hattn
