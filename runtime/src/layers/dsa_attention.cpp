#include "hattn/layers/dsa_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "activation_rounding.h"
#include "device_residency.h"
#include "finite_input.h"
#include "hf_rope.h"
#include "host_parallel.h"
#include "top_k.h"
#include "hattn/error.h"
#include "hattn/device.h"
#include "hattn/half.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/dsa.h"
#include "hattn/kernels/norm.h"
#include "hattn/kernels/projection.h"

namespace hattn {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The sub-tensor [B, S, heads, width] of a [B, S, heads * stride] tensor starting at `offset`.
ConstTensorView slice(const Tensor &t, int64_t heads, int64_t stride, int64_t offset, int64_t width) {
    const int64_t B = t.dim(0), S = t.dim(1);
    return ConstTensorView(t.data() + offset, {B, S, heads, width},
                      {S * heads * stride, heads * stride, stride, 1});
}

// How a call attends (dsa_attention.cpp's run()).
enum class AttentionForm { Expanded, Absorbed, Dense };

// Whether attention over the expanded keys costs fewer FLOPs than attending in the latent for S
// new queries a sequence (`lengths` counting them), each query taking min(K, visible) keys.
// Expanded, each cached token first goes through W_kvb (2 R H (N + V)) and every visible (query,
// key) pair costs 2 H (2 W), values padded to the keys' width W: a selection is a mask over the
// causal pairs, which saves no work. In the latent each query is absorbed and projected back
// (2 H (N R + R V)) and only a selected pair costs 2 H (L + R).
bool dense_costs_less(const DsaConfig &c, const std::vector<int32_t> &lengths, int64_t S, int64_t K) {
    const double H = c.heads, N = c.nope_dim, V = c.v_dim, R = c.kv_lora_rank, L = R + c.rope_dim;
    const double W = std::max<double>(N + c.rope_dim, V);
    double expanded = 0, latent = 0;
    for (int32_t len : lengths) {
        double visible = 0, selected = 0;  // pairs
        for (int64_t pos = len - S; pos < len; pos++) {
            visible += double(pos + 1);
            selected += double(std::min<int64_t>(K, pos + 1));
        }
        expanded += len * 2 * R * H * (N + V) + visible * 2 * H * 2 * W;
        latent += S * 2 * H * (N * R + R * V) + selected * 2 * H * (L + R);
    }
    return expanded < latent;
}

}  // namespace

DsaConfig DsaConfig::from(const ConfigReader &c) {
    const std::string src = c.source();
    DsaConfig cfg;
    const auto positive = [&](const std::string &key) {
        const int64_t v = c.get_int(key);
        require(v > 0, [&] { return src + ": " + key + " must be positive, got " + str(v); });
        return v;
    };
    cfg.hidden = positive("hidden_size");
    cfg.heads = positive("num_attention_heads");
    cfg.q_lora_rank = positive("q_lora_rank");
    cfg.kv_lora_rank = positive("kv_lora_rank");
    cfg.nope_dim = positive("qk_nope_head_dim");
    cfg.rope_dim = positive("qk_rope_head_dim");
    cfg.v_dim = positive("v_head_dim");
    cfg.index_heads = positive("index_n_heads");
    cfg.index_dim = positive("index_head_dim");
    cfg.index_topk = positive("index_topk");
    require(cfg.rope_dim % 2 == 0, [&] { return src + ": qk_rope_head_dim must be even, got " + str(cfg.rope_dim); });
    require(cfg.rope_dim <= cfg.index_dim, [&] {
        return src + ": qk_rope_head_dim (" + str(cfg.rope_dim) + ") must not exceed index_head_dim (" +
               str(cfg.index_dim) + ")";
    });
    cfg.rope_theta = detail::hf_rope(c, {10000.0, 1.0, false, ""}).theta;  // (the rotary part is qk_rope_head_dim)
    cfg.bias = c.get_bool("attention_bias", false);
    cfg.rms_eps = static_cast<float>(c.get_number("rms_norm_eps", 1e-6));
    require(cfg.rms_eps > 0, [&] { return src + ": rms_norm_eps must be positive"; });
    return cfg;
}

void DsaConfig::validate() const {
    require_supported(storage, "glm_dsa", true);  // (int8: the latent's R part in groups of 128)
    const std::pair<const char *, int64_t> sizes[] = {{"hidden", hidden},
                                                      {"heads", heads},
                                                      {"q_lora_rank", q_lora_rank},
                                                      {"kv_lora_rank", kv_lora_rank},
                                                      {"nope_dim", nope_dim},
                                                      {"rope_dim", rope_dim},
                                                      {"v_dim", v_dim},
                                                      {"index_heads", index_heads},
                                                      {"index_dim", index_dim},
                                                      {"index_topk", index_topk}};
    for (const auto &[name, value] : sizes) {
        // (Structured bindings captured by name: C++17 lambdas cannot capture them as they are.)
        require(value > 0, [&name = name, &value = value] {
            return std::string("glm_dsa: ") + name + " must be positive, got " + str(value);
        });
    }
    require(rope_dim % 2 == 0, [&] { return "glm_dsa: rope_dim must be even, got " + str(rope_dim); });
    // The indexer rotates the first rope_dim dims of its keys and queries.
    require(rope_dim <= index_dim, [&] {
        return "glm_dsa: rope_dim (" + str(rope_dim) + ") must not exceed index_dim (" + str(index_dim) + ")";
    });
    require(std::isfinite(rope_theta) && rope_theta > 0,
            [&] { return "glm_dsa: rope_theta must be positive, got " + std::to_string(rope_theta); });
    require(std::isfinite(rms_eps) && rms_eps > 0,
            [&] { return "glm_dsa: rms_eps must be positive, got " + std::to_string(rms_eps); });
}

// Validated first: the members below are built from it.
DsaAttention::DsaAttention(const DsaConfig &c, const Weights &w)
    : config_((c.validate(), c)), rope_(c.rope_dim, c.rope_theta) {
    const int64_t E = c.hidden, H = c.heads, R = c.kv_lora_rank;
    const DType dtype = c.storage.dtype;
    const auto bias = [&](const std::string &name, int64_t n) -> std::optional<Tensor> {
        if (!c.bias) return std::nullopt;
        return w.get(name, {n});
    };
    const auto linear = [&](const std::string &name, Shape shape, std::optional<Tensor> b = std::nullopt) {
        return Linear::dense(w.get(name, std::move(shape)), std::move(b), 0.0f, dtype);
    };
    q_a_ = linear("q_a_proj.weight", {c.q_lora_rank, E}, bias("q_a_proj.bias", c.q_lora_rank));
    q_a_norm_ = w.get("q_a_layernorm.weight", {c.q_lora_rank});
    q_b_ = linear("q_b_proj.weight", {H * (c.nope_dim + c.rope_dim), c.q_lora_rank});
    kv_a_ = linear("kv_a_proj_with_mqa.weight", {R + c.rope_dim, E}, bias("kv_a_proj_with_mqa.bias", R + c.rope_dim));
    kv_a_norm_ = w.get("kv_a_layernorm.weight", {R});
    kv_b_ = linear("kv_b_proj.weight", {H * (c.nope_dim + c.v_dim), R});
    o_ = linear("o_proj.weight", {E, H * c.v_dim}, bias("o_proj.bias", E));
    index_q_ = linear("indexer.wq_b.weight", {c.index_heads * c.index_dim, c.q_lora_rank});
    index_k_ = linear("indexer.wk.weight", {c.index_dim, E});
    index_norm_w_ = w.get("indexer.k_norm.weight", {c.index_dim});
    index_norm_b_ = w.get("indexer.k_norm.bias", {c.index_dim});
    // The indexer's head weights w = x W_w^T / sqrt(IH): W_w is kept as stored and the scale goes
    // into the scores' (relu(a x) = a relu(x) for a > 0).
    index_w_ = linear("indexer.weights_proj.weight", {c.index_heads, E});
    // Per head, W_kvb's key rows transposed ([R, N]): the absorbed query is q_nope_h times them.
    // (Its value rows are applied to the attended latent in place, as views of W_kvb.) Built from
    // W_kvb as held, so exact in its dtype.
    const Tensor kvb = kv_b_.widened_weight();
    const int64_t N = c.nope_dim, V = c.v_dim;
    for (int64_t h = 0; h < H; h++) {
        Tensor t({R, N});
        for (int64_t i = 0; i < N; i++)
            for (int64_t r = 0; r < R; r++) t.data()[r * N + i] = kvb.data()[(h * (N + V) + i) * R + r];
        key_absorb_.push_back(Linear::dense(std::move(t), std::nullopt, 0.0f, dtype));
    }
    for (Tensor *t : {&q_a_norm_, &kv_a_norm_, &index_norm_w_, &index_norm_b_}) {
        round_to(dtype, t->data(), t->size());
        t->keep_on_device(Residency::ReadOnly);
    }
}

int64_t DsaAttention::weight_bytes() const {
    int64_t bytes = 0;
    for (const Linear *l : {&q_a_, &q_b_, &kv_a_, &kv_b_, &o_, &index_q_, &index_k_, &index_w_}) bytes += l->weight_bytes();
    for (const Linear &l : key_absorb_) bytes += l.weight_bytes();
    for (const Tensor *t : {&q_a_norm_, &kv_a_norm_, &index_norm_w_, &index_norm_b_}) {
        bytes += t->size() * static_cast<int64_t>(sizeof(float));
    }
    return bytes;
}

int64_t DsaAttention::cache_bytes_per_token() const {
    const DsaConfig &c = config_;
    return StoredRows::bytes_per_row(c.storage.kv_dtype, c.kv_lora_rank, DsaState::int8_group) +
           StoredRows::bytes_per_row(c.storage.dtype, c.rope_dim) + StoredRows::bytes_per_row(c.storage.dtype, c.index_dim);
}

DsaState DsaAttention::make_state(int64_t batch, int64_t capacity) const {
    return DsaState(identity_, batch, capacity, config_.storage, config_.kv_lora_rank, config_.rope_dim, config_.index_dim);
}

Tensor DsaAttention::forward(const Tensor &x, TopK *selected, const TopK *shared) const {
    require(x.rank() == 3 && x.dim(2) == config_.hidden, [&] {
        return "glm_dsa: input " + shape_to_string(x.shape()) + " must be [B, S, " + str(config_.hidden) + "]";
    });
    if (x.dim(0) == 0) {  // no sequences (a state needs one): nothing to compute or select
        if (selected) *selected = TopK{0, x.dim(1), 0, {}};
        return Tensor(x.shape());
    }
    DsaState state = make_state(x.dim(0), std::max<int64_t>(x.dim(1), 1));
    return run(x, state, false, selected, shared);
}

Tensor DsaAttention::prefill(const Tensor &x, DsaState &state, TopK *selected, const TopK *shared) const {
    return run(x, state, false, selected, shared);
}

Tensor DsaAttention::decode_step(const Tensor &x_t, DsaState &state, TopK *selected, const TopK *shared) const {
    require(x_t.rank() == 3 && x_t.dim(1) == 1, [&] {
        return "glm_dsa: decode_step takes one token per sequence [B, 1, E], got " + shape_to_string(x_t.shape());
    });
    return run(x_t, state, true, selected, shared);
}

StoredTensor DsaAttention::forward(const StoredView &x, TopK *selected, const TopK *shared) const {
    return detail::in_dtype(config_.storage.dtype, x, "glm_dsa: input",
                            [&](const Tensor &x32) { return forward(x32, selected, shared); });
}

StoredTensor DsaAttention::prefill(const StoredView &x, DsaState &state, TopK *selected, const TopK *shared) const {
    return detail::in_dtype(config_.storage.dtype, x, "glm_dsa: input",
                            [&](const Tensor &x32) { return prefill(x32, state, selected, shared); });
}

StoredTensor DsaAttention::decode_step(const StoredView &x_t, DsaState &state, TopK *selected,
                                       const TopK *shared) const {
    return detail::in_dtype(config_.storage.dtype, x_t, "glm_dsa: decode input",
                            [&](const Tensor &x32) { return decode_step(x32, state, selected, shared); });
}

Tensor DsaAttention::run(const Tensor &x_given, DsaState &state, bool decode, TopK *selected, const TopK *shared) const {
    const DsaConfig &c = config_;
    require(x_given.rank() == 3 && x_given.dim(2) == c.hidden, [&] {
        return "glm_dsa: input " + shape_to_string(x_given.shape()) + " must be [B, S, " + str(c.hidden) + "]";
    });
    detail::require_finite("glm_dsa: input", x_given);
    const int64_t B = x_given.dim(0), S = x_given.dim(1), H = c.heads, N = c.nope_dim, Rd = c.rope_dim, V = c.v_dim;
    const int64_t R = c.kv_lora_rank, L = R + Rd, IH = c.index_heads, ID = c.index_dim;
    require(state.batch() == B, [&] {
        return "glm_dsa: state batch " + str(state.batch()) + " does not fit input " + shape_to_string(x_given.shape());
    });
    // Another layer's state would be written past its rows where its widths are smaller; where
    // they agree, its rows are still another layer's latents and index keys.
    require(state.maker_ == identity_,
            "glm_dsa: the state was made by another layer (a layer takes only the states its make_state made)");
    state.lengths_.require_room(S);
    if (shared) {
        // No queries select nothing: an empty call's selection (K = 0) is a valid one to share.
        require(shared->batch == B && shared->queries == S && (shared->k > 0 || (S == 0 && shared->k == 0)) &&
                    static_cast<int64_t>(shared->indices.size()) == B * S * shared->k,
                [&] {
                    return "glm_dsa: shared top-k indices must be [" + str(B) + ", " + str(S) +
                           ", K] with B x S x K entries, got [" + str(shared->batch) + ", " + str(shared->queries) +
                           ", " + str(shared->k) + "] with " + str(shared->indices.size());
                });
    }
    if (S == 0) {  // no tokens: nothing to compute, select or remember
        if (selected) *selected = TopK{B, 0, 0, {}};
        return Tensor({B, 0, c.hidden});
    }
    const DType dtype = c.storage.dtype;
    // Every kernel result the call keeps is rounded to the dtype where it is written (section 5);
    // scores, top-k and softmax stay float32.
    const auto stored = [&](Tensor &t) { detail::store_as(dtype, t); };
    std::optional<Tensor> x_copy;
    const Tensor &x = detail::converted_input(dtype, x_given, x_copy);  // once, on entry
    const std::vector<int32_t> start = state.lengths();
    int32_t longest = 0;
    for (int64_t b = 0; b < B; b++) longest = std::max<int32_t>(longest, start[b] + static_cast<int32_t>(S));
    const std::shared_ptr<const RopeTable> rope = rope_.covering(longest);

    // On a GPU every stage but the top-k selection and the state's rounding stays on the device
    // (detail::scratch_tensor, copy_into between views): x goes up once; the indexer's scores
    // come down to be ranked, and the new rows of a 16-bit or int8 state to be stored (StoredRows).
    // The expanded form widens the cached latents on the host.
    const detail::ScopedRegion input = detail::upload_once(x);
    const auto matrix = [](Tensor &t, int64_t rows, int64_t cols) {
        return TensorView(t.data(), {rows, cols});
    };

    // Each projection of x is checked where an overflow first appears: the fast-math kernels after
    // them may turn an infinity into any value, finite ones too.
    const auto origin = [&] {
        return detail::magnitudes(x, {{"q_a_proj", &q_a_}, {"q_b_proj", &q_b_}, {"kv_a_proj_with_mqa", &kv_a_},
                                      {"kv_b_proj", &kv_b_}, {"o_proj", &o_}, {"the indexer's wq_b", &index_q_},
                                      {"the indexer's wk", &index_k_}, {"the indexer's weights_proj", &index_w_}});
    };

    // Queries: q_resid = RMSNorm(x W_qa^T), q = q_resid W_qb^T -> [H, N + Rd], the last Rd rotated.
    Tensor q_a = detail::scratch_tensor({B, S, c.q_lora_rank}), q_resid = detail::scratch_tensor(q_a.shape());
    q_a_.apply(x.view(), q_a.view());
    stored(q_a);
    rms_norm(matrix(q_a, B * S, c.q_lora_rank), q_a_norm_, c.rms_eps, matrix(q_resid, B * S, c.q_lora_rank));
    stored(q_resid);
    Tensor q = detail::scratch_tensor({B, S, H * (N + Rd)}), q_rot = detail::scratch_tensor({B, S, H, Rd});
    q_b_.apply(q_resid.view(), q.view());
    stored(q);
    apply_rope(slice(q, H, N + Rd, N, Rd), *rope, start, q_rot.view(), RopeLayout::Interleaved);
    stored(q_rot);

    // The latent: kv = RMSNorm(first R of x W_kva^T), k_rot = the last Rd, rotated (one head).
    Tensor ckv = detail::scratch_tensor({B, S, L}), kv = detail::scratch_tensor({B, S, R});
    kv_a_.apply(x.view(), ckv.view());
    stored(ckv);
    detail::require_finite_results("glm_dsa", {{"q_a_proj", &q_a}, {"kv_a_proj_with_mqa", &ckv}}, origin);
    rms_norm(TensorView(ckv.data(), {B * S, R}, {L, 1}), kv_a_norm_, c.rms_eps, matrix(kv, B * S, R));
    // kv, k_rot and the indexer keys are kept only in the state, which rounds them as it stores
    // them: kv to the kv_dtype, the others to the dtype. The 16-bit ones are rounded here already
    // (the same values), so that the finite check below sees what the state keeps: a bf16 value
    // may round to an infinity.
    if (c.storage.kv_dtype != DType::Int8) detail::store_as(c.storage.kv_dtype, kv);
    Tensor k_rot = detail::scratch_tensor({B, S, 1, Rd});
    apply_rope(slice(ckv, 1, L, R, Rd), *rope, start, k_rot.view(), RopeLayout::Interleaved);
    stored(k_rot);

    std::vector<int32_t> lengths = start;
    for (int32_t &len : lengths) len += static_cast<int32_t>(S);
    // No query sees more keys than the state holds: past that, top-k columns would only be -1
    // (and a config's index_topk of millions would allocate them).
    const int64_t K = shared ? shared->k : std::min(c.index_topk, state.capacity());
    // A query that sees at most K keys takes them all, whatever their scores: while no query sees
    // more (a prompt's first K tokens), the indexer's queries and scores are not needed.
    const bool scored = !shared && *std::max_element(lengths.begin(), lengths.end()) > K;

    // Indexer: iq = q_resid W_iq^T, ik = LayerNorm(x W_ik^T), both rotated on their first Rd dims;
    // head weights w = x W_w^T / sqrt(IH). The keys join the state whatever this call selects.
    Tensor iq_rot, head_w;
    if (scored) {
        Tensor iq = detail::scratch_tensor({B, S, IH, ID});
        iq_rot = detail::scratch_tensor({B, S, IH, ID});
        head_w = detail::scratch_tensor({B, S, IH});
        index_q_.apply(q_resid.view(), TensorView(iq.data(), {B, S, IH * ID}));
        stored(iq);
        apply_rope(iq.view(), *rope, start, iq_rot.view(), RopeLayout::Interleaved);
        stored(iq_rot);
        index_w_.apply(x.view(), head_w.view());
        stored(head_w);
    }
    Tensor ik_raw = detail::scratch_tensor({B, S, ID}), ik = detail::scratch_tensor({B, S, 1, ID});
    index_k_.apply(x.view(), ik_raw.view());
    stored(ik_raw);
    detail::require_finite_results("glm_dsa", {{"the indexer's wk", &ik_raw}}, origin);
    layer_norm(matrix(ik_raw, B * S, ID), index_norm_w_, index_norm_b_, 1e-6f, matrix(ik, B * S, ID));
    stored(ik);
    Tensor ik_rot = detail::scratch_tensor({B, S, 1, ID});
    apply_rope(ik.view(), *rope, start, ik_rot.view(), RopeLayout::Interleaved);
    stored(ik_rot);

    // Stage the new tokens past each sequence's end; they join it only at the end.
    for (int64_t b = 0; b < B; b++) {
        const auto rows = [&](const Tensor &t, int64_t width) { return ConstTensorView(t.data() + b * S * width, {S, width}); };
        state.latent_.store(b, start[b], rows(kv, R));
        state.rotary_.store(b, start[b], rows(k_rot, Rd));
        state.index_keys_.store(b, start[b], rows(ik_rot, ID));
    }

    TopK chosen{B, S, K, std::vector<int32_t>(B * S * K, -1)};
    const auto take_all = [&](int64_t b, int64_t s) {  // the query's every visible key, in order
        int32_t *row = chosen.indices.data() + (b * S + s) * K;
        std::iota(row, row + start[b] + s + 1, 0);
    };
    if (shared) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t n = 0; n < K; n++) {
                    const int32_t t = shared->row(b, s)[n];
                    const int64_t pos = start[b] + s;
                    require(t >= -1 && t <= pos, [&] {
                        return "glm_dsa: shared top-k index " + str(t) + " of query " + str(s) +
                               " is outside its visible keys 0.." + str(pos);
                    });
                    chosen.indices[(b * S + s) * K + n] = t;
                }
    } else {
        // One kernel scores every key for forward and decode alike, so both select the same keys.
        // Queries go in blocks so the scores held at once stay [block, capacity], not [S, S].
        // The scores are ranked on the host (a GPU sends them back).
        constexpr int64_t block = 256;
        // The head weights' 1 / sqrt(IH) too (the constructor's W_w is as stored).
        const float index_scale = static_cast<float>(1.0 / std::sqrt(double(ID) * double(IH)));
        for (int64_t s0 = 0; s0 < S; s0 += block) {
            const int64_t Sb = std::min(block, S - s0);
            std::vector<int32_t> block_len(B);
            for (int64_t b = 0; b < B; b++) block_len[b] = start[b] + static_cast<int32_t>(s0 + Sb);
            // A block that needs no scores: every block, where the call is not `scored` (its
            // indexer queries were not computed).
            if (*std::max_element(block_len.begin(), block_len.end()) <= K) {
                for (int64_t b = 0; b < B; b++)
                    for (int64_t s = s0; s < s0 + Sb; s++) take_all(b, s);
                continue;
            }
            Tensor scores({B, Sb, state.capacity()});
            dsa_index_scores(TensorView(iq_rot.data() + s0 * IH * ID, {B, Sb, IH, ID}, {S * IH * ID, IH * ID, ID, 1}),
                             state.index_keys_.view(),
                             TensorView(head_w.data() + s0 * IH, {B, Sb, IH}, {S * IH, IH, 1}), block_len,
                             index_scale, scores.view());
            // Each query's ranking is its own row: the block's run in parallel. (On a GPU the
            // kernel call has copied the scores back: `scores` is a host tensor, not scratch.)
            const float *block_scores = scores.data();
            detail::parallel_for(static_cast<int>(B * Sb), [&](int task) {
                const int64_t b = task / Sb, s = s0 + task % Sb;
                const int64_t pos = start[b] + s;
                const float *score = block_scores + (b * Sb + s - s0) * state.capacity();
                detail::top_k_indices(score, pos + 1, std::min<int64_t>(K, pos + 1),
                                      chosen.indices.data() + (b * S + s) * K);
            });
        }
    }

    const float scale = static_cast<float>(1.0 / std::sqrt(double(N + Rd)));
    // Each form gives the same result. The expanded form (GLM's prefill) gathers per head keys
    // [k_nope_h | k_rot] and values: H (N + Rd + V) floats a selected key, used once per query, so
    // on a CPU its sparse kernel is bound by the gathers (docs/perf/dsa.md: 2.7x the absorbed
    // form's time a query at K = 256). On a CPU, then, a prefill runs either in the latent, or
    // as causal attention over the expanded keys with each query's selection as a mask, where
    // expanding the cached tokens through W_kvb and attending to every visible key costs less
    // (a prompt's first K tokens take all their keys; at the bench's GLM-5 shapes a prompt of up
    // to about 5 times K tokens selects enough of them: docs/perf/log.md). GPUs keep GLM's forms
    // (not yet timed otherwise; their prefill block tiles take head dims up to 128, not N + Rd).
    AttentionForm form = decode ? AttentionForm::Absorbed : AttentionForm::Expanded;
    if (!decode && current_device() == Device::CPU) {
        // A shared selection may name a key twice, which a mask cannot say.
        form = !shared && dense_costs_less(c, lengths, S, K) ? AttentionForm::Dense : AttentionForm::Absorbed;
    }
    Tensor attended = detail::scratch_tensor({B, S, H, V});
    if (form == AttentionForm::Absorbed) {
        attend_absorbed(q, q_rot, state, chosen, scale, attended);
    } else {
        attend_expanded(q, q_rot, state, lengths, chosen, scale, form == AttentionForm::Dense, attended);
    }
    stored(attended);
    Tensor y({B, S, c.hidden}, Tensor::unset);
    o_.apply(TensorView(attended.data(), {B, S, H * V}), y.view());
    stored(y);
    // The state keeps the new latents and indexer keys, which later calls read (and rank) even
    // where this call's output does not depend on them.
    detail::require_finite_results(
        "glm_dsa", {{"the output", &y}, {"the new latents", &kv}, {"the new rotary keys", &k_rot}, {"the new indexer keys", &ik_rot}},
        origin);
    state.lengths_.commit(S);
    if (selected) *selected = std::move(chosen);
    return y;
}

void DsaAttention::attend_absorbed(const Tensor &q, const Tensor &q_rot, const DsaState &state, const TopK &chosen,
                                   float scale, Tensor &attended) const {
    const DsaConfig &c = config_;
    const int64_t B = chosen.batch, S = chosen.queries, K = chosen.k, H = c.heads, N = c.nope_dim, Rd = c.rope_dim;
    const int64_t V = c.v_dim, R = c.kv_lora_rank, L = R + Rd;
    // The projections read and write each head's slice in place (strided rows).
    Tensor q_abs = detail::scratch_tensor({B, S, H, L});
    for (int64_t h = 0; h < H; h++) {
        key_absorb_[h].apply(ConstTensorView(q.data() + h * (N + Rd), {B * S, N}, {H * (N + Rd), 1}),
                             TensorView(q_abs.data() + h * L, {B * S, R}, {H * L, 1}));
    }
    copy_into(ConstTensorView(q_rot.data(), {B * S, H, Rd}),
              TensorView(q_abs.data() + R, {B * S, H, Rd}, {H * L, L, 1}));
    detail::store_as(c.storage.dtype, q_abs);
    Tensor out_lat = detail::scratch_tensor({B, S, H, R});
    dsa_latent_attention(q_abs.view(), state.latent(), state.rotary_keys(), chosen.indices, K, scale, out_lat.view());
    detail::store_as(c.storage.dtype, out_lat);
    for (int64_t h = 0; h < H; h++) {
        const int64_t values_row = h * (N + V) + N;
        const StoredView values = kv_b_.stored_weight().crop(0, values_row, values_row + V);
        project(ConstTensorView(out_lat.data() + h * R, {B * S, R}, {H * R, 1}), values, nullptr,
                TensorView(attended.data() + h * V, {B * S, V}, {H * V, 1}));
    }
}

void DsaAttention::attend_expanded(const Tensor &q, const Tensor &q_rot, const DsaState &state,
                                   const std::vector<int32_t> &lengths, const TopK &chosen, float scale, bool dense,
                                   Tensor &attended) const {
    const DsaConfig &c = config_;
    const int64_t B = chosen.batch, S = chosen.queries, K = chosen.k, H = c.heads, N = c.nope_dim, Rd = c.rope_dim;
    const int64_t V = c.v_dim, Dk = N + Rd;
    // Dense attention takes one head dim for queries, keys and values: the narrower are padded
    // with zeros (which add nothing to a score, and only fill output dims no one reads).
    const int64_t W = dense ? std::max(Dk, V) : Dk;
    const auto padded = [&](Shape shape) { return W > Dk ? Tensor(shape) : detail::scratch_tensor(shape); };
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = lengths[b];
        // The sequence's latent rows, widened to float32 on the host (widen_into), as W_kvb's input.
        const auto widened = [&](const StoredView &rows) {
            Tensor t({len, rows.dim(2)}, Tensor::unset);
            widen_into(rows.crop(0, b, b + 1).crop(1, 0, len), TensorView(t.data(), {1, len, rows.dim(2)}));
            return t;
        };
        const Tensor lat = widened(state.latent()), rotary = widened(state.rotary_keys());
        Tensor expanded = detail::scratch_tensor({len, H * (N + V)});
        kv_b_.apply(lat.view(), expanded.view());  // [len, H * (N + V)]
        detail::store_as(c.storage.dtype, expanded);
        // Per head keys [k_nope_h | k_rot] of every cached token, and the queries laid out alike.
        Tensor keys = padded({1, len, H, W}), q_b = padded({1, S, H, W});
        // Every head shares the token's rotated key (the source's head stride is 0). A copy from
        // the host rows, so first: on a GPU the k_nope copy below runs on the device after the
        // host's writes have gone up (the other order would upload the host's unwritten k_nope
        // over the device's once the writes mark the whole region).
        copy_into(ConstTensorView(rotary.data(), {len, H, Rd}, {Rd, 0, 1}),
                  TensorView(keys.data() + N, {len, H, Rd}, {H * W, W, 1}));
        copy_into(TensorView(expanded.data(), {len, H, N}, {H * (N + V), N + V, 1}),
                  TensorView(keys.data(), {len, H, N}, {H * W, W, 1}));
        copy_into(ConstTensorView(q.data() + b * S * H * Dk, {S, H, N}, {H * Dk, Dk, 1}),
                  TensorView(q_b.data(), {S, H, N}, {H * W, W, 1}));
        copy_into(ConstTensorView(q_rot.data() + b * S * H * Rd, {S, H, Rd}),
                  TensorView(q_b.data() + N, {S, H, Rd}, {H * W, W, 1}));
        const TensorView values(expanded.data() + N, {1, len, H, V}, {len * H * (N + V), H * (N + V), N + V, 1});
        const TensorView out(attended.data() + b * S * H * V, {1, S, H, V});
        if (!dense) {
            const std::vector<int32_t> idx(chosen.indices.begin() + b * S * K,
                                           chosen.indices.begin() + (b + 1) * S * K);
            dsa_sparse_attention(q_b.view(), keys.view(), values, idx, K, scale, out);
            continue;
        }
        // The kernel reads keys and values as [1, H, len, W] views of the token-major tensors.
        Tensor values_w({1, len, H, W}), out_w({1, S, H, W}, Tensor::unset);
        copy_into(values, TensorView(values_w.data(), {1, len, H, V}, {len * H * W, H * W, W, 1}));
        const auto head_major = [&](const Tensor &t) {
            return ConstTensorView(t.data(), {1, H, len, W}, {len * H * W, W, H * W, 1});
        };
        // Queries go in blocks, each attending to the keys up to its last query (the queries are
        // the last Sb of those tokens), so that a mask is [Sb, visible] bytes, not [S, len].
        constexpr int64_t query_block = 512;
        for (int64_t s0 = 0; s0 < S; s0 += query_block) {
            const int64_t Sb = std::min(query_block, S - s0), visible = len - S + s0 + Sb;
            // Where a query sees more than K keys, every key but its selection is masked.
            std::vector<uint8_t> masked;
            MaskView mask{nullptr, {1, 1, Sb, visible}};
            if (visible > K) {
                masked.assign(Sb * visible, 1);
                for (int64_t s = 0; s < Sb; s++) {
                    const int32_t *row = chosen.indices.data() + (b * S + s0 + s) * K;
                    for (int64_t n = 0; n < K; n++)
                        if (row[n] >= 0) masked[s * visible + row[n]] = 0;
                }
                mask.data = masked.data();
            }
            const auto block_rows = [&](Tensor &t) {
                return TensorView(t.data() + s0 * H * W, {1, Sb, H, W}, {S * H * W, H * W, W, 1});
            };
            attention_prefill(block_rows(q_b), head_major(keys), head_major(values_w), {static_cast<int32_t>(visible)},
                              scale, true, mask.data ? &mask : nullptr, block_rows(out_w));
        }
        copy_into(TensorView(out_w.data(), {1, S, H, V}, {S * H * W, H * W, W, 1}), out);
    }
}

}  // namespace hattn
