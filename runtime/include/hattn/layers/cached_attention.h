// Cached MHA / GQA attention (spec/attention.md §1; the seed's CachedAttention).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hattn/config.h"
#include "hattn/dtype.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/rope.h"
#include "hattn/kv_cache.h"
#include "hattn/layers/linear.h"
#include "hattn/safetensors.h"
#include "hattn/stored_tensor.h"
#include "hattn/tensor.h"

namespace hattn {

struct CachedAttentionConfig {
    // Whose names the weights have: the seed module's (query_projection, ...), a Hugging Face
    // Llama-family attention's (q_proj, k_proj, v_proj, o_proj), Phi-3's (q, k and v stacked in
    // that order in qkv_proj; o_proj), Phi-2's (q_proj, k_proj, v_proj; dense), or GPT-NeoX's and
    // Falcon's (query_key_value holding, per KV head, its query heads' rows, then its key's and
    // value's: for GPT-NeoX each head's q, k and v in turn; dense).
    enum class Names { Seed, HuggingFace, HuggingFaceFusedQkv, HuggingFaceDenseOutput, GroupedQueryKeyValue };

    int64_t embedding_dimension = 0;  // E
    int64_t heads = 0;                // H
    int64_t kv_heads = 0;             // Hkv (H for multi_head)
    int64_t head_dimension = 0;       // D
    bool bias = true;         // the query, key and value projections have biases
    bool output_bias = true;  // the output projection has one (the seed: both or neither)
    std::optional<double> rope_base;  // none: no RoPE
    // RoPE turns the first this many dims of each head and passes the rest (the
    // partial_rotary_factor of Phi-3, GLM and StableLM); 0: the whole head.
    int64_t rotary_dimension = 0;
    RopeScaling rope_scaling;         // Hugging Face configs only (the seed has none)
    // Which dims RoPE pairs: (i, i + D/2), or (2i, 2i + 1) as Cohere's, GLM's and Llama 4's do. The
    // interleaved rotation leaves each head's dims de-interleaved (evens, then odds) in q and in the
    // cached keys: the same scores and outputs, but a cache filled from elsewhere must match it.
    RopeLayout rope_layout = RopeLayout::NeoX;
    // Hugging Face configs only (Mistral 7B v0.1's 4096): a query sees at most this many keys,
    // itself included; where the layer is not causal, those as near after it too: the query at
    // position p sees the keys |p - j| < window. A caller's mask hides keys within it too.
    std::optional<int64_t> sliding_window;
    // Self-attention's query at position p sees the keys j <= p (causal), or every key of its
    // sequence, later ones too (false: an encoder's bidirectional attention, EmbeddingGemma's
    // use_bidirectional_attention). Such a layer has no prefill/decode split: it takes no cache and
    // no decode step, and refuses them. Not with attention_chunk.
    bool causal = true;
    // Hugging Face configs only (Llama 4's attention_chunk_size, on its layers with RoPE): the query
    // at position p sees the keys j <= p of its own chunk of this many positions, j / C == p / C.
    // A caller's mask hides keys within it too.
    std::optional<int64_t> attention_chunk;
    // Hugging Face configs only: an RMSNorm of the projected queries and keys before RoPE, with
    // weights q_norm.weight and k_norm.weight, over each head's D (Qwen3, Gemma 3) or over all of
    // a token's heads at once, H·D and Hkv·D (OLMo 2); or a LayerNorm without bias over each head's
    // D with each head's own weights, [H, D] and [Hkv, D] (Cohere's use_qk_norm; StableLM's
    // qk_layernorm, q_layernorm.norms.<h>.weight); or an RMSNorm
    // without weights over each head's D (Llama 4's L2 norm, which transformers applies after RoPE:
    // the same, as RoPE keeps each head's sum of squares).
    struct QkNorm {
        enum class Span { EachHead, AllHeads };
        Span span = Span::EachHead;
        double eps = 1e-6;
        bool weight_plus_one = false;   // Gemma 3: the norm scales by 1 + w, w as stored
        bool centred = false;           // a LayerNorm (mean removed, no bias) rather than an RMSNorm
        bool weights_per_head = false;  // EachHead with each head's own weights, [heads, D]
        // With weights_per_head, each head's weights in a module of its own (StableLM:
        // q_layernorm.norms.<h>.weight and k_layernorm...) instead of q_norm.weight [heads, D].
        bool weights_in_head_modules = false;
        bool weighted = true;           // false: no weights (Llama 4), nothing read
        // The weights' modules: q_norm and k_norm (Hunyuan: query_layernorm and key_layernorm;
        // StableLM's per-head modules: q_layernorm and k_layernorm).
        std::string query_module = "q_norm", key_module = "k_norm";
        // Hunyuan norms the rotated q and k (the others norm them as projected, before RoPE).
        bool after_rope = false;
    };
    std::optional<QkNorm> qk_norm;
    // Hugging Face configs only (Llama 4's attn_temperature_tuning, on its layers without RoPE;
    // Ministral 3's llama_4_scaling_beta, on every layer): the query at position p is multiplied by
    // log(1 + floor((p + offset) / floor_scale)) * scale + 1, which is 1 below position
    // floor_scale - offset. Llama 4 counts from 1 (offset 1), Ministral 3 from 0.
    struct QueryTemperature {
        double floor_scale = 8192.0;
        double scale = 0.1;
        int64_t position_offset = 1;
    };
    std::optional<QueryTemperature> query_temperature;
    // Hugging Face configs only (OLMo 1's clip_qkv): q, k and v are clamped to [-clip, clip] as
    // projected; none: not clamped.
    std::optional<double> qkv_clip;
    // The scores' scale; none: 1 / sqrt(D). Gemma 2 and 3: query_pre_attn_scalar^-1/2; Granite:
    // attention_multiplier.
    std::optional<double> attention_scale;
    // Hugging Face configs only (gpt-oss): each query head's softmax also counts a learned sink, a
    // key of score sinks[h] and value zero (weight `sinks` [H]).
    bool sinks = false;
    // Hugging Face configs only (Gemma 2's attn_logit_softcapping): each scaled score s becomes
    // softcap * tanh(s / softcap) before the mask and the softmax; none: scores as they are.
    std::optional<double> score_softcap;
    // Which layer of its model this is, where a config was read for one (Gemma 3's layers differ
    // by index); a layer built from weights whose prefix names another index is refused.
    std::optional<int64_t> layer;
    Names names = Names::Seed;

    // The seed's constructor keys, defaults and validation; errors name the key and values. A
    // config with `hidden_size` or `model_type` and no `embedding_dimension` is a Hugging Face
    // config.json (a multimodal one's text_config), read for the model types docs/models.md lists,
    // whose attention is this layer's math, with each one's keys and class defaults; what such a
    // model does that this layer does not (another model type, RoPE scaling, bidirectional
    // attention, layer_types value) is refused, naming the key. A model whose layers differ by
    // index (sliding or full, with RoPE or without) needs the second form.
    static CachedAttentionConfig from(const ConfigReader &config);
    static CachedAttentionConfig from(const ConfigReader &config, int64_t layer);
    // The layer the weights' prefix names ("model.layers.N.self_attn."): the second form where the
    // prefix names one and the config is a Hugging Face one, else the first.
    static CachedAttentionConfig from(const ConfigReader &config, const Weights &weights);
    // What a Hugging Face config states that its model's attention ignores on purpose, as
    // transformers does (Gemma 3's attn_logit_softcapping): a line each, naming the key and why.
    static std::vector<std::string> unused_keys(const ConfigReader &config);
    // How a model's layers differ by index where a rule says it: p where every p-th layer (p - 1,
    // 2p - 1, ...) reads otherwise than the others, so layer i reads as layer i % p; 1 where every
    // layer reads alike (a seed config too); 0 where a list says it (layer_types, no_rope_layers).
    static int64_t layer_period(const ConfigReader &config);

    // Not from a config file: the caller's choice (hattn run's --dtype and --kv-dtype, a case's
    // dtype and kv_dtype). The cache make_cache() builds holds kv_dtype values.
    StorageTypes storage;

    // Throws Error naming the field if this config describes no layer (sizes, windows, scales,
    // norms). The constructor calls it, so a config built by hand is checked like a read one;
    // from()'s own checks come first and name the file's keys.
    void validate() const;

    // The bytes a cache of this layer takes per token (keys and values of every KV head) in a
    // storage type: int8 counts each group's codes and its float32 scale (spec/attention.md §5).
    int64_t cache_bytes_per_token(DType kv_dtype) const;
};

class CachedAttention {
public:
    // Weights under the names config.names says; `weights` may carry a prefix ("model.layers.3.self_attn.").
    CachedAttention(const CachedAttentionConfig &config, const Weights &weights);
    // A Hugging Face layer's index comes from the weights' prefix ("model.layers.N.self_attn.").
    CachedAttention(const ConfigReader &config, const Weights &weights);

    const CachedAttentionConfig &config() const { return config_; }
    StorageTypes storage_types() const { return config_.storage; }
    // The bytes of the weights it holds, and of its cache per token (keys and values).
    int64_t weight_bytes() const;
    int64_t cache_bytes_per_token() const;

    // A generation cache for `batch` sequences of up to `capacity` tokens. A sliding-window
    // layer's is a sliding cache (KVCache::sliding) that keeps each sequence's last W - 1 tokens
    // and sliding_cache_rollback more, in W - 1 + sliding_cache_rollback + max(W, 256) rows
    // whatever the capacity (fewer where the capacity is smaller); a layer that attends in chunks
    // of C tokens, likewise with W = C (a query sees at most the C - 1 keys before it). A call
    // whose tokens its rows cannot take (a prompt longer than them) attends over a temporary copy
    // of the kept and new tokens, as large as the call. A bidirectional layer (causal false) refuses.
    KVCache make_cache(int64_t batch, int64_t capacity) const;
    // How far back truncate_to can take a sliding-window layer's cache from make_cache, from the
    // length an append left (speculative decoding's rejected tokens); a cache of its own
    // (KVCache::sliding) may keep more.
    static constexpr int64_t sliding_cache_rollback = 256;

    // The seed's forward: queries from query_input [B, S, E]; with a conditioning cache, keys and
    // values from it (cross-attention: no causal mask, no RoPE), and a generation cache given too
    // is left as it is (as the seed leaves it); otherwise from key_input and
    // value_input [B, S, E] (pass x for all three for self-attention), causal unless the config
    // says otherwise, appended to the generation cache when one is given. mask [B, 1, S, Sk]
    // (True = masked) is optional.
    Tensor forward(const Tensor &query_input, const Tensor *key_input, const Tensor *value_input,
                   const MaskView *mask = nullptr, KVCache *generation_cache = nullptr,
                   const ConditioningCache *conditioning_cache = nullptr) const;

    // Self-attention of x [B, S, E], causal unless the config says otherwise. With a cache, the S
    // tokens are appended after what it holds (positions continue from each sequence's length) and
    // attend to all of it; without, x attends to itself. mask [B, 1, S, Sk] (True = masked) is
    // optional. Returns [B, S, E]. On any error the cache is unchanged.
    Tensor self_attention(const Tensor &x, KVCache *cache = nullptr, const MaskView *mask = nullptr) const;

    // One token per sequence (x_t [B, 1, E]) through the cache, with the split-KV decode kernel.
    // A bidirectional layer refuses it, and a cache given to self_attention or forward.
    Tensor decode_step(const Tensor &x_t, KVCache &cache) const;

    // Keys and values of a static context [B, Sk, E] (no RoPE), computed once.
    ConditioningCache conditioning_cache(const Tensor &key_input, const Tensor &value_input) const;

    // Cross-attention of x [B, S, E] to a conditioning cache: no causal mask, no RoPE.
    Tensor cross_attention(const Tensor &x, const ConditioningCache &context,
                           const MaskView *mask = nullptr) const;

    // The same calls over activations in any storage type: a caller's f32, bf16 or f16 memory
    // (StoredView, or a StoredTensor's view()), converted once, and the output in the layer's dtype.
    StoredTensor self_attention(const StoredView &x, KVCache *cache = nullptr, const MaskView *mask = nullptr) const;
    StoredTensor decode_step(const StoredView &x_t, KVCache &cache) const;
    ConditioningCache conditioning_cache(const StoredView &key_input, const StoredView &value_input) const;
    StoredTensor cross_attention(const StoredView &x, const ConditioningCache &context,
                                 const MaskView *mask = nullptr) const;

private:
    // The keys and values [B, Hkv, rows, D] that a call's queries attend to: a cache's storage, a
    // copy of a sliding cache's rows and the new tokens, or the new tokens alone. Sequence b's row
    // r holds position row_0[b] + r.
    struct KeyStore {
        StoredView keys, values;
        std::vector<int32_t> row_0;
    };
    // Self-attention of the new tokens (queries from x, keys and values from their inputs),
    // appended to `cache` when one is given (without, the kernels read them where they were
    // projected): the checks, the projections, the key store, the attention, then the commit.
    Tensor attend_new_tokens(const Tensor &x, const Tensor &key_input, const Tensor &value_input, KVCache *cache,
                             const MaskView *mask) const;
    // A call's inputs, cache and mask checked against the layer, before anything is computed.
    void check_call(const Tensor &x, const Tensor &key_input, const Tensor &value_input, const KVCache *cache,
                    const MaskView *mask) const;
    // The new tokens of a call: q [B, S, H, D], k and v [B, S, Hkv, D]; sequence b's first at
    // position start[b], its last at lengths[b] - 1.
    struct NewTokens {
        Tensor q, k, v;
        std::vector<int32_t> start, lengths;
    };
    // q, k and v projected, QK-normed, rotated and (Llama 4) temperature-scaled.
    void project_new_tokens(const Tensor &x, const Tensor &key_input, const Tensor &value_input, NewTokens &t) const;
    // Where the kernels read the keys: the cache's rows (the new ones written past its end, not
    // yet committed), a copy of a sliding cache's kept rows and the new ones (into window_keys and
    // window_values) where its rows cannot take them (`in_rows` false), or the new tokens alone.
    KeyStore store_keys(const NewTokens &t, KVCache *cache, bool in_rows, Tensor &window_keys,
                        Tensor &window_values) const;
    // The new queries against the store: one split-KV decode call, windows, chunks or one prefill.
    void attend(const NewTokens &t, const KeyStore &store, const MaskView *mask, Tensor &attended) const;
    // Self-attention of several new tokens where a sequence is longer than the sliding window (a
    // decode step without a mask passes each window's start to the decode kernel instead): q and
    // attended [B, S, H, D], the store holding every key they reach. The caller's mask (if any)
    // hides keys within the window too.
    void attend_in_windows(const Tensor &q, const KeyStore &store, const std::vector<int32_t> &start,
                           const std::vector<int32_t> &lengths, const MaskView *mask, Tensor &attended) const;
    // The same where a sequence passes the first attention chunk: a call per chunk the new tokens reach.
    void attend_in_chunks(const Tensor &q, const KeyStore &store, const std::vector<int32_t> &start,
                          const std::vector<int32_t> &lengths, const MaskView *mask, Tensor &attended) const;
    // Sequence b's new queries at positions [p0, p1) (its first new token at `start`) against the
    // store's keys at positions [first, end), causal or not as the layer is (causal: end is p1), hiding the keys
    // outside `window` (if given: |p - j| >= window, or j <= p - window where causal) or that the
    // caller's mask [B, 1, S, >= end] (if any) hides.
    struct QueryRows {
        int64_t b, start, p0, p1, first, end;
    };
    void attend_rows(const Tensor &q, const KeyStore &store, const QueryRows &rows, const MaskView *caller_mask,
                     std::optional<int64_t> window, Tensor &attended) const;
    // q, k or v projected: [B, S, heads, D], then normed where `norm` holds a QK-norm's weight. On a
    // GPU it stays there for the next kernel.
    Tensor project_heads(const Tensor &x, const Linear &projection, int64_t heads,
                         const std::optional<Tensor> &norm = std::nullopt) const;
    // y [B, S, heads, D] normed by the QK-norm whose weight is `norm`.
    Tensor qk_normed(const Tensor &y, const Tensor &norm) const;
    Tensor output(const Tensor &attended) const;  // [B, S, H, D] -> [B, S, E]
    // The RoPE table of a call turning positions [first, end): past the original context
    // LongRoPE's long one, or dynamic NTK's of the call's own base; else the layer's.
    std::shared_ptr<const RopeTable> rope_table(int64_t first, int64_t end) const;
    void check_input(const Tensor &x, const char *what) const;
    // Where an output overflowed: the input's largest magnitude and the largest weight, named.
    std::string weights_and(const Tensor &input) const;
    // A bidirectional layer refuses a cache: a query would miss the keys of later calls.
    void require_causal_for_cache() const;
    // How far back a query reaches where a window or chunk bounds it, its own key included: the
    // window W (a bidirectional window reaches as far forward too), or the chunk C (a query sees
    // its chunk's keys up to itself); none otherwise. A sliding cache keeps the keys it reaches.
    std::optional<int64_t> keys_reached() const;
    float scale() const;
    float softcap() const;  // as the kernels take it: 0 for none
    // attention_prefill and attention_decode with this layer's scale, sinks and soft-capping.
    // An activation as the layer stores it: rounded to its dtype.
    void stored(Tensor &activation) const;
    void prefill_kernel(const ConstTensorView &q, const StoredView &keys, const StoredView &values,
                        const std::vector<int32_t> &lengths, bool causal, const MaskView *mask,
                        const TensorView &out) const;
    void decode_kernel(const ConstTensorView &q, const StoredView &keys, const StoredView &values,
                       const std::vector<int32_t> &lengths, const std::vector<int32_t> &first_key,
                       const TensorView &out) const;

    CachedAttentionConfig config_;
    Linear query_, key_, value_, output_;
    std::optional<Tensor> query_norm_, key_norm_;  // QK-norm weights: [D], [H·D] and [Hkv·D], or [H, D] and [Hkv, D]
    std::optional<Tensor> qk_norm_bias_;           // zeros [D], where the QK-norm is a LayerNorm
    std::optional<Tensor> sinks_;                  // [H], where config.sinks
    std::optional<GrowingRopeTable> rope_;
    // LongRope: the table of calls whose positions pass the original context (transformers picks
    // one set of factors per call, by its last position).
    std::optional<GrowingRopeTable> long_rope_;
    // Llama 4's query temperature, as a table the rope kernel scales the queries by.
    std::optional<GrowingRopeTable> query_temperature_;
};

}  // namespace hattn
