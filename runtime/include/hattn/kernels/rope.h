// Rotary position embedding (NeoX rotate-half on the first rotary_dim dims of each head).
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

// cos and sin of pos * base^(-2i / rotary_dim) for i < rotary_dim / 2, computed in double and
// stored as float, for positions [0, positions()). Grows on demand; a layer keeps one.
class RopeTable {
public:
    RopeTable(int64_t rotary_dim, double base);

    int64_t rotary_dim() const { return rotary_dim_; }
    int64_t positions() const { return positions_; }
    void reserve(int64_t positions);  // makes positions() >= the argument

    // [positions, rotary_dim / 2]. Resident on a GPU: uploaded once per growth, not per call.
    TensorView cos() const { return cos_.view(); }
    TensorView sin() const { return sin_.view(); }

private:
    int64_t rotary_dim_;
    double base_;
    int64_t positions_ = 0;
    Tensor cos_, sin_;
};

enum class RopeLayout {
    NeoX,         // pairs (i, i + rotary_dim / 2)
    Interleaved,  // GLM: de-interleave (x0, x2, .., x1, x3, ..), then NeoX; output de-interleaved
};

// y = rope(x): x and y are [B, S, H, D] (y may be a strided view, e.g. into a KV cache); token s
// of sequence b has position start[b] + s. The table must cover every position (call reserve).
void apply_rope(const TensorView &x, const RopeTable &table, const std::vector<int32_t> &start,
                const TensorView &y, RopeLayout layout = RopeLayout::NeoX);

}  // namespace hattn
