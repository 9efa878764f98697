// A linear projection as a layer holds it: y = x W^T + b in float32, or BitLinear (BitNet b1.58:
// ternary weights quantised once at load, int8 activations per token; spec/attention.md §2).
#pragma once

#include <cstdint>
#include <optional>

#include "hattn/tensor.h"

namespace hattn {

class Linear {
public:
    Linear() = default;
    // W [out, in] as stored, b [out] or none.
    static Linear dense(Tensor weight, std::optional<Tensor> bias = std::nullopt);

    int64_t in() const { return weight_.dim(1); }
    int64_t out() const { return weight_.dim(0); }
    const std::optional<Tensor> &bias() const { return bias_; }

    // x [..., in] -> [..., out].
    Tensor apply(const Tensor &x) const;

private:
    Tensor weight_;
    std::optional<Tensor> bias_;
};

}  // namespace hattn
