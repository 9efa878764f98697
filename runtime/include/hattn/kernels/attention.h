// The fused attention kernels over KV-cache storage.
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

// A boolean mask [B, 1, Sq, Sk] (True = masked) as bytes; Sk covers every visible key.
struct MaskView {
    const uint8_t *data = nullptr;
    Shape shape;
};

// out [B, Sq, H, D] = softmax(q k^T * scale) v per head, for q [B, Sq, H, D] against the first
// kv_len[b] tokens of the cache storage k_cache, v_cache [B, Hkv, capacity, D] (read in place).
// The queries are the last Sq of those tokens; `causal` hides keys after a query's position.
// Query head h reads KV head h / (H / Hkv). A query with no visible key outputs zeros. out may
// be q itself, but must not overlap the cache (it is read while out is written). The cache holds
// f32, bf16 or f16 values (a KVCache's keys() and values()); 16-bit caches run on the CPU.
//
// `sinks` (gpt-oss's attention sinks), when given, is [H]: head h's softmax also counts a key of
// score sinks[h] and value zero, which takes weight from the real keys and adds nothing.
// `softcap` (Gemma 2's attn_logit_softcapping), when positive, bounds each scaled score s to
// softcap * tanh(s / softcap) before the mask; 0 leaves the scores as they are.
void attention_prefill(const ConstTensorView &q, const StoredView &k_cache, const StoredView &v_cache,
                       const std::vector<int32_t> &kv_len, float scale, bool causal,
                       const MaskView *mask, const TensorView &out, const ConstTensorView *sinks = nullptr,
                       float softcap = 0.0f);

// One query per sequence: q and out are [B, H, D]; the key range is split across threads.
// `first_key`, when given, holds per sequence the first cached token its query sees (a sliding
// window's start, 0 <= first_key[b] <= kv_len[b]); otherwise every query sees tokens from 0.
// Sinks and softcap as in attention_prefill.
void attention_decode(const ConstTensorView &q, const StoredView &k_cache, const StoredView &v_cache,
                      const std::vector<int32_t> &kv_len, float scale, const TensorView &out,
                      const ConstTensorView *sinks = nullptr, const std::vector<int32_t> *first_key = nullptr,
                      float softcap = 0.0f);

}  // namespace hattn
