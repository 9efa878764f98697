#include "describe_config.h"

#include <iostream>
#include <sstream>

#include "hattn/config.h"
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

}  // namespace

void describe_attention_config(const std::string &path) {
    const ConfigReader config = ConfigReader::from_file(path);
    const ConfigReader text = text_model_config(config);
    if (text.has("embedding_dimension") || !text.has("num_hidden_layers")) {
        const std::string line = describe(CachedAttentionConfig::from(config));  // before any output: it may refuse
        std::cout << path << ": cached_attention: " << line << "\n";
        return;
    }
    // Every layer is read before anything is printed: a refused config prints only its error.
    const int64_t layers = text.get_int("num_hidden_layers");
    std::ostringstream out;
    out << path << ": cached_attention, " << layers << " layers\n";
    // Consecutive layers that read the same are one line.
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
    std::cout << out.str();
}

}  // namespace hattn::cli
