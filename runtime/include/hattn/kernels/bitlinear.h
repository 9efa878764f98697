// BitLinear projections (BitNet b1.58, spec/attention.md §2): ternary weights quantised once at
// load and packed 2 bits each; activations quantised to int8 per row at each call; an exact
// integer dot product in a Halide kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

struct PackedTernary {
    int64_t out = 0, in = 0;
    int64_t in_padded = 0;  // in rounded up to the kernel's multiple of 256; the padding weighs 0
    float scale = 1.0f;     // a_w = 1 / max(mean |W|, 1e-5)
    std::vector<uint8_t> codes;  // [out, in_padded / 4]: Wq + 1 in 2 bits, four to a byte, low first

    int64_t bytes() const { return static_cast<int64_t>(codes.size()); }
    int weight(int64_t o, int64_t k) const {  // Wq[o, k] in {-1, 0, 1}
        return ((codes[o * (in_padded / 4) + k / 4] >> (2 * (k % 4))) & 3) - 1;
    }
};

// Wq = clamp(round(W * a_w), -1, 1), rounding half to even, all in float32.
PackedTernary pack_ternary(const Tensor &weight);

// y [..., out] = (xq . Wq) / (a_x * a_w) with a_x = 127 / max(max_k |x[row, k]|, 1e-5) and
// xq = clamp(round(x * a_x), -128, 127), for x [..., in] (contiguous).
void bitlinear(const ConstTensorView &x, const PackedTernary &w, const TensorView &y);

}  // namespace hattn
