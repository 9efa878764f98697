// A linear projection as a layer holds it: y = x W^T + b in float32, or BitLinear (BitNet b1.58:
// ternary weights quantised once at load, int8 activations per token; spec/attention.md §2).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "hattn/dtype.h"
#include "hattn/kernels/bitlinear.h"
#include "hattn/tensor.h"

namespace hattn {

class Linear {
public:
    Linear() = default;
    // W [out, in] as stored, b [out] or none; outputs clamped to [-clip, clip] where clip > 0
    // (OLMo 1's clip_qkv). W is kept in `dtype`: for bf16 and f16 as 16-bit values (rounded once
    // here; exact for a checkpoint's own type), which the projection kernels read in place. b is
    // rounded to `dtype` and kept in float32 (a bias is a few values).
    static Linear dense(Tensor weight, std::optional<Tensor> bias = std::nullopt, float clip = 0.0f,
                        DType dtype = DType::F32);
    // W [out, in] quantised to packed ternary weights now; the float weights are not kept.
    static Linear bitnet(const Tensor &weight);

    int64_t in() const { return ternary_ ? ternary_->in : in_; }
    int64_t out() const { return ternary_ ? ternary_->out : weight_.dim(0); }
    const std::optional<Tensor> &bias() const { return bias_; }
    // [out, in] as held by an f32 Linear (throws for a 16-bit one); empty for BitLinear.
    const Tensor &weight() const;
    // [out, in] as float32 in any type: a widened copy of 16-bit weights.
    Tensor widened_weight() const;
    // [out, in] as held, in its storage type (f32 for BitLinear's empty weight).
    StoredView stored_weight() const;
    const PackedTernary *ternary() const { return ternary_.get(); }  // null unless BitLinear
    // The bytes it holds: weight and bias as stored, or BitLinear's codes and scale.
    int64_t weight_bytes() const;

    // x [..., in] -> [..., out].
    Tensor apply(const Tensor &x) const;
    // The same into y [..., out] (contiguous), which may be a view of a larger tensor.
    void apply(const ConstTensorView &x, const TensorView &y) const;

private:
    // f32 values, or 16-bit ones two to a float32 word ([out, in / 2] words).
    Tensor weight_;
    DType dtype_ = DType::F32;
    int64_t in_ = 0;
    std::optional<Tensor> bias_;
    float clip_ = 0.0f;
    // BitLinear: packed once, shared by copies, and (on a GPU) kept there like dense weights.
    std::shared_ptr<const PackedTernary> ternary_;
    std::shared_ptr<detail::ResidentRegion> ternary_on_device_;
};

}  // namespace hattn
