// GLM-5 sparse attention (spec/attention.md §4, HF `glm_moe_dsa`): multi-head latent attention
// whose queries each attend only to the index_topk keys a lightning indexer selects.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hattn/config.h"
#include "hattn/dtype.h"
#include "hattn/kernels/dsa.h"
#include "hattn/kernels/rope.h"
#include "hattn/layers/layer_identity.h"
#include "hattn/layers/linear.h"
#include "hattn/safetensors.h"
#include "hattn/sequence_lengths.h"
#include "hattn/stored_rows.h"
#include "hattn/stored_tensor.h"
#include "hattn/tensor.h"

namespace hattn {

struct DsaConfig {
    int64_t hidden = 0, heads = 0;                 // E, H
    int64_t q_lora_rank = 0, kv_lora_rank = 0;     // q_lora_rank, R
    int64_t nope_dim = 0, rope_dim = 0, v_dim = 0; // N, Rd, V
    int64_t index_heads = 0, index_dim = 0;        // IH, ID
    int64_t index_topk = 0;                        // K
    double rope_theta = 10000.0;
    bool bias = false;
    float rms_eps = 1e-6f;
    // Not from a config file: the caller's choice (spec/attention.md section 5).
    StorageTypes storage;

    // HF config.json keys; errors name the key and values. Unknown keys are ignored.
    static DsaConfig from(const ConfigReader &config);

    // Throws Error naming the field if this config describes no layer. The constructor calls it,
    // so a config built by hand is checked like a read one; from()'s own checks come first and
    // name the file's keys.
    void validate() const;
};

// Top-k key indices per query: [B, S, K] with K = index_topk, or the state's capacity where that is
// smaller; ascending within a row, -1 where a query has fewer than K visible keys. A
// shared-indexer layer receives the previous layer's.
struct TopK {
    int64_t batch = 0, queries = 0, k = 0;
    std::vector<int32_t> indices;
    const int32_t *row(int64_t b, int64_t s) const { return indices.data() + (b * queries + s) * k; }
};

// Per batch: the latent cache (kv R + k_rot Rd values per token, shared by all heads) and the
// indexer's key cache (ID values per token). Made by DsaAttention::make_state; every token's data
// lives in these rows, so sequences can be reset, truncated and forked like a KVCache's. The rows
// are held in the layer's storage types (spec/attention.md section 5), which the DSA kernels read
// in place: kv in its kv_dtype (int8: a scale per group of 128 values), k_rot and the indexer keys
// in its dtype.
class DsaState {
public:
    int64_t batch() const { return lengths_.batch(); }
    int64_t capacity() const { return lengths_.capacity(); }
    const std::vector<int32_t> &lengths() const { return lengths_.values(); }
    // The storage: the latent's kv [B, capacity, R] and k_rot [B, capacity, Rd], and the indexer
    // keys [B, capacity, ID]. Rows past a sequence's length are not part of it (a call writes its
    // new rows there first, and counts them only once everything has succeeded).
    StoredView latent() const { return latent_.view(); }
    StoredView rotary_keys() const { return rotary_.view(); }
    StoredView index_keys() const { return index_keys_.view(); }
    static constexpr int64_t int8_group = dsa_latent_group;  // an int8 latent's values per scale

    void reset();                                        // every sequence empty
    void reset(int64_t sequence);                        // one sequence empty
    void truncate_to(int64_t length);                    // sequences longer than `length` cut to it
    void truncate_to(int64_t length, int64_t sequence);  // the same for one sequence
    void fork(int64_t source, int64_t target);           // sequence `target` becomes a copy of `source`
    // Sequence `target` becomes a copy of sequence `source` of another state of the same layer
    // (target first, like an assignment; continuous batching: prefill a new prompt in a state of
    // its own, then move it into a slot). A state made by another layer is refused.
    void assign_sequence(int64_t target, const DsaState &from, int64_t source = 0);

private:
    friend class DsaAttention;
    DsaState(LayerIdentity maker, int64_t batch, int64_t capacity, StorageTypes types, int64_t latent_dim,
             int64_t rotary_dim, int64_t index_dim);

    LayerIdentity maker_;  // a layer reads and writes only the states it made
    SequenceLengths lengths_;
    StoredRows latent_, rotary_, index_keys_;
};

class DsaAttention {
public:
    // Weights under HF names (q_a_proj, ..., indexer.*); `weights` may carry a name prefix.
    DsaAttention(const DsaConfig &config, const Weights &weights);
    DsaAttention(const ConfigReader &config, const Weights &weights) : DsaAttention(DsaConfig::from(config), weights) {}

    const DsaConfig &config() const { return config_; }
    StorageTypes storage_types() const { return config_.storage; }

    // x [B, S, E] -> [B, S, E], causal. `selected` receives the indexer's choice; `shared` (from a
    // previous layer) replaces it on layers without an indexer of their own.
    Tensor forward(const Tensor &x, TopK *selected = nullptr, const TopK *shared = nullptr) const;

    DsaState make_state(int64_t batch, int64_t capacity) const;
    // The bytes of the weights it holds (W_kvb's key rows also as absorbed per head), and of its
    // state per token (the latent, its rotary part and the indexer key), as held.
    int64_t weight_bytes() const;
    int64_t cache_bytes_per_token() const;
    // Appends x [B, S, E] (prefill) or one token (decode); all or nothing.
    Tensor prefill(const Tensor &x, DsaState &state, TopK *selected = nullptr, const TopK *shared = nullptr) const;
    Tensor decode_step(const Tensor &x_t, DsaState &state, TopK *selected = nullptr, const TopK *shared = nullptr) const;

    // The same calls over activations in any storage type: a caller's f32, bf16 or f16 memory
    // (StoredView, or a StoredTensor's view()), converted once, and the output in the layer's dtype.
    StoredTensor forward(const StoredView &x, TopK *selected = nullptr, const TopK *shared = nullptr) const;
    StoredTensor prefill(const StoredView &x, DsaState &state, TopK *selected = nullptr,
                         const TopK *shared = nullptr) const;
    StoredTensor decode_step(const StoredView &x_t, DsaState &state, TopK *selected = nullptr,
                             const TopK *shared = nullptr) const;

private:
    // The whole pipeline over new tokens appended to `state`. A `decode` step attends in the
    // latent; a prefill's form is chosen per device and call (attend_absorbed, attend_expanded).
    Tensor run(const Tensor &x, DsaState &state, bool decode, TopK *selected, const TopK *shared) const;
    // The attention of the queries q [B, S, H * (N + Rd)] (their rotary parts, rotated, in q_rot
    // [B, S, H, Rd]) over their chosen keys of `state` (the new tokens staged), into attended
    // [B, S, H, V]. Absorbed: in the latent, W_kvb's key rows folded into the queries and its value
    // rows applied after. Expanded: the cached tokens expanded through W_kvb to per-head keys and
    // values; with `dense`, the kernel is causal attention over every visible key, a query's
    // selection (where it does not take all) a mask, not the sparse gather. `lengths`: each
    // sequence's tokens, the new ones included.
    void attend_absorbed(const Tensor &q, const Tensor &q_rot, const DsaState &state, const TopK &chosen, float scale,
                         Tensor &attended) const;
    void attend_expanded(const Tensor &q, const Tensor &q_rot, const DsaState &state,
                         const std::vector<int32_t> &lengths, const TopK &chosen, float scale, bool dense,
                         Tensor &attended) const;

    DsaConfig config_;
    Linear q_a_, q_b_, kv_a_, kv_b_, o_, index_q_, index_k_, index_w_;
    Tensor q_a_norm_, kv_a_norm_, index_norm_w_, index_norm_b_;
    GrowingRopeTable rope_;        // on the Rd rotary dims (interleaved layout)
    std::vector<Linear> key_absorb_;  // per head: W_kvb's key rows transposed, [R, N], in the dtype
    LayerIdentity identity_;          // recorded by the states make_state makes
};

}  // namespace hattn
