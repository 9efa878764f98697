// The GLM-5 DSA kernels (generators/dsa/).
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

// Indexer scores of the new queries against every cached key: iq [B, S, IH, ID], ik [B, capacity,
// ID] (f32, bf16 or f16), head_w [B, S, IH] -> scores [B, S, capacity]; entries past a query's
// position are 0.
void dsa_index_scores(const ConstTensorView &iq, const StoredView &ik, const ConstTensorView &head_w,
                      const std::vector<int32_t> &kv_len, float scale, const TensorView &scores);

// Attention of q [B, S, H, Dk] over the keys its row of `indices` [B, S, K] (-1 = none) selects:
// keys [B, capacity, Hk, Dk], values [B, capacity, Hk, Dv] (views may be strided) -> out
// [B, S, H, Dv]. Every index must be -1 or inside the cache (checked: an error, never a stray read).
void dsa_sparse_attention(const ConstTensorView &q, const ConstTensorView &keys, const ConstTensorView &values,
                          const std::vector<int32_t> &indices, int64_t k, float scale, const TensorView &out);

// An int8 latent's values per scale (spec/attention.md section 5), as the kernels read them.
constexpr int64_t dsa_latent_group = 128;

// The same in the latent (GLM's absorbed form): every head of q [B, S, H, R + Rd] attends over the
// latent rows as one shared head, keys [latent | rotary] and values the latent: latent [B,
// capacity, R] (f32, bf16, f16, or int8 with a scale per group of dsa_latent_group values), rotary
// [B, capacity, Rd] (f32, bf16 or f16), read in place -> out [B, S, H, R].
void dsa_latent_attention(const ConstTensorView &q, const StoredView &latent, const StoredView &rotary,
                          const std::vector<int32_t> &indices, int64_t k, float scale, const TensorView &out);

}  // namespace hattn
