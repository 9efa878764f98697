// Attention in a compressed latent: CCA and CCGQA (spec/attention.md §2, the seed's modules) and
// ZAYA1's CCA (§3). One implementation; the three differ in configuration and weight names only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hattn/config.h"
#include "hattn/dtype.h"
#include "hattn/kernels/cca.h"
#include "hattn/kernels/rope.h"
#include "hattn/kv_cache.h"
#include "hattn/layers/layer_identity.h"
#include "hattn/layers/linear.h"
#include "hattn/safetensors.h"
#include "hattn/stored_tensor.h"
#include "hattn/tensor.h"

namespace hattn {

struct LatentAttentionConfig {
    int64_t hidden = 0;     // E
    int64_t heads = 0;      // H
    int64_t kv_heads = 0;   // Hkv
    int64_t head_dim = 0;   // dh (ZAYA: head_dim)
    int num_conv_layers = 2;
    int64_t conv_kernel_seq = 4, conv_kernel_ch = 3;  // k0, k1 of the layers in use
    bool qk_mean = true, value_shift = true;
    bool causal = true;     // decoder mode (attention); convolutions and value shift are always causal
    bool bitnet = false;    // BitLinear projections
    bool bias = false;      // ZAYA attention_bias: projections carry biases
    double rope_base = 10000.0;
    int64_t rotary_dim = 0;   // dims rotated per head (dh, or ZAYA's partial share)
    float norm_eps = 1e-6f;
    bool zaya_names = false;  // ZAYA weight names, conv biases, per-head key temperature
    // Not from a config file: the caller's choice (spec/attention.md section 5). Weights and
    // activations are held in dtype; the state's K/V cache in kv_dtype (16-bit rows need an even
    // head_dim), its qk rows and delayed value half in dtype.
    StorageTypes storage;

    int64_t query_rank() const { return heads * head_dim; }      // Lq
    int64_t kv_rank() const { return kv_heads * head_dim; }      // Lkv
    int64_t packed() const { return query_rank() + kv_rank(); }  // P
    // Rows of raw qk history that decode keeps: (k0 - 1) + (k1 - 1) of the layers in use.
    int64_t history() const {
        return (num_conv_layers >= 1 ? conv_kernel_seq - 1 : 0) + (num_conv_layers >= 2 ? conv_kernel_ch - 1 : 0);
    }

    // The seed's keys (`cca_*` or `ccgqa_*`), defaults and validation; errors name key and values.
    static LatentAttentionConfig cca(const ConfigReader &config, bool grouped);
    // ZAYA1's config.json keys.
    static LatentAttentionConfig zaya(const ConfigReader &config);

    // Throws Error naming the field if this config describes no layer. The constructor calls it,
    // so a config built by hand is checked like a read one; cca()'s and zaya()'s own checks come
    // first and name the file's keys.
    void validate() const;
};

// Per batch of sequences: the compressed K/V cache (Lkv values each per token, in the layer's
// kv_dtype) and what the causal convolutions and the value shift need from the past. Made by
// LatentAttention::make_state; its parts change together, so a sequence can be reset or forked but
// not truncated (the convolutions would need raw rows from before the cut, which are not kept).
class LatentState {
public:
    int64_t batch() const { return kv_.batch(); }
    int64_t capacity() const { return kv_.capacity(); }
    const std::vector<int32_t> &lengths() const { return kv_.lengths(); }
    const KVCache &kv() const { return kv_; }
    const Tensor &qk_history() const { return qk_history_; }  // [B, history, P]: the last raw qk rows
    const Tensor &prev_value() const { return prev_value_; }  // [B, Lkv / 2]: the last delayed value half

    void reset();                               // every sequence empty, as make_state left it
    void reset(int64_t sequence);               // one sequence empty
    void fork(int64_t source, int64_t target);  // sequence `target` becomes a copy of `source`
    // Sequence `target` becomes a copy of sequence `source` of another state of the same layer
    // (target first, like an assignment; continuous batching: prefill a new prompt in a state of
    // its own, then move it into a slot). A state made by another layer is refused.
    void assign_sequence(int64_t target, const LatentState &from, int64_t source = 0);

    // The K/V cache alone, for benchmarks that fill it with synthetic rows and rewind it: changes
    // made through it leave the convolution history and the shifted value behind.
    KVCache &kv_without_history() { return kv_; }

private:
    friend class LatentAttention;
    LatentState(LayerIdentity maker, KVCache kv, Tensor qk_history, Tensor first_value);
    void clear_rows(int64_t sequence);
    int64_t history_floats() const { return qk_history_.size() / batch(); }  // per sequence

    LayerIdentity maker_;  // a layer reads and writes only the states it made
    KVCache kv_;
    Tensor qk_history_;   // zeros before a sequence's first token
    Tensor prev_value_;   // empty without value shift
    Tensor first_value_;  // [Lkv / 2]: token 0's delayed half (the delayed projection's bias, or zeros)
};

class LatentAttention {
public:
    LatentAttention(const LatentAttentionConfig &config, const Weights &weights);

    const LatentAttentionConfig &config() const { return config_; }
    StorageTypes storage_types() const { return config_.storage; }

    // The bytes of the weights it holds, and of its state's cache per token (keys and values in the
    // kv_dtype; the few qk rows and the delayed value half it keeps per sequence not counted).
    int64_t weight_bytes() const;
    int64_t cache_bytes_per_token() const;

    // The whole sequence x [B, S, E] at once (either mode). Returns [B, S, E].
    Tensor forward(const Tensor &x) const;

    // Decoder mode only. A state for `batch` sequences of up to `capacity` tokens.
    LatentState make_state(int64_t batch, int64_t capacity) const;
    // Appends x [B, S, E] to the state's sequences; all or nothing: on error the state is unchanged.
    Tensor prefill(const Tensor &x, LatentState &state) const;
    Tensor decode_step(const Tensor &x_t, LatentState &state) const;  // x_t [B, 1, E]

    // The same calls over activations in any storage type: a caller's f32, bf16 or f16 memory
    // (StoredView, or a StoredTensor's view()), converted once, and the output in the layer's dtype.
    StoredTensor forward(const StoredView &x) const;
    StoredTensor prefill(const StoredView &x, LatentState &state) const;
    StoredTensor decode_step(const StoredView &x_t, LatentState &state) const;

private:
    // Continues the state's sequences, or (no state: forward) starts new ones whose attention
    // reads the new keys and values where the kernels wrote them.
    Tensor run(const Tensor &x, LatentState *state) const;
    void require_decoder(const char *call) const;
    // After the weights are loaded: the first value, and residency of what the kernels read
    // directly (Linear keeps its own).
    void finish_construction();

    LatentAttentionConfig config_;
    Linear qk_, value_, value_delayed_, out_;  // value_ is val_proj or val_proj1 / v_proj_current
    CcaConvWeights conv_;
    Tensor key_scale_;    // [Hkv]
    Tensor first_value_;  // [Lkv / 2] with value shift: token 0's delayed half (bias or zeros)
    GrowingRopeTable rope_;
    LayerIdentity identity_;  // recorded by the states make_state makes
};

}  // namespace hattn

namespace hattn {

// The seed's modules and ZAYA1's layer by name: configuration keys and weight names of each.
class CCAAttention : public LatentAttention {
public:
    CCAAttention(const ConfigReader &config, const Weights &weights)
        : LatentAttention(LatentAttentionConfig::cca(config, false), weights) {}
};

class CCGQAAttention : public LatentAttention {
public:
    CCGQAAttention(const ConfigReader &config, const Weights &weights)
        : LatentAttention(LatentAttentionConfig::cca(config, true), weights) {}
};

class ZayaAttention : public LatentAttention {
public:
    ZayaAttention(const ConfigReader &config, const Weights &weights)
        : LatentAttention(LatentAttentionConfig::zaya(config), weights) {}
};

}  // namespace hattn
