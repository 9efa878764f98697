#include "hattn/layers/cached_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "activation_rounding.h"
#include "device_residency.h"
#include "finite_input.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kernels/norm.h"
#include "hattn/kernels/projection.h"
#include "quoted.h"

namespace hattn {

namespace {

// Rows [begin, begin + count) of a matrix [rows, cols], as a tensor of their own.
Tensor rows_of(const Tensor &matrix, int64_t begin, int64_t count) {
    Tensor part({count, matrix.dim(1)}, Tensor::unset);
    std::copy_n(matrix.values().begin() + begin * matrix.dim(1), count * matrix.dim(1), part.data());
    return part;
}

// Part `which` (0: q, 1: k, 2: v) of a fused query_key_value [groups x (g q heads, a k head, a v
// head) x D, cols] (or a bias, without cols): each group's rows of it, in group order. A group is a
// KV head and its g query heads (GPT-NeoX: a group per head; Falcon: a group per KV head).
Tensor group_part(const Tensor &fused, int64_t groups, int64_t g, int64_t D, int64_t which) {
    const int64_t cols = fused.rank() == 2 ? fused.dim(1) : 1;
    const int64_t heads = which == 0 ? g : 1, first = which == 0 ? 0 : g + which - 1;
    Shape shape = fused.shape();
    shape[0] = groups * heads * D;
    Tensor part(shape, Tensor::unset);
    for (int64_t group = 0; group < groups; group++) {
        std::copy_n(fused.values().begin() + (group * (g + 2) + first) * D * cols, heads * D * cols,
                    part.data() + group * heads * D * cols);
    }
    return part;
}

}  // namespace

CachedAttention::CachedAttention(const ConfigReader &config, const Weights &weights)
    : CachedAttention(CachedAttentionConfig::from(config, weights), weights) {}

CachedAttention::CachedAttention(const CachedAttentionConfig &config, const Weights &w)
    // Validated first: the members below are built from it.
    : config_((config.validate(), config)) {
    const std::optional<int64_t> weights_layer = w.layer_index();
    require(!config.layer || !weights_layer || *config.layer == *weights_layer, [&] {
        return "cached_attention: the config was read for layer " + std::to_string(config.layer.value_or(0)) +
               ", the weights' prefix " + detail::quoted(w.prefix()) + " names layer " + std::to_string(weights_layer.value_or(0));
    });
    const int64_t E = config.embedding_dimension, D = config.head_dimension;
    const int64_t q_width = config.heads * D, kv_width = config.kv_heads * D;
    using Names = CachedAttentionConfig::Names;
    const bool hf = config.names != Names::Seed;
    const float qkv_clip = static_cast<float>(config.qkv_clip.value_or(0.0));
    const DType dtype = config.storage.dtype;
    const auto linear = [&](const char *seed_name, const char *hf_name, int64_t rows, int64_t cols, bool has_bias,
                            float clip) {
        const std::string name = hf ? hf_name : seed_name;
        return Linear::dense(w.get(name + ".weight", {rows, cols}),
                             has_bias ? std::optional<Tensor>(w.get(name + ".bias", {rows})) : std::nullopt, clip, dtype);
    };
    if (config.names == Names::GroupedQueryKeyValue) {
        // q, k and v of every group, split once here.
        const int64_t g = config.heads / config.kv_heads, fused_rows = q_width + 2 * kv_width;
        const Tensor qkv = w.get("query_key_value.weight", {fused_rows, E});
        const std::optional<Tensor> bias =
            config.bias ? std::optional<Tensor>(w.get("query_key_value.bias", {fused_rows})) : std::nullopt;
        const auto part = [&](int64_t which) {
            std::optional<Tensor> part_bias;
            if (bias) part_bias = group_part(*bias, config.kv_heads, g, D, which);
            return Linear::dense(group_part(qkv, config.kv_heads, g, D, which), std::move(part_bias), qkv_clip, dtype);
        };
        query_ = part(0), key_ = part(1), value_ = part(2);
    } else if (config.names == Names::HuggingFaceFusedQkv) {
        // Phi-3 has no biases. Split once here: the layer projects q, k and v as separate products.
        const Tensor qkv = w.get("qkv_proj.weight", {q_width + 2 * kv_width, E});
        query_ = Linear::dense(rows_of(qkv, 0, q_width), std::nullopt, qkv_clip, dtype);
        key_ = Linear::dense(rows_of(qkv, q_width, kv_width), std::nullopt, qkv_clip, dtype);
        value_ = Linear::dense(rows_of(qkv, q_width + kv_width, kv_width), std::nullopt, qkv_clip, dtype);
    } else {
        query_ = linear("query_projection", "q_proj", q_width, E, config.bias, qkv_clip);
        key_ = linear("key_projection", "k_proj", kv_width, E, config.bias, qkv_clip);
        value_ = linear("value_projection", "v_proj", kv_width, E, config.bias, qkv_clip);
    }
    const bool dense = config.names == Names::HuggingFaceDenseOutput || config.names == Names::GroupedQueryKeyValue;
    output_ = linear("output_projection", dense ? "dense" : "o_proj", E, q_width, config.output_bias, 0.0f);
    if (config.qk_norm) {
        const bool each_head = config.qk_norm->span == CachedAttentionConfig::QkNorm::Span::EachHead;
        // q's or k's norm weights, in `module`.
        const auto norm_weight = [&](const std::string &module, int64_t heads) {
            const Shape shape = !each_head ? Shape{heads * D} : config.qk_norm->weights_per_head ? Shape{heads, D} : Shape{D};
            if (!config.qk_norm->weighted) return Tensor(shape, std::vector<float>(element_count(shape), 1.0f));
            if (config.qk_norm->weights_in_head_modules) {  // StableLM: a module per head, stacked here
                Tensor weight(shape, Tensor::unset);
                for (int64_t h = 0; h < heads; h++) {
                    const Tensor head = w.get(module + ".norms." + std::to_string(h) + ".weight", {D});
                    std::copy_n(head.data(), D, weight.data() + h * D);
                }
                return weight;
            }
            Tensor weight = w.get(module + ".weight", shape);
            if (config.qk_norm->weight_plus_one) {  // Gemma's norms scale by 1 + w: added once here
                for (int64_t i = 0; i < weight.size(); i++) weight.data()[i] += 1.0f;
            }
            return weight;
        };
        query_norm_ = norm_weight(config.qk_norm->query_module, config.heads);
        key_norm_ = norm_weight(config.qk_norm->key_module, config.kv_heads);
        if (config.qk_norm->centred) qk_norm_bias_ = Tensor({D}, std::vector<float>(D, 0.0f));
        // Kept in the dtype (Gemma's 1 + w rounded as the sum); on a GPU uploaded once, like the
        // projections' weights (not with every call).
        for (std::optional<Tensor> *t : {&query_norm_, &key_norm_, &qk_norm_bias_}) {
            if (!*t) continue;
            round_to(dtype, (*t)->data(), (*t)->size());
            (*t)->keep_on_device(Residency::ReadOnly);
        }
    }
    if (config.sinks) {
        sinks_ = w.get("sinks", {config.heads});
        round_to(dtype, sinks_->data(), sinks_->size());
        sinks_->keep_on_device(Residency::ReadOnly);
    }
    if (config.rope_base) {
        const int64_t rotary = config.rotary_dimension ? config.rotary_dimension : D;
        rope_.emplace(rotary, *config.rope_base, config.rope_scaling);
        if (config.rope_scaling.type == RopeScaling::Type::LongRope) {
            long_rope_.emplace(rotary, *config.rope_base, long_factor_scaling(config.rope_scaling));
        }
    }
    if (const auto t = config.query_temperature) {
        // A table of zero frequencies: the rope kernel multiplies each query by its amplitude.
        query_temperature_.emplace(std::vector<double>(D / 2, 0.0), [t](int64_t p) {
            return std::log1p(std::floor(double(p + t->position_offset) / t->floor_scale)) * t->scale + 1.0;
        });
    }
}

std::shared_ptr<const RopeTable> CachedAttention::rope_table(int64_t first, int64_t end) const {
    const RopeScaling &scaling = config_.rope_scaling;
    const bool past_original = end > scaling.original_context;
    if (scaling.type == RopeScaling::Type::Dynamic && past_original) {
        // Dynamic NTK: a base of the call's own, for its rows only.
        const int64_t rotary = config_.rotary_dimension ? config_.rotary_dimension : config_.head_dimension;
        return std::make_shared<const RopeTable>(
            RopeTable::rows(rope_frequencies(rotary, *config_.rope_base, dynamic_ntk_scaling(scaling, end)), first, end));
    }
    return (long_rope_ && past_original ? *long_rope_ : *rope_).covering(end);
}

std::optional<int64_t> CachedAttention::keys_reached() const {
    return config_.sliding_window ? config_.sliding_window : config_.attention_chunk;
}

void CachedAttention::require_causal_for_cache() const {
    require(config_.causal, "cached_attention: a bidirectional layer (causal false, EmbeddingGemma's "
                            "use_bidirectional_attention) takes no cache and no decode step: its queries see "
                            "later keys, so a sequence is attended in one call");
}

KVCache CachedAttention::make_cache(int64_t batch, int64_t capacity) const {
    require_causal_for_cache();
    const int64_t Hkv = config_.kv_heads, D = config_.head_dimension;
    const std::optional<int64_t> window = keys_reached();
    const DType kv_dtype = config_.storage.kv_dtype;
    if (!window) return KVCache(batch, Hkv, D, capacity, "KV cache", kv_dtype);
    // It keeps the window's tokens and sliding_cache_rollback more, in rows for max(W, 256) more,
    // so that it moves the kept rows once per that many tokens.
    KVCache::Sliding keep{*window, 0, sliding_cache_rollback};
    keep.rows = keep.kept() + std::max<int64_t>(keep.window, 256);
    return KVCache::sliding(batch, Hkv, D, capacity, keep, "KV cache", kv_dtype);
}

int64_t CachedAttention::weight_bytes() const {
    int64_t bytes = query_.weight_bytes() + key_.weight_bytes() + value_.weight_bytes() + output_.weight_bytes();
    for (const std::optional<Tensor> *t : {&query_norm_, &key_norm_, &qk_norm_bias_, &sinks_}) {
        if (*t) bytes += (*t)->size() * static_cast<int64_t>(sizeof(float));
    }
    return bytes;
}

int64_t CachedAttention::cache_bytes_per_token() const {
    return config_.cache_bytes_per_token(config_.storage.kv_dtype);
}

float CachedAttention::scale() const {
    return static_cast<float>(config_.attention_scale.value_or(1.0 / std::sqrt(double(config_.head_dimension))));
}

float CachedAttention::softcap() const { return static_cast<float>(config_.score_softcap.value_or(0.0)); }

void CachedAttention::prefill_kernel(const ConstTensorView &q, const StoredView &keys, const StoredView &values,
                                     const std::vector<int32_t> &lengths, bool causal, const MaskView *mask,
                                     const TensorView &out) const {
    const std::optional<ConstTensorView> sinks = sinks_ ? std::optional(sinks_->view()) : std::nullopt;
    attention_prefill(q, keys, values, lengths, scale(), causal, mask, out, sinks ? &*sinks : nullptr, softcap());
}

void CachedAttention::decode_kernel(const ConstTensorView &q, const StoredView &keys, const StoredView &values,
                                    const std::vector<int32_t> &lengths, const std::vector<int32_t> &first_key,
                                    const TensorView &out) const {
    const std::optional<ConstTensorView> sinks = sinks_ ? std::optional(sinks_->view()) : std::nullopt;
    attention_decode(q, keys, values, lengths, scale(), out, sinks ? &*sinks : nullptr, &first_key, softcap());
}

void CachedAttention::stored(Tensor &activation) const {
    detail::store_as(config_.storage.dtype, activation);
}

void CachedAttention::check_input(const Tensor &x, const char *what) const {
    require(x.rank() == 3 && x.dim(2) == config_.embedding_dimension, [&] {
        return std::string("cached_attention: ") + what + " " + shape_to_string(x.shape()) + " must be [B, S, " +
               std::to_string(config_.embedding_dimension) + "]";
    });
    detail::require_finite(std::string("cached_attention: ") + what, x);
}

Tensor CachedAttention::project_heads(const Tensor &x, const Linear &projection, int64_t heads,
                                      const std::optional<Tensor> &norm) const {
    Tensor y = detail::scratch_tensor({x.dim(0), x.dim(1), heads, config_.head_dimension});
    projection.apply(x.view(), TensorView(y.data(), {x.dim(0), x.dim(1), heads * config_.head_dimension}));
    stored(y);
    if (!norm) return y;  // (not a conditional expression, which would copy y: a download on a GPU)
    return qk_normed(y, *norm);
}

Tensor CachedAttention::qk_normed(const Tensor &y, const Tensor &norm) const {
    // Each row the norm spans (a head, or a token's heads) is as long as its weight's rows; weights
    // per head are taken in turn by the rows, which are (token, head).
    const int64_t width = norm.shape().back();
    const Shape rows{y.size() / width, width};
    Tensor normed = detail::scratch_tensor(y.shape());
    const float eps = static_cast<float>(config_.qk_norm->eps);
    if (qk_norm_bias_) {
        layer_norm(ConstTensorView(y.data(), rows), norm, *qk_norm_bias_, eps, TensorView(normed.data(), rows));
    } else {
        rms_norm(ConstTensorView(y.data(), rows), norm, eps, TensorView(normed.data(), rows));
    }
    stored(normed);
    return normed;
}

Tensor CachedAttention::output(const Tensor &attended) const {
    const int64_t B = attended.dim(0), S = attended.dim(1);
    Tensor y({B, S, config_.embedding_dimension}, Tensor::unset);
    output_.apply(ConstTensorView(attended.data(), {B, S, config_.heads * config_.head_dimension}),
                  y.view());
    stored(y);
    return y;
}

Tensor CachedAttention::forward(const Tensor &query_input, const Tensor *key_input, const Tensor *value_input,
                                const MaskView *mask, KVCache *generation_cache,
                                const ConditioningCache *conditioning_cache) const {
    if (conditioning_cache) return cross_attention(query_input, *conditioning_cache, mask);
    require(key_input && value_input, "cached_attention: key and value inputs are required without a conditioning cache");
    return attend_new_tokens(query_input, *key_input, *value_input, generation_cache, mask);
}

Tensor CachedAttention::self_attention(const Tensor &x, KVCache *cache, const MaskView *mask) const {
    return attend_new_tokens(x, x, x, cache, mask);
}

Tensor CachedAttention::attend_new_tokens(const Tensor &x_given, const Tensor &key_given, const Tensor &value_given,
                                          KVCache *cache, const MaskView *mask) const {
    check_call(x_given, key_given, value_given, cache, mask);
    const int64_t B = x_given.dim(0), S = x_given.dim(1);
    if (S == 0 || B == 0) return Tensor({B, S, config_.embedding_dimension});  // nothing to compute or remember
    // Converted to the dtype once on entry (one tensor passed as several, once).
    std::optional<Tensor> copies[3];
    const DType dtype = config_.storage.dtype;
    const Tensor &x = detail::converted_input(dtype, x_given, copies[0]);
    const Tensor &key_input =
        &key_given == &x_given ? x : detail::converted_input(dtype, key_given, copies[1]);
    const Tensor &value_input = &value_given == &x_given  ? x
                                : &value_given == &key_given ? key_input
                                                             : detail::converted_input(dtype, value_given, copies[2]);

    // On a GPU everything between the inputs and the output stays on the device: the inputs go up
    // once, the new keys and values are written into the cache there, and only y comes back.
    const detail::ScopedRegion inputs[] = {detail::upload_once(x), detail::upload_once(key_input),
                                           detail::upload_once(value_input)};
    NewTokens t{{}, {}, {}, cache ? cache->lengths() : std::vector<int32_t>(B, 0), {}};
    t.lengths = t.start;
    for (int32_t &len : t.lengths) len += static_cast<int32_t>(S);
    project_new_tokens(x, key_input, value_input, t);
    // A sliding cache whose rows cannot take the new tokens after its own takes them only at the
    // end (KeyStore below).
    const bool in_rows = !cache || cache->fits_in_rows(S);
    Tensor window_keys, window_values;
    const KeyStore store = store_keys(t, cache, in_rows, window_keys, window_values);
    Tensor attended = detail::scratch_tensor(t.q.shape());
    attend(t, store, mask, attended);
    stored(attended);
    Tensor y = output(attended);
    const auto origin = [&] { return "it first appears after the projections; " + weights_and(x); };
    // A cache keeps the new keys and values, also those no query of this call sees (a caller's mask).
    if (cache) {
        detail::require_finite_results("cached_attention", {{"the output", &y}, {"the new keys", &t.k},
                                                            {"the new values", &t.v}}, origin);
    } else {
        detail::require_finite_results("cached_attention", {{"the output", &y}}, origin);
    }
    // Everything succeeded: the new tokens become part of the cache.
    if (cache && in_rows) cache->commit(S);
    if (cache && !in_rows) cache->append(t.k.view(), t.v.view());
    return y;
}

void CachedAttention::check_call(const Tensor &x, const Tensor &key_input, const Tensor &value_input,
                                 const KVCache *cache, const MaskView *mask) const {
    check_input(x, "input");
    require(key_input.shape() == x.shape() && value_input.shape() == x.shape(), [&] {
        return "cached_attention: key input " + shape_to_string(key_input.shape()) + " and value input " +
               shape_to_string(value_input.shape()) + " must match the query input " + shape_to_string(x.shape());
    });
    if (&key_input != &x) detail::require_finite("cached_attention: key input", key_input);
    if (&value_input != &x) detail::require_finite("cached_attention: value input", value_input);
    const int64_t B = x.dim(0), S = x.dim(1), Hkv = config_.kv_heads, D = config_.head_dimension;
    if (cache) {
        require_causal_for_cache();
        require(cache->batch() == B && cache->kv_heads() == Hkv && cache->head_dim() == D, [&] {
            return "cached_attention: cache [B=" + std::to_string(cache->batch()) +
                   ", Hkv=" + std::to_string(cache->kv_heads()) + ", D=" + std::to_string(cache->head_dim()) +
                   "] does not fit input " + shape_to_string(x.shape());
        });
        cache->check_room(S);
        const std::optional<KVCache::Sliding> &sliding = cache->sliding_params();
        const std::optional<int64_t> reached = keys_reached();
        require(!sliding || (reached && sliding->window >= *reached), [&] {
            const std::string layer = config_.sliding_window    ? "window " + std::to_string(*config_.sliding_window)
                                      : config_.attention_chunk ? "chunks of " + std::to_string(*config_.attention_chunk)
                                                                : "no window";
            return "cached_attention: a sliding cache for windows of up to " + std::to_string(sliding->window) +
                   " tokens cannot serve this layer (" + layer + ")";
        });
    }
    if (mask) {
        // Checked here, before the window or chunk rows read it: [B, 1, S, at least every key].
        int64_t keys = 0;
        for (int64_t b = 0; b < B; b++) keys = std::max<int64_t>(keys, (cache ? cache->lengths()[b] : 0) + S);
        require(mask->data || element_count(mask->shape) == 0,
                [&] { return "cached_attention: mask " + shape_to_string(mask->shape) + " has no data"; });
        require(mask->shape.size() == 4 && mask->shape[0] == B && mask->shape[1] == 1 && mask->shape[2] == S &&
                    mask->shape[3] >= keys,
                [&] {
                    return "cached_attention: mask " + shape_to_string(mask->shape) + " must be [" + std::to_string(B) +
                           ", 1, " + std::to_string(S) + ", >=" + std::to_string(keys) + "]";
                });
    }
}

void CachedAttention::project_new_tokens(const Tensor &x, const Tensor &key_input, const Tensor &value_input,
                                         NewTokens &t) const {
    // Hunyuan norms the rotated q and k, the others q and k as projected.
    const bool norm_after_rope = config_.qk_norm && config_.qk_norm->after_rope;
    const std::optional<Tensor> none;
    t.q = project_heads(x, query_, config_.heads, norm_after_rope ? none : query_norm_);
    t.k = project_heads(key_input, key_, config_.kv_heads, norm_after_rope ? none : key_norm_);
    t.v = project_heads(value_input, value_, config_.kv_heads);
    // Checked where an overflow first appears: the fast-math kernels after them may turn an
    // infinity into any value, finite ones too.
    detail::require_finite_results("cached_attention",
                                   {{"the query projection", &t.q}, {"the key projection", &t.k},
                                    {"the value projection", &t.v}},
                                   [&] { return weights_and(x); });
    // The new keys are rotated: positions continue from each sequence's length.
    const int64_t end = *std::max_element(t.lengths.begin(), t.lengths.end());
    if (rope_) {
        const auto table = rope_table(*std::min_element(t.start.begin(), t.start.end()), end);
        for (Tensor *rotated_in : {&t.q, &t.k}) {
            Tensor rotated = detail::scratch_tensor(rotated_in->shape());
            apply_rope(rotated_in->view(), *table, t.start, rotated.view(), config_.rope_layout);
            stored(rotated);
            *rotated_in = std::move(rotated);
        }
    }
    if (norm_after_rope) {
        t.q = qk_normed(t.q, *query_norm_);
        t.k = qk_normed(t.k, *key_norm_);
    }
    // Below position floor_scale - offset every query's temperature is exactly 1.
    const auto &temperature = config_.query_temperature;
    if (query_temperature_ && double(end + temperature->position_offset) > temperature->floor_scale) {
        Tensor scaled = detail::scratch_tensor(t.q.shape());
        apply_rope(t.q.view(), *query_temperature_->covering(end), t.start, scaled.view(), RopeLayout::NeoX);
        stored(scaled);
        t.q = std::move(scaled);
    }
}

CachedAttention::KeyStore CachedAttention::store_keys(const NewTokens &t, KVCache *cache, bool in_rows,
                                                      Tensor &window_keys, Tensor &window_values) const {
    const int64_t B = t.q.dim(0), S = t.q.dim(1), Hkv = config_.kv_heads, D = config_.head_dimension;
    KeyStore store{{}, {}, std::vector<int32_t>(B, 0)};
    if (cache && in_rows) {
        // Copied into the cache past its end (on a GPU, there), part of it only at commit().
        cache->write_past_end(t.k.view(), t.v.view());
        return {cache->keys(), cache->values(), cache->first_positions()};
    }
    if (cache) {
        // A sliding cache whose rows cannot take the new tokens after its own (once per rows -
        // kept() decode steps, max(W, 256) for make_cache's; or a prompt longer than its rows)
        // takes them only at the end, where it forgets tokens and moves rows; the call attends
        // over a copy of the tokens it reaches.
        const int64_t before = *keys_reached() - 1;  // the earlier keys a query reaches
        store.row_0 = cache->first_positions();
        int64_t rows = 0;
        for (int64_t b = 0; b < B; b++) {
            store.row_0[b] = std::max(store.row_0[b], static_cast<int32_t>(t.start[b] - before));
            rows = std::max<int64_t>(rows, t.lengths[b] - store.row_0[b]);
        }
        window_keys = detail::scratch_tensor({B, Hkv, rows, D});
        window_values = detail::scratch_tensor({B, Hkv, rows, D});
        for (auto [to, cached, new_tokens] : {std::tuple{&window_keys, cache->keys(), t.k.view()},
                                              std::tuple{&window_values, cache->values(), t.v.view()}}) {
            for (int64_t b = 0; b < B; b++) {
                const int64_t held_from = cache->first_positions()[b], old = t.start[b] - store.row_0[b];
                const TensorView rows_of_b = to->view().crop(0, b, b + 1);
                widen_into(cached.crop(0, b, b + 1).crop(2, store.row_0[b] - held_from, t.start[b] - held_from),
                           rows_of_b.crop(2, 0, old));
                copy_into(tokens_as_cache(new_tokens).crop(0, b, b + 1), rows_of_b.crop(2, old, old + S));
            }
        }
        store.keys = window_keys.view(), store.values = window_values.view();
        return store;
    }
    // The new tokens are all the keys there are: the kernels read them where the projections
    // wrote them, [B, S, Hkv, D] seen as the cache's [B, Hkv, S, D]: no temporary cache of
    // 2 B S Hkv D floats is allocated, zeroed and filled (docs/perf/log.md, "Layer prefill without a
    // temporary cache").
    store.keys = tokens_as_cache(t.k.view());
    store.values = tokens_as_cache(t.v.view());
    return store;
}

void CachedAttention::attend(const NewTokens &t, const KeyStore &store, const MaskView *mask,
                             Tensor &attended) const {
    const int64_t B = t.q.dim(0), S = t.q.dim(1), D = config_.head_dimension;
    const int64_t end = *std::max_element(t.lengths.begin(), t.lengths.end());
    // The kernels count rows of the store, from each sequence's row 0.
    std::vector<int32_t> rows_end = t.lengths;
    for (int64_t b = 0; b < B; b++) rows_end[b] -= store.row_0[b];
    if (S == 1 && !mask) {  // decode steps: one split-KV call, each sequence over its window or chunk
        std::vector<int32_t> first_key(B, 0);  // rows of the store
        for (int64_t b = 0; b < B; b++) {
            // In 64 bits: a window or chunk past 2^31 (every key, for 32-bit positions) must not wrap.
            const int64_t newest = t.lengths[b] - 1;
            if (config_.sliding_window) {
                first_key[b] = static_cast<int32_t>(std::max<int64_t>(0, newest + 1 - *config_.sliding_window));
            }
            if (config_.attention_chunk) {
                first_key[b] = static_cast<int32_t>(newest - newest % *config_.attention_chunk);
            }
            first_key[b] = std::max(0, first_key[b] - store.row_0[b]);
        }
        const Shape heads{B, config_.heads, D};
        decode_kernel(ConstTensorView(t.q.data(), heads), store.keys, store.values, rows_end, first_key,
                      TensorView(attended.data(), heads));
    } else if (config_.sliding_window && end > *config_.sliding_window) {
        attend_in_windows(t.q, store, t.start, t.lengths, mask, attended);
    } else if (config_.attention_chunk && end > *config_.attention_chunk) {
        attend_in_chunks(t.q, store, t.start, t.lengths, mask, attended);
    } else {
        // No window cuts these keys: the store's rows are their positions (row 0 is position 0).
        prefill_kernel(t.q.view(), store.keys, store.values, rows_end, config_.causal, mask, attended.view());
    }
}

void CachedAttention::attend_in_windows(const Tensor &q, const KeyStore &store, const std::vector<int32_t> &start, const std::vector<int32_t> &lengths,
                                        const MaskView *mask, Tensor &attended) const {
    const int64_t window = *config_.sliding_window;
    // Queries a prefill call takes at once: their mask is block x (block + window - 1) bytes, or
    // block x (block + 2 window - 2) where the window reaches after them too.
    constexpr int64_t block = 256;
    for (int64_t b = 0; b < q.dim(0); b++) {
        for (int64_t p0 = start[b]; p0 < lengths[b]; p0 += block) {
            const int64_t p1 = std::min<int64_t>(p0 + block, lengths[b]), first = std::max<int64_t>(0, p0 - window + 1);
            const int64_t end = config_.causal ? p1 : std::min<int64_t>(p1 + window - 1, lengths[b]);
            attend_rows(q, store, {b, start[b], p0, p1, first, end}, mask, window, attended);
        }
    }
}

void CachedAttention::attend_in_chunks(const Tensor &q, const KeyStore &store, const std::vector<int32_t> &start, const std::vector<int32_t> &lengths,
                                       const MaskView *mask, Tensor &attended) const {
    const int64_t chunk = *config_.attention_chunk;
    for (int64_t b = 0; b < q.dim(0); b++) {
        // Each call takes the new queries of one chunk, which see its keys up to themselves: the
        // kernels' causal rule over the chunk's rows.
        for (int64_t p0 = start[b], p1; p0 < lengths[b]; p0 = p1) {
            const int64_t first = p0 - p0 % chunk;
            p1 = std::min<int64_t>(first + chunk, lengths[b]);
            attend_rows(q, store, {b, start[b], p0, p1, first, p1}, mask, std::nullopt, attended);
        }
    }
}

void CachedAttention::attend_rows(const Tensor &q, const KeyStore &store, const QueryRows &r, const MaskView *caller_mask, std::optional<int64_t> window,
                                  Tensor &attended) const {
    // The rows' own mask [1, 1, p1 - p0, end - first]: key j hidden from the query at p outside the
    // window, or where the caller's mask (whose row is new query p - start) says.
    const int64_t width = r.end - r.first;
    std::vector<uint8_t> hidden(caller_mask || window ? (r.p1 - r.p0) * width : 0);
    for (int64_t p = r.p0; !hidden.empty() && p < r.p1; p++) {
        uint8_t *row = hidden.data() + (p - r.p0) * width;
        if (window) {  // keys [p - window + 1, p + window) are in it (the causal rule cuts the later ones)
            const int64_t lo = std::clamp(p - *window + 1, r.first, r.end), hi = std::clamp(p + *window, r.first, r.end);
            std::fill(row, row + (lo - r.first), uint8_t{1});
            std::fill(row + (hi - r.first), row + width, uint8_t{1});
        }
        if (caller_mask) {
            const uint8_t *own = caller_mask->data + ((r.b * caller_mask->shape[2]) + (p - r.start)) * caller_mask->shape[3];
            for (int64_t j = r.first; j < r.end; j++) row[j - r.first] |= own[j] != 0;
        }
    }
    const MaskView mask{hidden.data(), {1, 1, r.p1 - r.p0, width}};
    // The keys [first, end) are every key these queries reach; where causal, the queries are the
    // last p1 - p0 of them (end = p1), as the kernels' causal rule takes them.
    const int64_t row_0 = store.row_0[r.b];
    const auto rows = [&](const StoredView &t) { return t.crop(0, r.b, r.b + 1).crop(2, r.first - row_0, r.end - row_0); };
    const auto tokens = [&](auto view) { return view.crop(0, r.b, r.b + 1).crop(1, r.p0 - r.start, r.p1 - r.start); };
    const std::vector<int32_t> visible{static_cast<int32_t>(width)};
    const MaskView *rows_mask = hidden.empty() ? nullptr : &mask;
    prefill_kernel(tokens(q.view()), rows(store.keys), rows(store.values), visible, config_.causal, rows_mask, tokens(attended.view()));
}

Tensor CachedAttention::decode_step(const Tensor &x_t, KVCache &cache) const {
    check_input(x_t, "decode input");
    require(x_t.dim(1) == 1, [&] {
        return "cached_attention: decode_step takes one token per sequence, got " + shape_to_string(x_t.shape());
    });
    return self_attention(x_t, &cache);
}

ConditioningCache CachedAttention::conditioning_cache(const Tensor &key_input,
                                                      const Tensor &value_input) const {
    check_input(key_input, "key input");
    require(value_input.shape() == key_input.shape(), [&] {
        return "cached_attention: value input " + shape_to_string(value_input.shape()) + " differs from key input " +
               shape_to_string(key_input.shape());
    });
    if (&value_input != &key_input) detail::require_finite("cached_attention: value input", value_input);
    const int64_t B = key_input.dim(0), Sk = key_input.dim(1);
    require(Sk > 0, "cached_attention: the context must hold at least one token");
    KVCache kv(B, config_.kv_heads, config_.head_dimension, Sk, "KV cache", config_.storage.kv_dtype);
    std::optional<Tensor> copies[2];
    const DType dtype = config_.storage.dtype;
    const Tensor &keys_in = detail::converted_input(dtype, key_input, copies[0]);
    const Tensor &values_in =
        &value_input == &key_input ? keys_in : detail::converted_input(dtype, value_input, copies[1]);
    const detail::ScopedRegion inputs[] = {detail::upload_once(keys_in), detail::upload_once(values_in)};
    // No RoPE here: the keys are normed as projected, also where the layer norms them after RoPE.
    kv.append(project_heads(keys_in, key_, config_.kv_heads, key_norm_).view(),
              project_heads(values_in, value_, config_.kv_heads).view());
    return ConditioningCache(std::move(kv));
}

Tensor CachedAttention::cross_attention(const Tensor &x_given, const ConditioningCache &context,
                                        const MaskView *mask) const {
    check_input(x_given, "input");
    const KVCache &kv = context.kv();
    require(kv.batch() == x_given.dim(0), [&] {
        return "cached_attention: context batch " + std::to_string(kv.batch()) + " differs from input batch " +
               std::to_string(x_given.dim(0));
    });
    // Any KV head count that divides H would pass the kernel's check, grouping the heads wrongly.
    require(kv.kv_heads() == config_.kv_heads && kv.head_dim() == config_.head_dimension, [&] {
        return "cached_attention: context cache [Hkv=" + std::to_string(kv.kv_heads()) +
               ", D=" + std::to_string(kv.head_dim()) +
               "] does not fit this layer's [Hkv=" + std::to_string(config_.kv_heads) +
               ", D=" + std::to_string(config_.head_dimension) + "]";
    });
    if (x_given.dim(1) == 0) return Tensor({x_given.dim(0), 0, config_.embedding_dimension});  // nothing to compute
    std::optional<Tensor> copy;
    const Tensor &x = detail::converted_input(config_.storage.dtype, x_given, copy);
    const detail::ScopedRegion input = detail::upload_once(x);
    const Tensor q = project_heads(x, query_, config_.heads, query_norm_);
    detail::require_finite_results("cached_attention: cross-attention", {{"the query projection", &q}},
                                   [&] { return weights_and(x); });
    Tensor attended = detail::scratch_tensor(q.shape());
    prefill_kernel(q.view(), kv.keys(), kv.values(), kv.lengths(), false, mask, attended.view());
    stored(attended);
    Tensor y = output(attended);
    detail::require_finite_results("cached_attention: cross-attention", {{"the output", &y}},
                                   [&] { return weights_and(x); });
    return y;
}

StoredTensor CachedAttention::self_attention(const StoredView &x, KVCache *cache, const MaskView *mask) const {
    return detail::in_dtype(config_.storage.dtype, x, "cached_attention: input",
                            [&](const Tensor &x32) { return self_attention(x32, cache, mask); });
}

StoredTensor CachedAttention::decode_step(const StoredView &x_t, KVCache &cache) const {
    return detail::in_dtype(config_.storage.dtype, x_t, "cached_attention: decode input",
                            [&](const Tensor &x32) { return decode_step(x32, cache); });
}

ConditioningCache CachedAttention::conditioning_cache(const StoredView &key_input,
                                                      const StoredView &value_input) const {
    const Tensor keys = detail::widened_input(key_input, "cached_attention: key input");
    const bool same = value_input.data == key_input.data && value_input.dtype == key_input.dtype &&
                      value_input.shape == key_input.shape && value_input.strides == key_input.strides;
    if (same) return conditioning_cache(keys, keys);
    return conditioning_cache(keys, detail::widened_input(value_input, "cached_attention: value input"));
}

StoredTensor CachedAttention::cross_attention(const StoredView &x, const ConditioningCache &context,
                                              const MaskView *mask) const {
    return detail::in_dtype(config_.storage.dtype, x, "cached_attention: input",
                            [&](const Tensor &x32) { return cross_attention(x32, context, mask); });
}

std::string CachedAttention::weights_and(const Tensor &input) const {
    return detail::magnitudes(input, {{"the query projection", &query_}, {"the key projection", &key_},
                                      {"the value projection", &value_}, {"the output projection", &output_}});
}

}  // namespace hattn
