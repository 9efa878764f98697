// The CCA latent query/key kernel (generators/cca/qk_latent.h).
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/kernels/rope.h"
#include "hattn/tensor.h"

namespace hattn {

// Convolution weights as stored: w0 [P, 1, k0], b0 [P], w1 [P, dh, k1], b1 [P].
struct CcaConvWeights {
    Tensor w0, b0, w1, b1;
};

// From qk [B, pad + S, P] (pad = (k0 - 1) + (k1 - 1) history rows, then the new tokens' packed
// down-projection), computes the normalised, rotated q [B, S, H, dh] and k [B, S, Hkv, dh].
// key_scale has Hkv entries; token s of sequence b has position start[b] + s.
void cca_qk_latent(const ConstTensorView &qk, const CcaConvWeights &conv, const Tensor &key_scale,
                   const RopeTable &rope, const std::vector<int32_t> &start, bool qk_mean,
                   float norm_eps, const TensorView &q, const TensorView &k);

}  // namespace hattn
