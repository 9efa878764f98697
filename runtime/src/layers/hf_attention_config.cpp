#include "hf_attention_config.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hf_rope.h"
#include "hattn/error.h"
#include "quoted.h"

namespace hattn::detail {

namespace {

using Names = CachedAttentionConfig::Names;
using Span = CachedAttentionConfig::QkNorm::Span;

// How each model type's attention module differs from Llama's, as transformers builds it. A
// look-alike with the same weight names that computes otherwise (Qwen3-Next, Hunyuan's MoE) is
// not listed, so it is refused by name.
struct ModelType {
    const char *name = "";
    // Whether q, k and v, and o, have biases: as a key says (its class default where missing), or
    // without a key always or never.
    // A null key is refused: transformers' nn.Linear(bias=None) has none, where this reader's
    // default would hold.
    struct BiasRule {
        const char *key;
        bool fallback;
        bool read(const ConfigReader &c) const {
            if (!key) return fallback;
            require(!c.states_null(key), c.source() + ": " + key + " must be true or false, got null");
            return c.get_bool(key, fallback);
        }
    };
    BiasRule qkv_bias{"attention_bias", false}, output_bias{"attention_bias", false};
    // The config class's defaults, where a config may leave them out (Gemma 3's text configs inside
    // multimodal checkpoints do): heads (none: required), KV heads (none: the heads), head_dim
    // (none: hidden_size / heads), rope_theta.
    std::optional<int64_t> heads, kv_heads, head_dim;
    double rope_theta = 10000.0;
    std::optional<Span> qk_norm;      // RMSNorm of q and k before RoPE (after it: qk_norm_after_rope)
    const char *qk_norm_key = nullptr;  // where set, the norm is there only where this key is true
    bool qk_norm_after_rope = false;    // Hunyuan: of the rotated q and k instead
    const char *qk_norm_modules[2] = {"q_norm", "k_norm"};  // the norms' weights: q's and k's modules
    bool rope_alpha = false;            // Hunyuan: dynamic RoPE's alpha, which raises the base
    double norm_eps = 1e-6;           // rms_norm_eps's default
    bool slides = false;              // a stated sliding_window applies to every layer
    // use_sliding_window: the layers layer_types names slide (Qwen2, Qwen3), or refused (the MoE
    // types, whose attention slides every layer or not by transformers version).
    bool qwen_windows = false, windows_by_layer_types = false;
    // The weights' names: Llama's, Phi-3's qkv_proj, Phi-2's dense output, or GPT-NeoX's per-head
    // query_key_value and dense output.
    Names names = Names::HuggingFace;
    // RoPE's base and fraction also under the names rotary_emb_base and rotary_pct, which
    // transformers reads over rope_theta and partial_rotary_factor (GPT-NeoX).
    bool rotary_emb_keys = false;
    // head_dim unread: hidden_size / heads (GPT-NeoX, Falcon).
    bool head_dim_unread = false;
    // The KV heads: num_key_value_heads (default kv_heads, else the heads); the heads, whatever it
    // says (GPT-NeoX); or as num_kv_heads says under new_decoder_architecture or without
    // multi_query, default true: one KV head (Falcon).
    enum class KvHeads { Stated, Heads, MultiQueryKeys } kv_heads_rule = KvHeads::Stated;
    // The config class's original_max_position_embeddings where a LongRoPE config leaves it out
    // (Phi-3: 4096); none: max_position_embeddings.
    std::optional<double> original_context;
    // A switch this layer does not have, refused where true (Phi-2's qk_layernorm, a LayerNorm
    // with a bias): the key and why.
    const char *refused_switch = nullptr;
    const char *refused_because = nullptr;
    // partial_rotary_factor is read (default partial_rotary): RoPE turns the first
    // int(head_dim x factor) dims (Phi-2 and 3, GLM, StableLM, Nemotron, GPT-NeoX); the others
    // rotate whole heads.
    bool partial_rotary_allowed = false;
    double partial_rotary = 1.0;
    // RoPE pairs (2i, 2i + 1) (Cohere, GLM, Llama 4, Helium, ERNIE 4.5)
    bool pairs_in_place = false;
    bool qk_norm_weight_plus_one = false;  // the QK-norm scales by 1 + w (Gemma 3)
    // The sliding layers' RoPE base, where sliding_layers_unscaled and this key says it (Gemma 3's
    // rope_local_base_freq, default 1e4); none: rope_theta's.
    const char *sliding_rope_base_key = nullptr;
    // use_bidirectional_attention (EmbeddingGemma): the layers attend both ways, a sliding one over
    // (sliding_window / 2) + 1 keys each way, as transformers' Gemma 3 config rewrites it.
    bool reads_bidirectional = false;
    // transformers 4 turns the sliding layers by an unscaled RoPE (Gemma 3: of rope_local_base_freq;
    // OLMo 3: of rope_theta), rope_scaling being the full layers' only.
    bool sliding_layers_unscaled = false;
    bool rope_theta_stated = false;   // OLMo 3: transformers' default moved (1e4, then 5e5)
    bool query_pre_attn_scalar = false;  // scores scaled by query_pre_attn_scalar^-1/2 (Gemma 2, 3)
    bool attention_multiplier = false;   // scores scaled by attention_multiplier, default 1 (Granite)
    // Reads attn_logit_softcapping (Gemma 2), whose class default is default_softcap (none:
    // no cap) where the key is missing; a null one is none.
    bool reads_softcap = false;
    std::optional<double> default_softcap;
    // A key the model's config states and its attention never reads (Gemma 3's
    // attn_logit_softcapping): ignored as transformers ignores it, and why, for `hattn inspect`.
    const char *unused_key = nullptr;
    const char *unused_because = nullptr;
    // The switch of a LayerNorm without bias of each head's q and k, each head its own weights
    // (Cohere's use_qk_norm, as Command R+ states it; StableLM's qk_layernorm, each head's weights
    // in a module of its own).
    const char *head_layer_norms_key = nullptr;
    bool head_layer_norms_in_modules = false;
    // clip_qkv, where stated: q, k and v clamped as projected (OLMo 1; OLMo-7B-0424: 8), or after
    // the QK-norm (OLMoE, which this layer cannot: refused); other types' attention reads none.
    enum class ClipQkv { Unread, AsProjected, AfterNorm } clip_qkv = ClipQkv::Unread;
    // Layers that differ by index: every sliding_pattern-th is full, the others slide (unless
    // layer_types says which); 0: all alike.
    int64_t sliding_pattern = 0;
    std::optional<int64_t> sliding_window = 4096;  // sliding_window's default where layers differ (none: no window)
    // Whether the full layers (where others slide) rotate: all, none (Cohere2), or none while there
    // is a window (EXAONE 4: a null sliding_window makes every layer full, and every layer rotates).
    enum class FullLayersRope { Rotate, None, NoneWhileWindowed } full_layers_rope = FullLayersRope::Rotate;
    // SmolLM3: layers differ by index in whether they rotate (no_rope_layers, no_rope_layer_interval).
    bool nope_layers = false;
    // An empty no_rope_layers means the default interval (Llama 4).
    bool empty_no_rope_layers_is_default = false;
    // The layers with RoPE attend in chunks and L2-norm q and k (after RoPE), those without scale
    // their queries by position (Llama 4, read_chunked_rope_layer).
    bool chunked_rope_layers = false;
    bool sinks = false;                     // gpt-oss: a learned sink per query head
    // gpt-oss, Apertus, Ministral 3: transformers' class default is a scaling where rope_scaling
    // (or rope_parameters) is missing, and it may read a null one otherwise; this reader cannot
    // tell the two apart, so the config must state one. Why, for the refusal.
    const char *missing_rope_scaling = nullptr;
    // Nemotron: transformers turns by an unscaled RoPE whatever rope_scaling says: a stated scaling
    // is refused rather than dropped.
    bool rope_unscaled = false;
    // Ministral 3: every layer's queries scaled by position (the RoPE parameters'
    // llama_4_scaling_beta).
    bool position_scaled_queries = false;
};

constexpr ModelType::BiasRule no_bias{nullptr, false}, always_biased{nullptr, true};

void glm_attention(ModelType &t) {
    t.qkv_bias = {"attention_bias", true}, t.output_bias = no_bias;
    t.kv_heads = 2, t.head_dim = 128, t.partial_rotary_allowed = true, t.partial_rotary = 0.5, t.pairs_in_place = true;
}

// The table, each entry naming what it changes.
const std::vector<ModelType> &model_types() {
    const auto type = [](const char *name, auto change) {
        ModelType t;
        t.name = name;
        change(t);
        return t;
    };
    static const std::vector<ModelType> types{
        type("llama", [](ModelType &) {}),
        type("mistral", [](ModelType &t) { t.qkv_bias = t.output_bias = no_bias, t.slides = true; }),
        type("mixtral", [](ModelType &t) { t.qkv_bias = t.output_bias = no_bias, t.slides = true; }),
        type("qwen2", [](ModelType &t) {
            t.qkv_bias = always_biased, t.output_bias = no_bias, t.qwen_windows = t.windows_by_layer_types = true;
        }),
        type("qwen2_moe", [](ModelType &t) {
            t.qkv_bias = {"qkv_bias", true}, t.output_bias = no_bias, t.qwen_windows = true;
        }),
        type("qwen3", [](ModelType &t) {
            t.head_dim = 128, t.qk_norm = Span::EachHead, t.qwen_windows = t.windows_by_layer_types = true;
        }),
        type("qwen3_moe", [](ModelType &t) { t.qk_norm = Span::EachHead, t.qwen_windows = true; }),
        type("olmo", [](ModelType &t) { t.clip_qkv = ModelType::ClipQkv::AsProjected; }),
        type("olmo2", [](ModelType &t) { t.qk_norm = Span::AllHeads, t.norm_eps = 1e-5; }),
        // OLMo 3: OLMo 2's attention; three layers of four slide (layer_types, else every fourth is
        // full) over sliding_window keys (4096).
        type("olmo3", [](ModelType &t) {
            t.qk_norm = Span::AllHeads, t.norm_eps = 1e-5, t.sliding_pattern = 4;
            t.sliding_layers_unscaled = t.rope_theta_stated = true;
        }),
        type("phi3", [](ModelType &t) {
            t.qkv_bias = t.output_bias = no_bias, t.slides = true, t.partial_rotary_allowed = true;
            t.names = Names::HuggingFaceFusedQkv, t.original_context = 4096.0;
        }),
        type("gemma", [](ModelType &t) { t.head_dim = 256; }),
        // Sliding and full layers alternate, the first sliding; scores soft-capped at 50 by default.
        type("gemma2", [](ModelType &t) {
            t.heads = 8, t.kv_heads = 4, t.head_dim = 256, t.sliding_pattern = 2;
            t.query_pre_attn_scalar = true, t.reads_softcap = true, t.default_softcap = 50.0;
        }),
        type("gemma3_text", [](ModelType &t) {
            t.heads = 8, t.kv_heads = 4, t.head_dim = 256, t.rope_theta = 1e6;
            t.qk_norm = Span::EachHead, t.qk_norm_weight_plus_one = t.sliding_layers_unscaled = t.reads_bidirectional = true;
            t.sliding_rope_base_key = "rope_local_base_freq";
            t.sliding_pattern = 6;
            t.query_pre_attn_scalar = true;
            t.unused_key = "attn_logit_softcapping";
            t.unused_because = "transformers' Gemma3Attention stores it and never applies it";
        }),
        type("cohere", [](ModelType &t) { t.pairs_in_place = true, t.head_layer_norms_key = "use_qk_norm"; }),
        type("cohere2", [](ModelType &t) {
            t.pairs_in_place = true, t.sliding_pattern = 4, t.full_layers_rope = ModelType::FullLayersRope::None;
            t.refused_switch = "use_qk_norm", t.refused_because = "its attention has no QK-norm";
        }),
        // GLM-4 (9B, and GLM-4-0414's glm4): the first half of each head rotates, its pairs in
        // place; q, k and v biased as attention_bias says (default true), o never.
        type("glm", [](ModelType &t) { glm_attention(t); }),
        type("glm4", [](ModelType &t) { glm_attention(t); }),
        // GLM-4.5 and 4.6 (MoE): the first half of each head rotates, as halves (not GLM-4's pairs);
        // q, k and v biased as attention_bias says (default none), o never; q and k RMS-normed per
        // head where use_qk_norm says.
        type("glm4_moe", [](ModelType &t) {
            t.qkv_bias = {"attention_bias", false}, t.output_bias = no_bias;
            t.heads = 96, t.kv_heads = 8, t.partial_rotary_allowed = true, t.partial_rotary = 0.5;
            t.qk_norm = Span::EachHead, t.qk_norm_key = "use_qk_norm", t.norm_eps = 1e-5;
        }),
        // Sliding and full layers alternate, the first sliding; every layer rotates (YaRN in the
        // released configs) and has biases and sinks.
        type("gpt_oss", [](ModelType &t) {
            t.heads = 64, t.kv_heads = 8, t.head_dim = 64, t.rope_theta = 150000.0;
            t.qkv_bias = t.output_bias = {"attention_bias", true};
            t.sliding_pattern = 2, t.sliding_window = 128, t.sinks = true, t.missing_rope_scaling = "transformers takes a missing one as YaRN x32, and 4 a null one as none";
        }),
        // Every fourth layer without RoPE (no_rope_layers says which); Llama's attention otherwise.
        type("smollm3", [](ModelType &t) {
            t.heads = 16, t.kv_heads = 4, t.rope_theta = 2e6, t.nope_layers = true, t.sliding_window = std::nullopt;
        }),
        type("llama4_text", [](ModelType &t) {
            t.heads = 40, t.kv_heads = 8, t.head_dim = 128, t.rope_theta = 500000.0;
            t.nope_layers = t.empty_no_rope_layers_is_default = t.chunked_rope_layers = t.pairs_in_place = true;
            t.sliding_window = std::nullopt;
        }),
        // StableLM (3B-4E1T, 2): a quarter of each head rotates; q, k and v biased as use_qkv_bias
        // says (default none), o never; heads of hidden_size / heads dims.
        type("stablelm", [](ModelType &t) {
            t.qkv_bias = {"use_qkv_bias", false}, t.output_bias = no_bias;
            t.partial_rotary_allowed = true, t.partial_rotary = 0.25;
            t.head_layer_norms_key = "qk_layernorm", t.head_layer_norms_in_modules = true;
        }),
        // Granite 3 (dense and MoE): Llama's attention, its scores scaled by attention_multiplier.
        type("granite", [](ModelType &t) { t.attention_multiplier = true; }),
        type("granitemoe", [](ModelType &t) { t.attention_multiplier = true; }),
        type("granitemoeshared", [](ModelType &t) { t.attention_multiplier = true; }),
        // StarCoder2: the four biased as use_bias says (default true); a stated sliding_window
        // applies to every layer.
        type("starcoder2", [](ModelType &t) {
            t.heads = 24, t.kv_heads = 2, t.qkv_bias = t.output_bias = {"use_bias", true}, t.slides = true;
        }),
        // OLMoE: OLMo 2's attention (RMSNorm over all heads, before RoPE).
        type("olmoe", [](ModelType &t) {
            t.qk_norm = Span::AllHeads, t.norm_eps = 1e-5, t.clip_qkv = ModelType::ClipQkv::AfterNorm;
        }),
        // Nemotron (Minitron): half of each head rotates (as halves), by an unscaled RoPE.
        type("nemotron", [](ModelType &t) {
            t.partial_rotary_allowed = true, t.partial_rotary = 0.5, t.rope_unscaled = true;
        }),
        // Apertus: Qwen3's per-head RMSNorm of q and k; llama3-scaled RoPE where rope_scaling is missing.
        type("apertus", [](ModelType &t) {
            t.qk_norm = Span::EachHead, t.norm_eps = 1e-5, t.rope_theta = 12e6, t.missing_rope_scaling = "transformers takes a missing one as llama3 x8, and 4 a null one as none";
        }),
        // Arcee (AFM): Llama's attention.
        type("arcee", [](ModelType &) {}),
        // Helium: pairs in place; q, k and v biased as attention_bias says, o never.
        type("helium", [](ModelType &t) {
            t.heads = 20, t.kv_heads = 20, t.head_dim = 128, t.rope_theta = 100000.0, t.pairs_in_place = true;
            t.output_bias = no_bias;
        }),
        // EXAONE 4: q and k RMS-normed per head; three layers of four slide (4096 keys), and only
        // they rotate, unless sliding_window is null (every layer full, every layer rotating).
        type("exaone4", [](ModelType &t) {
            t.qk_norm = Span::EachHead, t.norm_eps = 1e-5, t.sliding_pattern = 4;
            t.full_layers_rope = ModelType::FullLayersRope::NoneWhileWindowed;
        }),
        // ERNIE 4.5: pairs in place; the four biased as use_bias says (default none).
        type("ernie4_5", [](ModelType &t) {
            t.heads = 16, t.kv_heads = 2, t.head_dim = 128, t.rope_theta = 500000.0, t.pairs_in_place = true;
            t.qkv_bias = t.output_bias = {"use_bias", false};
        }),
        // Phi-1, 1.5 and 2: the four always biased, the output projection `dense`; half of each head
        // rotated as halves. qk_layernorm (a LayerNorm with bias) is refused.
        type("phi", [](ModelType &t) {
            t.heads = 32, t.qkv_bias = t.output_bias = always_biased, t.names = Names::HuggingFaceDenseOutput;
            t.partial_rotary_allowed = true, t.partial_rotary = 0.5;
            t.refused_switch = "qk_layernorm", t.refused_because = "a LayerNorm of q and k with a bias";
        }),
        // GPT-NeoX (Pythia): a quarter of each head rotated as halves; the four biased per
        // attention_bias (default true); no GQA.
        type("gpt_neox", [](ModelType &t) {
            t.heads = 64, t.qkv_bias = t.output_bias = {"attention_bias", true};
            t.names = Names::GroupedQueryKeyValue, t.rotary_emb_keys = t.head_dim_unread = true;
            t.kv_heads_rule = ModelType::KvHeads::Heads;
            t.partial_rotary_allowed = true, t.partial_rotary = 0.25;
        }),
        // Ministral 3: Mistral's attention, YaRN-scaled (a missing rope_parameters is YaRN x16 there),
        // its queries scaled by position on every layer.
        type("ministral3", [](ModelType &t) {
            t.heads = 32, t.kv_heads = 8, t.head_dim = 128, t.rope_theta = 1e6;
            t.qkv_bias = t.output_bias = no_bias, t.slides = true;
            t.missing_rope_scaling = "transformers takes a missing or null one as YaRN x16 with its query scaling";
            t.position_scaled_queries = true;
        }),
        // Seed-OSS: q, k and v biased as attention_bias says (default true), o as attention_out_bias.
        type("seed_oss", [](ModelType &t) {
            t.heads = 80, t.kv_heads = 8, t.head_dim = 128;
            t.qkv_bias = {"attention_bias", true}, t.output_bias = {"attention_out_bias", false};
        }),
        // Hunyuan dense (V1): q and k RMS-normed per head after RoPE (query_layernorm,
        // key_layernorm; transformers norms always, whatever use_qk_norm says); the four biased as
        // attention_bias says; a "dynamic" RoPE's alpha raises the base to theta alpha^(d / (d - 2))
        // within max_position_embeddings (past it, transformers' dynamic update drops alpha; vLLM
        // keeps it).
        // Falcon (7B, 40B, 180B, Falcon 2): query_key_value grouped per KV head and dense, both
        // biased as `bias` says; ALiBi (alibi) refused.
        type("falcon", [](ModelType &t) {
            t.heads = 71, t.names = Names::GroupedQueryKeyValue, t.head_dim_unread = true;
            t.kv_heads_rule = ModelType::KvHeads::MultiQueryKeys;
            t.qkv_bias = t.output_bias = {"bias", false};
            t.refused_switch = "alibi", t.refused_because = "ALiBi position biases, not RoPE";
        }),
        type("hunyuan_v1_dense", [](ModelType &t) {
            t.heads = 32, t.qk_norm = Span::EachHead, t.norm_eps = 1e-5, t.qk_norm_after_rope = true;
            t.qk_norm_modules[0] = "query_layernorm", t.qk_norm_modules[1] = "key_layernorm", t.rope_alpha = true;
        }),
    };
    return types;
}

const ModelType &model_type_of(const ConfigReader &c) {
    const std::string type = c.get_string("model_type", "");
    require(type != "gemma3", c.source() + ": model_type 'gemma3' is the multimodal model, read through its "
                                           "text_config (model_type gemma3_text), which this config lacks");
    std::string known;
    for (const ModelType &t : model_types()) {
        if (type == t.name) return t;
        known += std::string(known.empty() ? "" : ", ") + t.name;
    }
    throw Error(c.source() + ": model_type " + detail::quoted(type) + " is not supported by cached_attention (" + known + ")");
}

std::string str(double v) { return std::to_string(v); }
std::string str(int64_t v) { return std::to_string(v); }

// Falcon's KV heads: num_kv_heads (default the heads) under new_decoder_architecture (query_key_value
// grouped per KV head), one under multi_query (its default), else a head each (q, k and v per head,
// for which transformers' attention needs num_kv_heads to be the heads).
void read_multi_query_kv_heads(const ConfigReader &c, CachedAttentionConfig &cfg) {
    const bool new_architecture = c.get_bool("new_decoder_architecture", false);
    if (!new_architecture && c.get_bool("multi_query", true)) {
        cfg.kv_heads = 1;
        return;
    }
    cfg.kv_heads = c.get_int("num_kv_heads", cfg.heads);
    require(new_architecture || cfg.kv_heads == cfg.heads,
            c.source() + ": num_kv_heads (" + str(cfg.kv_heads) + ") must equal num_attention_heads (" + str(cfg.heads) +
                ") without multi_query or new_decoder_architecture (q, k and v per head)");
    require(cfg.kv_heads > 0 && cfg.heads % cfg.kv_heads == 0,
            c.source() + ": num_attention_heads (" + str(cfg.heads) + ") must be a multiple of num_kv_heads (" +
                str(cfg.kv_heads) + ")");
}

void read_shape(const ConfigReader &c, const ModelType &t, CachedAttentionConfig &cfg) {
    const std::string src = c.source();
    cfg.embedding_dimension = c.get_int("hidden_size");
    cfg.heads = t.heads ? c.get_int("num_attention_heads", *t.heads) : c.get_int("num_attention_heads");
    require(cfg.embedding_dimension > 0, src + ": hidden_size must be positive, got " + str(cfg.embedding_dimension));
    require(cfg.heads > 0, src + ": num_attention_heads must be positive, got " + str(cfg.heads));
    // GPT-NeoX has a key and value head per query head, whatever the config says.
    using KvHeads = ModelType::KvHeads;
    cfg.kv_heads = t.kv_heads_rule == KvHeads::Heads ? cfg.heads : c.get_int("num_key_value_heads", t.kv_heads.value_or(cfg.heads));
    if (t.kv_heads_rule == KvHeads::MultiQueryKeys) read_multi_query_kv_heads(c, cfg);
    require(cfg.kv_heads > 0 && cfg.heads % cfg.kv_heads == 0,
            src + ": num_attention_heads (" + str(cfg.heads) + ") must be a multiple of num_key_value_heads (" +
                str(cfg.kv_heads) + ")");
    if (auto d = t.head_dim_unread ? std::nullopt : c.get_optional_int("head_dim")) {
        require(*d > 0, src + ": head_dim must be positive, got " + str(*d));
        cfg.head_dimension = *d;
    } else if (t.head_dim) {
        cfg.head_dimension = *t.head_dim;  // the config class's default, whatever hidden_size says
    } else {
        require(cfg.embedding_dimension % cfg.heads == 0, src + ": hidden_size (" + str(cfg.embedding_dimension) +
                                                              ") must be divisible by num_attention_heads (" +
                                                              str(cfg.heads) + ") when head_dim is not set");
        cfg.head_dimension = cfg.embedding_dimension / cfg.heads;
    }
    require(cfg.head_dimension % 2 == 0, src + ": RoPE needs an even head_dim, got " + str(cfg.head_dimension));
}

// Qwen slides only with use_sliding_window (a missing sliding_window then means 4096, a null one
// none, on which transformers' masks fail); which layers (from max_window_layers on, or all) depends
// on the model type and the transformers version unless layer_types says, and sliding layer_types
// without use_sliding_window fail there too.
void check_qwen_windows(const ConfigReader &c, const ModelType &t, bool slides) {
    const std::string src = c.source();
    require(!slides || t.windows_by_layer_types,
            src + ": use_sliding_window is not supported for " + t.name +
                " (which layers slide depends on the layer's index and the transformers version)");
    require(!slides || c.has("layer_types"), src + ": use_sliding_window without layer_types is not supported for " +
                                                 t.name + " (which layers slide depends on the transformers version: "
                                                          "state layer_types)");
    require(!slides || !c.states_null("sliding_window"),
            src + ": use_sliding_window with a null sliding_window (transformers builds no window, or fails)");
    const auto types = t.windows_by_layer_types ? c.get_optional_string_list("layer_types") : std::nullopt;
    const bool names_sliding = types && std::find(types->begin(), types->end(), "sliding_attention") != types->end();
    require(slides || !names_sliding,
            src + ": layer_types names sliding layers, but use_sliding_window is false (transformers fails on it)");
}

// The index of the layer this config is read for, where a model's layers differ by it.
int64_t layer_index(const ConfigReader &c, const ModelType &t, std::optional<int64_t> layer) {
    const std::string src = c.source();
    const char *how = t.nope_layers ? "with RoPE or without" : "sliding or full attention";
    require(layer.has_value(), src + ": " + t.name + " layers differ by index (" + how + "): give the layer's index "
                                     "(weights opened with the prefix model.layers.N., or "
                                     "CachedAttentionConfig::from(config, N))");
    require(*layer >= 0, src + ": a layer index must not be negative, got " + str(*layer));
    require(*layer < c.get_int("num_hidden_layers", *layer + 1),
            src + ": layer " + str(*layer) + " is past num_hidden_layers " + str(c.get_int("num_hidden_layers", 0)));
    return *layer;
}

// layer_types[layer], where the config states layer_types: `special` (sliding_attention,
// chunked_attention) or full_attention, else refused.
std::optional<std::string> stated_layer_type(const ConfigReader &c, const ModelType &t, int64_t layer,
                                             const std::string &special) {
    const auto types = c.get_optional_string_list("layer_types");
    if (!types) return std::nullopt;
    const std::string src = c.source();
    require(layer < static_cast<int64_t>(types->size()),
            src + ": layer_types lists " + std::to_string(types->size()) + " layers, not layer " + str(layer));
    const std::string &type = (*types)[layer];
    require(type == special || type == "full_attention", src + ": layer_types[" + str(layer) + "] " + detail::quoted(type) +
                                                             " is not supported for " + t.name + " (" + special +
                                                             ", full_attention)");
    return type;
}

// Whether layer `layer` slides: as layer_types says, else every sliding_window_pattern-th layer is
// full where the model type has a pattern, else as slides_without_pattern says.
bool layer_slides(const ConfigReader &c, const ModelType &t, int64_t layer, bool slides_without_pattern) {
    const std::string src = c.source();
    if (const auto type = stated_layer_type(c, t, layer, "sliding_attention")) return *type == "sliding_attention";
    if (!t.sliding_pattern) return slides_without_pattern;
    const int64_t pattern = c.get_int("sliding_window_pattern", t.sliding_pattern);
    require(pattern > 0, src + ": sliding_window_pattern must be positive, got " + str(pattern));
    return (layer + 1) % pattern != 0;
}

// SmolLM3, Llama 4: whether layer `layer` rotates, as no_rope_layers says (1: RoPE, 0: none), else
// all but every no_rope_layer_interval-th layer (4). Llama 4 reads an empty list as none.
bool layer_rotates(const ConfigReader &c, const ModelType &t, int64_t layer) {
    const std::string src = c.source();
    const auto rotates = c.get_optional_int_list("no_rope_layers");
    if (rotates && !(t.empty_no_rope_layers_is_default && rotates->empty())) {
        require(layer < static_cast<int64_t>(rotates->size()),
                src + ": no_rope_layers lists " + std::to_string(rotates->size()) + " layers, not layer " + str(layer));
        return (*rotates)[layer] != 0;
    }
    const int64_t interval = c.get_int("no_rope_layer_interval", 4);
    require(interval > 0, src + ": no_rope_layer_interval must be positive, got " + str(interval));
    return (layer + 1) % interval != 0;
}

double rms_norm_eps(const ConfigReader &c, double fallback) {
    const double eps = c.get_number("rms_norm_eps", fallback);
    require(eps > 0, c.source() + ": rms_norm_eps must be positive, got " + str(eps));
    return eps;
}

// Llama 4's layer `layer` (chunked_rope_layers): the layers with RoPE (layer_types' chunked_attention where stated) see
// attention_chunk_size keys (8192) and RMS-normalise q and k without weights (use_qk_norm); the
// others scale their queries by position (attn_temperature_tuning, a bool or, as Scout states it, a
// number). Their RoPE turns pairs (2i, 2i + 1), as complex numbers.
void read_chunked_rope_layer(const ConfigReader &c, const ModelType &t, int64_t layer, bool rotates,
                       CachedAttentionConfig &cfg) {
    const std::string src = c.source();
    const std::optional<std::string> type = stated_layer_type(c, t, layer, "chunked_attention");
    const bool chunked = type ? *type == "chunked_attention" : rotates;
    if (chunked) {
        require(!c.states_null("attention_chunk_size"), src + ": a chunked layer needs attention_chunk_size, got null");
        const int64_t chunk = c.get_int("attention_chunk_size", 8192);
        require(chunk > 0, src + ": attention_chunk_size must be positive, got " + str(chunk));
        cfg.attention_chunk = chunk;
    }
    if (rotates && c.get_bool("use_qk_norm", true)) {
        CachedAttentionConfig::QkNorm norm{Span::EachHead, rms_norm_eps(c, 1e-5)};
        norm.weighted = false;
        cfg.qk_norm = norm;
    }
    if (!rotates && c.get_flag("attn_temperature_tuning", true)) {
        CachedAttentionConfig::QueryTemperature temperature;
        temperature.floor_scale = c.get_number("floor_scale", temperature.floor_scale);
        temperature.scale = c.get_number("attn_scale", temperature.scale);
        require(temperature.floor_scale > 0 && std::isfinite(temperature.floor_scale),
                src + ": floor_scale must be positive, got " + str(temperature.floor_scale));
        require(temperature.scale >= 0 && std::isfinite(temperature.scale),
                src + ": attn_scale must be 0 or positive, got " + str(temperature.scale));
        cfg.query_temperature = temperature;
    }
}

// Ministral 3: the query at position p (from 0) scaled by 1 + beta log(1 + floor(p / original)),
// beta the RoPE parameters' llama_4_scaling_beta (0: none; transformers fails without one) and
// original their original_max_position_embeddings.
void read_position_scaled_queries(const ConfigReader &c, CachedAttentionConfig &cfg) {
    const std::optional<ConfigReader> stated = rope_object(c);
    require(stated.has_value(), c.source() + ": llama_4_scaling_beta is required in rope_parameters (transformers fails "
                                             "without it; 0 for none)");
    const ConfigReader &rope = *stated;
    require(rope.has("llama_4_scaling_beta"),
            rope.source() + ": llama_4_scaling_beta is required (transformers fails without it; 0 for none)");
    const double beta = rope.get_number("llama_4_scaling_beta");
    require(beta >= 0 && std::isfinite(beta), rope.source() + ": llama_4_scaling_beta must be 0 or positive, got " + str(beta));
    if (beta == 0) return;
    const double original = rope.get_number("original_max_position_embeddings");
    require(original > 0 && std::isfinite(original),
            rope.source() + ": original_max_position_embeddings must be positive, got " + str(original));
    cfg.query_temperature = CachedAttentionConfig::QueryTemperature{original, beta, 0};
}

// A LayerNorm without bias of each head's q and k, each head its own weights (Command R+'s
// use_qk_norm; StableLM's qk_layernorm, its weights in a module per head), eps layer_norm_eps.
CachedAttentionConfig::QkNorm head_layer_norms(const ConfigReader &c, bool weights_in_head_modules) {
    const double eps = c.get_number("layer_norm_eps", 1e-5);
    require(eps > 0, c.source() + ": layer_norm_eps must be positive, got " + str(eps));
    CachedAttentionConfig::QkNorm norm{Span::EachHead, eps};
    norm.centred = norm.weights_per_head = true;
    norm.weights_in_head_modules = weights_in_head_modules;
    if (weights_in_head_modules) norm.query_module = "q_layernorm", norm.key_module = "k_layernorm";
    return norm;
}

void read_rope(const ConfigReader &c, const ModelType &t, std::optional<bool> slides, bool rotates,
               CachedAttentionConfig &cfg) {
    const std::string src = c.source();
    // A layer without RoPE reads none of its keys: a scaling this reader refuses passes there.
    if (!rotates) return;
    require(!t.rope_theta_stated || c.has("rope_theta") || c.has("rope_parameters"),
            src + ": " + t.name + " needs its rope_theta stated (transformers' default for it has changed)");
    if (t.missing_rope_scaling) {
        require(c.has("rope_scaling") || c.has("rope_parameters"),
                src + ": " + t.name + " needs its RoPE scaling stated in rope_scaling or rope_parameters (" +
                    t.missing_rope_scaling + ")");
    }
    const std::string layer_type = !slides ? "" : *slides ? "sliding_attention" : "full_attention";
    HfRope rope = hf_rope(c, {t.rope_theta, t.partial_rotary, true, layer_type, true, t.original_context, t.rope_alpha});
    if (t.rotary_emb_keys) {  // transformers 4 sets, and 5 fills in, these over rope_theta and partial_rotary_factor
        rope.theta = c.get_number("rotary_emb_base", rope.theta);
        rope.partial_rotary_factor = c.get_number("rotary_pct", rope.partial_rotary_factor);
        require(rope.theta > 0, src + ": rotary_emb_base must be positive, got " + str(rope.theta));
    }
    require(!t.rope_unscaled || rope.scaling.type == RopeScaling::Type::None,
            src + ": a RoPE scaling is not supported for " + t.name + " (transformers turns its heads by an unscaled "
                                                                     "RoPE whatever the config says)");
    // Phi-3 turns the first int(head_dim x factor) dims (Phi-4-mini: 0.75), Phi-2, GLM and Nemotron
    // half, StableLM and GPT-NeoX a quarter; the other models' attention rotates whole heads
    // (transformers fails on a fraction there).
    require(t.partial_rotary_allowed || rope.partial_rotary_factor == 1.0,
            src + ": partial_rotary_factor " + str(rope.partial_rotary_factor) + " is not supported for " + t.name +
                " (whole-head RoPE only)");
    const auto rotary = static_cast<int64_t>(double(cfg.head_dimension) * rope.partial_rotary_factor);
    require(rope.partial_rotary_factor > 0 && rope.partial_rotary_factor <= 1 && rotary >= 2 && rotary % 2 == 0,
            src + ": partial_rotary_factor " + str(rope.partial_rotary_factor) + " of head_dim " +
                str(cfg.head_dimension) + " must turn an even number of dims, got " + str(rotary));
    require(rope.scaling.type != RopeScaling::Type::LongRope || int64_t(rope.scaling.short_factors.size()) == rotary / 2,
            src + ": longrope's short_factor and long_factor need one value per rotated pair (" + str(rotary / 2) +
                "), got " + std::to_string(rope.scaling.short_factors.size()));
    cfg.rotary_dimension = rotary == cfg.head_dimension ? 0 : rotary;  // 0: the whole head
    cfg.rope_base = rope.theta;
    cfg.rope_scaling = rope.scaling;
    // transformers 5 nests rope_parameters by layer type (read above); 4 gives the sliding layers an
    // unscaled RoPE (Gemma 3's of rope_local_base_freq), and rope_scaling to the full ones.
    const bool nested = c.has("rope_parameters") && c.object("rope_parameters").has("sliding_attention");
    if (slides.value_or(false) && t.sliding_layers_unscaled && !nested) {
        if (t.sliding_rope_base_key) {
            cfg.rope_base = c.get_number(t.sliding_rope_base_key, 10000.0);
            require(*cfg.rope_base > 0, src + ": " + t.sliding_rope_base_key + " must be positive");
        }
        cfg.rope_scaling = RopeScaling{};
    }
}

// Whether the layers of this config read differently by their index.
bool layers_differ(const ConfigReader &c, const ModelType &t) {
    // EXAONE 4 with a null window: every layer full and rotating, whatever its index.
    const bool windowless =
        t.full_layers_rope == ModelType::FullLayersRope::NoneWhileWindowed && c.states_null("sliding_window");
    const bool qwen_slides = t.qwen_windows && c.get_bool("use_sliding_window", false);
    return (t.sliding_pattern && !windowless) || t.nope_layers || qwen_slides;
}

void read_window(const ConfigReader &c, const ModelType &t, bool layer_slides, CachedAttentionConfig &cfg) {
    const std::string src = c.source();
    std::optional<int64_t> window;
    if (t.slides) window = c.get_optional_int("sliding_window");
    if (layer_slides) window = t.sliding_window ? c.get_int("sliding_window", *t.sliding_window) : c.get_optional_int("sliding_window");
    if (!window) return;
    require(*window > 0, src + ": sliding_window must be positive, got " + str(*window));
    // transformers' Gemma 3 config keeps (sliding_window // 2) + 1 of a bidirectional model's
    // window (EmbeddingGemma's 512: 257, each query seeing |p - j| < 257). A config re-saved by a
    // transformers that wrote 257 back reloads as 129, there and here alike.
    cfg.sliding_window = cfg.causal ? *window : *window / 2 + 1;
}

}  // namespace

CachedAttentionConfig hugging_face_attention_config(const ConfigReader &c, std::optional<int64_t> layer) {
    const ModelType &t = model_type_of(c);
    // Encoders built on these types attend both ways: EmbeddingGemma's as read below; the others
    // (is_causal false: transformers 5's windows reach one key farther than Gemma 3's) refused.
    const bool both_ways = c.get_bool("use_bidirectional_attention", false);
    require(!both_ways || t.reads_bidirectional, c.source() + ": use_bidirectional_attention is not supported for " +
                                                     t.name + " (Gemma 3's only: these layers are causal)");
    require(c.get_bool("is_causal", true),
            c.source() + ": is_causal false (bidirectional attention) is not supported for " + t.name +
                " (use_bidirectional_attention: Gemma 3's only)");
    CachedAttentionConfig cfg;
    cfg.causal = !both_ways;
    require(t.clip_qkv != ModelType::ClipQkv::AfterNorm || !c.has("clip_qkv"),
            c.source() + ": clip_qkv is not supported for " + t.name + " (it clamps q, k and v after the QK-norm; "
                         "this layer clamps them as projected)");
    if (t.clip_qkv == ModelType::ClipQkv::AsProjected && c.has("clip_qkv")) {
        const double clip = c.get_number("clip_qkv");
        require(clip > 0 && std::isfinite(clip), c.source() + ": clip_qkv must be positive (or null for none), got " + str(clip));
        cfg.qkv_clip = clip;
    }
    if (t.refused_switch) {
        require(!c.get_bool(t.refused_switch, false), c.source() + ": " + t.refused_switch + " is not supported for " +
                                                          t.name + " (" + t.refused_because + ")");
    }
    cfg.names = t.names;
    cfg.layer = layer;
    read_shape(c, t, cfg);
    cfg.bias = t.qkv_bias.read(c);
    cfg.output_bias = t.output_bias.read(c);
    const bool qwen_slides = t.qwen_windows && c.get_bool("use_sliding_window", false);
    check_qwen_windows(c, t, qwen_slides);
    std::optional<bool> slides;
    bool rotates = true;
    if (layers_differ(c, t)) {
        const int64_t index = layer_index(c, t, layer);
        if (t.nope_layers) rotates = layer_rotates(c, t, index);
        // SmolLM3 slides its layers without RoPE where use_sliding_window and sliding_window say so.
        const bool nope_slides =
            t.nope_layers && !rotates && c.get_bool("use_sliding_window", false) && c.has("sliding_window");
        if (t.chunked_rope_layers) {
            read_chunked_rope_layer(c, t, index, rotates, cfg);
        } else {
            slides = layer_slides(c, t, index, nope_slides);
            if (!*slides && t.full_layers_rope != ModelType::FullLayersRope::Rotate) rotates = false;
        }
    }
    read_rope(c, t, slides, rotates, cfg);
    if (t.position_scaled_queries) read_position_scaled_queries(c, cfg);
    read_window(c, t, slides.value_or(false), cfg);
    cfg.sinks = t.sinks;
    if (t.qk_norm && (!t.qk_norm_key || c.get_bool(t.qk_norm_key, false))) {
        cfg.qk_norm = CachedAttentionConfig::QkNorm{*t.qk_norm, rms_norm_eps(c, t.norm_eps), t.qk_norm_weight_plus_one};
        cfg.qk_norm->query_module = t.qk_norm_modules[0], cfg.qk_norm->key_module = t.qk_norm_modules[1];
        cfg.qk_norm->after_rope = t.qk_norm_after_rope;
    }
    if (t.chunked_rope_layers && cfg.qk_norm) {
        // transformers norms q and k after RoPE, which takes out any amplitude the table carries
        // (YaRN's or LongRoPE's attention factor); this layer norms before RoPE, so its table must
        // carry none.
        cfg.rope_scaling.attention_factor = 1.0;
    }
    if (t.pairs_in_place) cfg.rope_layout = RopeLayout::Interleaved;
    if (t.head_layer_norms_key && c.get_bool(t.head_layer_norms_key, false)) {
        cfg.qk_norm = head_layer_norms(c, t.head_layer_norms_in_modules);
    }
    if (t.query_pre_attn_scalar) {
        // Gemma 3 27B: 168 against a head_dim of 128.
        const double scalar = c.get_number("query_pre_attn_scalar", 256.0);
        require(scalar > 0 && std::isfinite(scalar), c.source() + ": query_pre_attn_scalar must be positive, got " + str(scalar));
        cfg.attention_scale = 1.0 / std::sqrt(scalar);
    }
    if (t.attention_multiplier) {
        // 1 / head_dim in the released Granite 3 configs (0.0078125 at head_dim 128), not 1 / sqrt.
        const double multiplier = c.get_number("attention_multiplier", 1.0);
        require(multiplier > 0 && std::isfinite(multiplier),
                c.source() + ": attention_multiplier must be positive, got " + str(multiplier));
        cfg.attention_scale = multiplier;
    }
    if (t.reads_softcap && (c.has("attn_logit_softcapping") || (t.default_softcap && !c.states_null("attn_logit_softcapping")))) {
        const double softcap = c.get_number("attn_logit_softcapping", t.default_softcap.value_or(0.0));
        require(softcap > 0 && std::isfinite(softcap),
                c.source() + ": attn_logit_softcapping must be positive (or null for none), got " + str(softcap));
        cfg.score_softcap = softcap;
    }
    return cfg;
}

int64_t hugging_face_layer_period(const ConfigReader &config) {
    const ConfigReader c = text_model_config(config);
    const ModelType &t = model_type_of(c);
    if (!layers_differ(c, t)) return 1;
    if (c.has("layer_types")) return 0;
    // One rule per model type: where layers differ by whether they rotate, or by whether they slide.
    if (t.nope_layers && t.sliding_pattern) return 0;
    const auto rotates = c.get_optional_int_list("no_rope_layers");
    if (t.nope_layers && rotates && !(t.empty_no_rope_layers_is_default && rotates->empty())) return 0;
    const int64_t period = t.nope_layers ? c.get_int("no_rope_layer_interval", 4)
                                         : c.get_int("sliding_window_pattern", t.sliding_pattern);
    return period > 0 ? period : 1;  // (not positive: layer 0's reading refuses it)
}

std::vector<std::string> hugging_face_unused_keys(const ConfigReader &config) {
    const ConfigReader c = text_model_config(config);
    const ModelType &t = model_type_of(c);
    if (!t.unused_key || !c.has(t.unused_key)) return {};
    return {std::string(t.unused_key) + " is ignored: " + t.unused_because};
}

}  // namespace hattn::detail
