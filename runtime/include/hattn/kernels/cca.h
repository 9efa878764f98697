// The CCA latent query/key kernel (generators/cca/qk_latent.h).
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/kernels/rope.h"
#include "hattn/tensor.h"

namespace hattn {

// Convolution weights: w0 [P, 1, k0], b0 [P] and b1 [P] as stored; the grouped conv's weight w1
// [P, dh, k1] as cca_grouped_by_output gives it (made once, where a layer loads it).
struct CcaConvWeights {
    Tensor w0, b0, w1_by_output, b1;
};

// w1 [P, dh, k1] as stored, in the layout the kernel reads: output channels innermost, followed by
// zeros for the kernel's register tiles past the last (cca_grouped_padding(), a few channels):
// [k1, dh, P + cca_grouped_padding()].
Tensor cca_grouped_by_output(const Tensor &w1);
int64_t cca_grouped_padding();

// From qk [B, pad + S, P] (pad = (k0 - 1) + (k1 - 1) history rows, then the new tokens' packed
// down-projection), computes the normalised, rotated q [B, S, H, dh] and k [B, S, Hkv, dh].
// key_scale has Hkv entries; token s of sequence b has position start[b] + s.
void cca_qk_latent(const ConstTensorView &qk, const CcaConvWeights &conv, const Tensor &key_scale,
                   const RopeTable &rope, const std::vector<int32_t> &start, bool qk_mean,
                   float norm_eps, const TensorView &q, const TensorView &k);

}  // namespace hattn
