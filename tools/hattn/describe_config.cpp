#include "describe_config.h"

#include <iostream>
#include <optional>
#include <sstream>

#include "hattn/config.h"
#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"

namespace hattn::cli {

namespace {

std::string scaling_text(const RopeScaling &s) {
    std::ostringstream out;
    switch (s.type) {
    case RopeScaling::Type::None: return "";
    case RopeScaling::Type::Linear: out << ", linear x" << s.factor; break;
    case RopeScaling::Type::Llama3:
        out << ", llama3 x" << s.factor << " from " << s.original_context << " positions";
        break;
    case RopeScaling::Type::Yarn:
        out << ", yarn x" << s.factor << " from " << s.original_context << " positions (amplitude "
            << s.attention_factor << ")";
        break;
    case RopeScaling::Type::LongRope:
        out << ", longrope (short factors, long past " << s.original_context << " positions; amplitude "
            << s.attention_factor << ")";
        break;
    case RopeScaling::Type::Dynamic:
        out << ", dynamic x" << s.factor << " (each call past " << s.original_context << " positions its own base)";
        if (s.alpha != 1.0) out << ", alpha " << s.alpha << " within them";
        break;
    }
    return out.str();
}

// One line: what a layer of this config computes.
std::string describe(const CachedAttentionConfig &c) {
    using Names = CachedAttentionConfig::Names;
    std::ostringstream out;
    out << "E=" << c.embedding_dimension << " H=" << c.heads << " Hkv=" << c.kv_heads << " D=" << c.head_dimension;
    if (c.rope_base) {
        out << "; RoPE theta " << *c.rope_base << scaling_text(c.rope_scaling);
        if (c.rotary_dimension) out << " over " << c.rotary_dimension << " dims";
        if (c.rope_layout == RopeLayout::Interleaved) out << ", interleaved pairs";
    } else {
        out << "; no RoPE";
    }
    if (c.qk_norm) {
        out << "; QK-norm " << (c.qk_norm->centred ? "LayerNorm " : "")
            << (c.qk_norm->span == CachedAttentionConfig::QkNorm::Span::EachHead ? "per head" : "over all heads")
            << (c.qk_norm->weights_per_head ? " with its own weights" : "")
            << (c.qk_norm->weighted ? "" : " without weights")
            << (c.qk_norm->weight_plus_one ? " by 1 + w" : "") << (c.qk_norm->after_rope ? " after RoPE" : "")
            << " eps " << c.qk_norm->eps;
    }
    if (c.qkv_clip) out << "; q, k and v clamped to +-" << *c.qkv_clip;
    if (c.attention_scale) out << "; scale " << *c.attention_scale;
    out << "; " << (c.sliding_window    ? "window " + std::to_string(*c.sliding_window)
                    : c.attention_chunk ? "chunks of " + std::to_string(*c.attention_chunk)
                                        : std::string("every key"));
    if (!c.causal) out << " both ways";
    if (const auto &t = c.query_temperature) {
        const std::string p = t->position_offset ? "(p + " + std::to_string(t->position_offset) + ")" : "p";
        out << "; queries scaled by log(1 + floor(" << p << " / " << t->floor_scale << ")) * " << t->scale << " + 1";
    }
    if (c.sinks) out << "; sinks";
    if (c.score_softcap) out << "; scores soft-capped at " << *c.score_softcap;
    out << "; biases " << (c.bias ? (c.output_bias ? "q, k, v, o" : "q, k, v") : (c.output_bias ? "o" : "none"));
    if (c.names == Names::HuggingFaceFusedQkv) out << "; weights qkv_proj, o_proj";
    if (c.names == Names::HuggingFaceDenseOutput) out << "; weights q_proj, k_proj, v_proj, dense";
    if (c.names == Names::GroupedQueryKeyValue) out << "; weights query_key_value (per KV head), dense";
    return out.str();
}

// The checkpoint's own storage type where its config states one (torch_dtype, or transformers 5's
// dtype; a multimodal model's in its text_config or at the top), as PyTorch names it.
std::optional<std::string> stated_dtype(const ConfigReader &config) {
    for (const ConfigReader &c : {text_model_config(config), config}) {
        for (const char *key : {"torch_dtype", "dtype"}) {
            if (c.has(key)) return c.get_string(key);
        }
    }
    return std::nullopt;
}

// What a layer's cache takes per token in each storage type, and the checkpoint's own type.
std::string storage_text(const ConfigReader &config, const CachedAttentionConfig &layer) {
    std::ostringstream out;
    if (const std::optional<std::string> dtype = stated_dtype(config)) {
        const bool known = *dtype == "float32" || *dtype == "bfloat16" || *dtype == "float16";
        out << "  checkpoint dtype " << (known ? *dtype : std::string("(not float32, bfloat16 or float16)"))
            << ": layers store what --dtype asks (f32 unless asked)\n";
    }
    out << "  cache per token and layer: " << layer.cache_bytes_per_token(DType::F32) << " bytes in f32, "
        << layer.cache_bytes_per_token(DType::BF16) << " in bf16 or f16, " << layer.cache_bytes_per_token(DType::Int8)
        << " in int8 (codes and scales)\n";
    return out.str();
}

std::string unused_keys_text(const ConfigReader &config) {
    std::string text;
    for (const std::string &line : CachedAttentionConfig::unused_keys(config)) text += "  note: " + line + "\n";
    return text;
}

// Past this many layers, layers that follow a rule are described by it, not one by one.
constexpr int64_t max_listed_layers = 4096;

// Each run of consecutive layers that read alike, on a line.
std::string consecutive_layers(const ConfigReader &config, int64_t layers) {
    std::ostringstream out;
    int64_t first = 0;
    std::string current;
    for (int64_t layer = 0; layer <= layers; layer++) {
        const std::string line = layer < layers ? describe(CachedAttentionConfig::from(config, layer)) : "";
        if (layer > 0 && line != current) {
            out << "  layer" << (layer - 1 > first ? "s " + std::to_string(first) + "-" : " ") << (layer - 1) << ": "
                << current << "\n";
            first = layer;
        }
        current = line;
    }
    return out.str();
}

// Layers whose rule repeats every `period` (every period-th layer reads otherwise), without
// reading each: a config may state two billion layers.
std::string periodic_layers(const ConfigReader &config, int64_t layers, int64_t period) {
    const std::string most = describe(CachedAttentionConfig::from(config, 0));
    const std::string every = period > 1 && period <= layers ? describe(CachedAttentionConfig::from(config, period - 1)) : most;
    if (every == most) return "  layers 0-" + std::to_string(layers - 1) + ": " + most + "\n";
    const std::string p = std::to_string(period);
    return "  layers i with (i + 1) % " + p + " != 0: " + most + "\n  layers i with (i + 1) % " + p + " == 0 (" +
           std::to_string(period - 1) + ", " + std::to_string(2 * period - 1) + ", ...): " + every + "\n";
}

}  // namespace

void describe_attention_config(const std::string &path) {
    const ConfigReader config = ConfigReader::from_file(path);
    const ConfigReader text = text_model_config(config);
    if (text.has("embedding_dimension") || !text.has("num_hidden_layers")) {
        const CachedAttentionConfig layer = CachedAttentionConfig::from(config);  // before any output: it may refuse
        std::cout << path << ": cached_attention: " << describe(layer) << "\n" << storage_text(config, layer)
                  << unused_keys_text(config);
        return;
    }
    // Every layer is read before anything is printed: a refused config prints only its error.
    const int64_t layers = text.get_int("num_hidden_layers");
    require(layers >= 0, path + ": num_hidden_layers must not be negative, got " + std::to_string(layers));
    std::ostringstream out;
    out << path << ": cached_attention, " << layers << " layers\n";
    const int64_t period = CachedAttentionConfig::layer_period(config);
    // Each layer reads the whole list again: listing a hostile config's millions would take hours.
    require(period > 0 || layers <= max_listed_layers, [&] {
        return path + ": num_hidden_layers " + std::to_string(layers) + " with layers listed one by one (layer_types, "
               "no_rope_layers): at most " + std::to_string(max_listed_layers) + " are described";
    });
    if (layers > max_listed_layers) {
        out << periodic_layers(config, layers, period);
    } else {
        out << consecutive_layers(config, layers);
    }
    if (layers > 0) out << storage_text(config, CachedAttentionConfig::from(config, 0));
    std::cout << out.str() << unused_keys_text(config);
}

}  // namespace hattn::cli
