// CachedAttentionConfig: the seed's config (spec/attention.md section 1) read and checked, a
// Hugging Face config.json handed to hf_attention_config.cpp, and validate() for any config.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "hf_attention_config.h"
#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "quoted.h"

namespace hattn {

namespace {

bool is_hugging_face(const ConfigReader &c) {
    return !c.has("embedding_dimension") && (c.has("hidden_size") || c.has("model_type"));
}

}  // namespace

CachedAttentionConfig CachedAttentionConfig::from(const ConfigReader &config, const Weights &weights) {
    const std::optional<int64_t> layer = weights.layer_index();
    return layer && is_hugging_face(text_model_config(config)) ? from(config, *layer) : from(config);
}

std::vector<std::string> CachedAttentionConfig::unused_keys(const ConfigReader &config) {
    return is_hugging_face(text_model_config(config)) ? detail::hugging_face_unused_keys(config)
                                                      : std::vector<std::string>{};
}

int64_t CachedAttentionConfig::layer_period(const ConfigReader &config) {
    return is_hugging_face(text_model_config(config)) ? detail::hugging_face_layer_period(config) : 1;
}

CachedAttentionConfig CachedAttentionConfig::from(const ConfigReader &config, int64_t layer) {
    const ConfigReader c = text_model_config(config);
    require(is_hugging_face(c),
            [&] { return c.source() + ": a layer index is read only with a Hugging Face config.json"; });
    return detail::hugging_face_attention_config(c, layer);
}

CachedAttentionConfig CachedAttentionConfig::from(const ConfigReader &config) {
    const ConfigReader c = text_model_config(config);
    if (is_hugging_face(c)) return detail::hugging_face_attention_config(c, std::nullopt);
    c.refuse_likely_typos({"embedding_dimension", "number_of_heads", "number_of_key_value_heads", "head_dimension",
                           "dropout", "bias", "attention_type", "rope_base"});
    const std::string src = c.source();
    CachedAttentionConfig cfg;
    cfg.embedding_dimension = c.get_int("embedding_dimension");
    cfg.heads = c.get_int("number_of_heads");
    require(cfg.embedding_dimension > 0, [&] {
        return src + ": embedding_dimension must be positive, got " + std::to_string(cfg.embedding_dimension);
    });
    require(cfg.heads > 0,
            [&] { return src + ": number_of_heads must be positive, got " + std::to_string(cfg.heads); });
    if (auto d = c.get_optional_int("head_dimension")) {
        require(*d > 0, [&] { return src + ": head_dimension must be positive, got " + std::to_string(*d); });
        cfg.head_dimension = *d;
    } else {
        require(cfg.embedding_dimension % cfg.heads == 0, [&] {
            return src + ": embedding_dimension (" + std::to_string(cfg.embedding_dimension) +
                   ") must be divisible by number_of_heads (" + std::to_string(cfg.heads) + ")";
        });
        cfg.head_dimension = cfg.embedding_dimension / cfg.heads;
    }
    const std::string type = c.get_string("attention_type", "multi_head");
    const std::optional<int64_t> kv = c.get_optional_int("number_of_key_value_heads");
    if (type == "grouped_query") {
        require(kv.has_value(),
                [&] { return src + ": attention_type grouped_query requires number_of_key_value_heads"; });
        require(*kv > 0,
                [&] { return src + ": number_of_key_value_heads must be positive, got " + std::to_string(*kv); });
        require(cfg.heads % *kv == 0, [&] {
            return src + ": number_of_heads (" + std::to_string(cfg.heads) +
                   ") must be divisible by number_of_key_value_heads (" + std::to_string(*kv) + ")";
        });
        cfg.kv_heads = *kv;
    } else if (type == "multi_head") {
        require(!kv || *kv == cfg.heads, [&] {
            return src + ": number_of_key_value_heads must be null or equal to number_of_heads (" +
                   std::to_string(cfg.heads) + ") for multi_head attention, got " + std::to_string(kv.value_or(0));
        });
        cfg.kv_heads = cfg.heads;
    } else {
        throw Error(src + ": unsupported attention_type " + detail::quoted(type) +
                    " (must be one of multi_head, grouped_query)");
    }
    cfg.bias = cfg.output_bias = c.get_bool("bias", true);
    cfg.rope_base = c.get_optional_number("rope_base");
    if (cfg.rope_base) {
        require(cfg.head_dimension % 2 == 0, [&] {
            return src + ": RoPE (rope_base " + std::to_string(*cfg.rope_base) +
                   ") needs an even head_dimension, got " + std::to_string(cfg.head_dimension);
        });
        require(*cfg.rope_base > 0, [&] { return src + ": rope_base must be positive"; });
    }
    return cfg;
}

int64_t CachedAttentionConfig::cache_bytes_per_token(DType kv_dtype) const {
    // An int8 group is one token's values of one KV head: D codes and a float32 scale.
    const int64_t row = kv_dtype == DType::Int8 ? head_dimension + static_cast<int64_t>(sizeof(float))
                                               : head_dimension * static_cast<int64_t>(dtype_size(kv_dtype));
    return 2 * kv_heads * row;
}

void CachedAttentionConfig::validate() const {
    const int64_t E = embedding_dimension, D = head_dimension;
    require_supported(storage, "cached_attention", true);
    require(storage.kv_dtype != DType::Int8 || head_dimension % 4 == 0, [&] {
        return "cached_attention: an int8 cache needs a head dimension that is a multiple of 4, got " +
               std::to_string(head_dimension);
    });
    require(E > 0 && D > 0 && heads > 0 && kv_heads > 0 && heads % kv_heads == 0, [&] {
        return "cached_attention: E=" + std::to_string(E) + " H=" + std::to_string(heads) +
               " Hkv=" + std::to_string(kv_heads) + " D=" + std::to_string(D) +
               ": each must be positive, and H a multiple of Hkv";
    });
    require(!sliding_window || *sliding_window > 0, [&] {
        return "cached_attention: sliding_window must be positive, got " + std::to_string(sliding_window.value_or(0));
    });
    require(!attention_chunk || *attention_chunk > 0, [&] {
        return "cached_attention: attention_chunk must be positive, got " + std::to_string(attention_chunk.value_or(0));
    });
    require(!sliding_window || !attention_chunk,
            "cached_attention: a layer slides (sliding_window) or attends in chunks (attention_chunk), not both");
    require(causal || !attention_chunk, "cached_attention: a layer that attends in chunks (attention_chunk) is causal");
    if (const auto &t = query_temperature) {
        require(std::isfinite(t->floor_scale) && t->floor_scale > 0, [&] {
            return "cached_attention: the query temperature's floor_scale must be positive, got " +
                   std::to_string(t->floor_scale);
        });
        require(std::isfinite(t->scale) && t->scale >= 0, [&] {
            return "cached_attention: the query temperature's scale must be 0 or positive, got " +
                   std::to_string(t->scale);
        });
        require(D % 2 == 0, [&] {
            return "cached_attention: a query temperature needs an even head dimension, got " + std::to_string(D);
        });
        require(t->position_offset >= 0, [&] {
            return "cached_attention: the query temperature's position_offset must not be negative, got " +
                   std::to_string(t->position_offset);
        });
    }
    require(rotary_dimension >= 0 && rotary_dimension <= D && rotary_dimension % 2 == 0, [&] {
        return "cached_attention: rotary_dimension must be even and at most the head dimension " + std::to_string(D) +
               ", got " + std::to_string(rotary_dimension);
    });
    if (rope_base) {
        require(std::isfinite(*rope_base) && *rope_base > 0,
                [&] { return "cached_attention: rope_base must be positive, got " + std::to_string(*rope_base); });
        // RoPE pairs dims: it turns an even count of them (rotary_dimension 0: the whole head).
        require(rotary_dimension > 0 || D % 2 == 0, [&] {
            return "cached_attention: RoPE needs an even head dimension (or a rotary_dimension), got " +
                   std::to_string(D);
        });
    }
    // Scale, caps and clip reach the kernels as floats: positive normal floats (a tiny cap would
    // round to 0, which the kernels read as none; a huge scale to inf).
    const auto require_positive_float = [](const std::optional<double> &v, const char *name) {
        require(!v || (*v > 0 && std::isnormal(static_cast<float>(*v))), [&] {
            return std::string("cached_attention: ") + name + " must be a positive normal float, got " +
                   std::to_string(v.value_or(0));
        });
    };
    require_positive_float(qkv_clip, "qkv_clip");
    require_positive_float(attention_scale, "attention_scale");
    require_positive_float(score_softcap, "score_softcap");
    // Phi-3 has no biases; a fused qkv_proj is split without them.
    require(names != Names::HuggingFaceFusedQkv || !bias,
            "cached_attention: a fused qkv_proj has no biases here (Phi-3 has none)");
    if (qk_norm) {
        // (as the float the norm kernels take)
        require(std::isfinite(qk_norm->eps) && static_cast<float>(qk_norm->eps) > 0, [&] {
            return "cached_attention: the QK-norm's eps must be positive, got " + std::to_string(qk_norm->eps);
        });
        require(qk_norm->span == QkNorm::Span::EachHead || !qk_norm->weights_per_head,
                "cached_attention: a QK-norm with weights per head spans each head");
        require(!qk_norm->weights_in_head_modules || qk_norm->weights_per_head,
                "cached_attention: QK-norm weights in modules of their own per head are weights per head");
    }
}

}  // namespace hattn
