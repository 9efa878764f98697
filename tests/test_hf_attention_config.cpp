// hattn::CachedAttentionConfig::from on config.json files, table-driven: each case a config (read for
// one layer where a model's layers differ by index) and the fields it gives, or the message it is
// refused with. Layers built from such configs and their weights are test_cached_attention.cpp's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hattn/config.h"
#include "hattn/error.h"
#include "hattn/kernels/rope.h"
#include "hattn/layers/cached_attention.h"
#include "support/config.h"
#include "support/errors.h"

namespace hattn {
namespace {

using Names = CachedAttentionConfig::Names;
using Span = CachedAttentionConfig::QkNorm::Span;
using Expect = std::function<void(const CachedAttentionConfig &)>;

// One config.json, read as a whole or for one layer: the fields it gives, checked by `expect`, or
// (where `refusal` is not empty) the whole message it is refused with.
struct ConfigCase {
    std::string name;              // the case's test name
    std::string json;              // the config.json
    std::optional<int64_t> layer;  // the layer read, where a model's layers differ by index
    Expect expect;
    std::string refusal;
};
void PrintTo(const ConfigCase &c, std::ostream *os) { *os << c.name << ": " << c.json; }

ConfigCase reads(std::string name, std::string json, Expect expect) {
    return {std::move(name), std::move(json), std::nullopt, std::move(expect), ""};
}
ConfigCase reads(std::string name, std::string json, int64_t layer, Expect expect) {
    return {std::move(name), std::move(json), layer, std::move(expect), ""};
}
ConfigCase refused(std::string name, std::string json, std::string message) {
    return {std::move(name), std::move(json), std::nullopt, {}, std::move(message)};
}
ConfigCase refused(std::string name, std::string json, int64_t layer, std::string message) {
    return {std::move(name), std::move(json), layer, {}, std::move(message)};
}
// For a case whose config must only be read, without a refusal.
const Expect is_read = [](const CachedAttentionConfig &) {};

// `json` read as config.json, as a whole or for `layer`.
CachedAttentionConfig read(const std::string &json, std::optional<int64_t> layer = std::nullopt) {
    const ConfigReader config = ConfigReader::parse(json, "config.json");
    return layer ? CachedAttentionConfig::from(config, *layer) : CachedAttentionConfig::from(config);
}

// A config refused with a message that names `part` (the key or rule it breaks), not all of it.
struct RefusalCase {
    std::string name;
    std::string json;
    std::string part;
};
void PrintTo(const RefusalCase &c, std::ostream *os) { *os << c.name << ": " << c.json; }

template <typename Case>
std::string case_name(const ::testing::TestParamInfo<Case> &info) {
    return info.param.name;
}

// A model type's class defaults, where the config leaves the heads out.
void expect_heads(const CachedAttentionConfig &c, int64_t heads, int64_t kv_heads, int64_t head_dim) {
    EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(heads, kv_heads, head_dim));
}

class HuggingFaceConfig : public ::testing::TestWithParam<ConfigCase> {};

// The config gives the fields the case expects, or is refused with its message, word for word.
TEST_P(HuggingFaceConfig, ReadsOrRefuses) {
    const ConfigCase &c = GetParam();
    if (!c.refusal.empty()) {
        EXPECT_EQ(testing::error_message([&] { read(c.json, c.layer); }), c.refusal);
    } else {
        c.expect(read(c.json, c.layer));
    }
}

class ConfigRefusal : public ::testing::TestWithParam<RefusalCase> {};

// The config is refused, and the message names what it breaks.
TEST_P(ConfigRefusal, NamesWhatItRefuses) {
    testing::expect_contains(testing::error_message([&] { read(GetParam().json); }), GetParam().part);
}

// ---------------------------------------------------------------- this project's own keys

// Each rule of this project's own config names its key.
INSTANTIATE_TEST_SUITE_P(
    EachRuleNamesItsKey, ConfigRefusal,
    ::testing::Values(
        RefusalCase{"NoHeads", R"({"embedding_dimension": 8, "number_of_heads": 0})", "number_of_heads"},
        RefusalCase{"NegativeHeadDimension", R"({"embedding_dimension": 8, "number_of_heads": 2, "head_dimension": -1})",
                    "head_dimension"},
        RefusalCase{"HeadsNotDividingE", R"({"embedding_dimension": 9, "number_of_heads": 2})", "divisible"},
        RefusalCase{"GroupedQueryWithoutKvHeads",
                    R"({"embedding_dimension": 8, "number_of_heads": 2, "attention_type": "grouped_query"})",
                    "number_of_key_value_heads"},
        RefusalCase{"KvHeadsNotDividingHeads",
                    R"({"embedding_dimension": 8, "number_of_heads": 4, "attention_type": "grouped_query", "number_of_key_value_heads": 3})",
                    "(3)"},
        RefusalCase{"NoKvHeads",
                    R"({"embedding_dimension": 8, "number_of_heads": 4, "attention_type": "grouped_query", "number_of_key_value_heads": 0})",
                    "number_of_key_value_heads"},
        RefusalCase{"KvHeadsWithoutGroupedQuery",
                    R"({"embedding_dimension": 8, "number_of_heads": 4, "number_of_key_value_heads": 2})", "multi_head"},
        RefusalCase{"LinearAttention", R"({"embedding_dimension": 8, "number_of_heads": 2, "attention_type": "linear"})",
                    "'linear'"},
        RefusalCase{"OddHeadDimensionWithRope", R"({"embedding_dimension": 6, "number_of_heads": 2, "rope_base": 10000})",
                    "even head_dimension"}),
    case_name<RefusalCase>);

// Keys the layer does not read (dropout), and unknown ones, are no reason to refuse a config.
TEST(CachedAttentionConfig, KeysItDoesNotReadAreIgnored) {
    EXPECT_NO_THROW(read(R"({"embedding_dimension": 8, "number_of_heads": 2, "dropout": 0.1, "unknown": 1})"));
}

// ---------------------------------------------------------------- Llama 4

// Llama 4's config: its class defaults, which layers rotate (no_rope_layers; an empty list, as some
// configs state, is the default) and attend in chunks (layer_types where stated), and its switches
// (attn_temperature_tuning, a number in Scout's first config; use_qk_norm, false in Maverick's).
std::vector<ConfigCase> llama4_cases() {
    const nlohmann::json scout{{"model_type", "llama4_text"}, {"hidden_size", 5120}, {"no_rope_layers", nlohmann::json::array()},
                               {"attn_temperature_tuning", 4},
                               {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
    // Scout's config with `key` set to `value` (null: removed).
    const auto with = [&](const std::string &key, const nlohmann::json &value) {
        nlohmann::json changed = scout;
        if (value.is_null()) changed.erase(key);
        else changed[key] = value;
        return changed;
    };
    // transformers norms q and k after RoPE, which takes out YaRN's amplitude: the table carries none.
    const nlohmann::json yarn{{"rope_type", "yarn"}, {"factor", 8.0}, {"original_max_position_embeddings", 8192}};
    nlohmann::json yarn_scout = with("rope_scaling", yarn);
    const std::string normed_yarn = yarn_scout.dump();
    yarn_scout["use_qk_norm"] = false;  // without the norm, the amplitude stays
    nlohmann::json null_chunk = scout;
    null_chunk["attention_chunk_size"] = nullptr;
    return {
        reads("RopeLayer", scout.dump(), 0, [](const auto &c) {
            EXPECT_EQ(c.heads, 40);
            EXPECT_EQ(c.kv_heads, 8);
            EXPECT_EQ(c.head_dimension, 128);
            EXPECT_FALSE(c.bias || c.output_bias || c.sliding_window || c.query_temperature);
            EXPECT_EQ(c.rope_base.value_or(0), 500000.0);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
            EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
            EXPECT_EQ(c.attention_chunk.value_or(0), 8192);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_FALSE(c.qk_norm->weighted);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        reads("LayerWithoutRope", scout.dump(), 3, [](const auto &c) {
            EXPECT_FALSE(c.rope_base || c.attention_chunk || c.qk_norm);
            ASSERT_TRUE(c.query_temperature.has_value());
            EXPECT_EQ(c.query_temperature->floor_scale, 8192.0);
            EXPECT_EQ(c.query_temperature->scale, 0.1);
        }),
        reads("TemperatureTuningOff", with("attn_temperature_tuning", false).dump(), 3,
              [](const auto &c) { EXPECT_FALSE(c.query_temperature); }),
        // On by default.
        reads("TemperatureTuningUnstated", with("attn_temperature_tuning", nullptr).dump(), 3,
              [](const auto &c) { EXPECT_TRUE(c.query_temperature); }),
        reads("QkNormOff", with("use_qk_norm", false).dump(), 0, [](const auto &c) { EXPECT_FALSE(c.qk_norm); }),
        reads("NoRopeLayersListed", with("no_rope_layers", {1, 0}).dump(), 1,
              [](const auto &c) { EXPECT_TRUE(c.query_temperature); }),
        reads("FullLayerType", with("layer_types", {"full_attention"}).dump(), 0,
              [](const auto &c) { EXPECT_EQ(c.attention_chunk, std::nullopt); }),
        reads("ChunkSizeStated", with("attention_chunk_size", 16).dump(), 2,
              [](const auto &c) { EXPECT_EQ(c.attention_chunk.value_or(0), 16); }),
        reads("YarnUnderTheNorm", normed_yarn, 0, [](const auto &c) { EXPECT_EQ(rope_amplitude(c.rope_scaling), 1.0); }),
        reads("YarnWithoutTheNorm", yarn_scout.dump(), 0, [](const auto &c) { EXPECT_GT(rope_amplitude(c.rope_scaling), 1.0); }),
        refused("NullChunkSize", null_chunk.dump(), 0, "config.json: a chunked layer needs attention_chunk_size, got null"),
        refused("SlidingLayerType", with("layer_types", {"sliding_attention"}).dump(), 0,
                "config.json: layer_types[0] 'sliding_attention' is not supported for llama4_text (chunked_attention, "
                "full_attention)"),
        refused("TemperatureTuningNotABoolean", with("attn_temperature_tuning", "yes").dump(), 3,
                "config.json: key 'attn_temperature_tuning' must be true, false or a number, got \"yes\""),
        refused("NoFloorScale", with("floor_scale", 0).dump(), 3, "config.json: floor_scale must be positive, got 0.000000"),
        // SmolLM3 keeps reading an empty no_rope_layers as a list of no layers.
        refused("SmolLM3EmptyNoRopeLayers",
                nlohmann::json{{"model_type", "smollm3"}, {"hidden_size", 2048}, {"no_rope_layers", nlohmann::json::array()}}.dump(),
                0, "config.json: no_rope_layers lists 0 layers, not layer 0"),
        // The multimodal config, through its text_config.
        reads("Multimodal", nlohmann::json{{"model_type", "llama4"}, {"text_config", scout}}.dump(), 0,
              [](const auto &c) { EXPECT_EQ(c.attention_chunk.value_or(0), 8192); }),
    };
}
INSTANTIATE_TEST_SUITE_P(Llama4ConfigsSayWhichLayersRotateAndChunk, HuggingFaceConfig, ::testing::ValuesIn(llama4_cases()),
                         case_name<ConfigCase>);

// ---------------------------------------------------------------- Falcon, Hunyuan, GLM

// Falcon's keys: one KV head unless new_decoder_architecture or multi_query false; num_kv_heads
// then (the heads where missing); head_dim and num_key_value_heads unread; ALiBi refused.
std::vector<ConfigCase> falcon_cases() {
    const std::string falcon = R"({"model_type": "falcon", "hidden_size": 4544, "num_kv_heads": 71, "head_dim": 32,
        "num_key_value_heads": 71)";
    return {
        reads("Falcon7B", falcon + "}", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(71, 1, 64));
            EXPECT_EQ(c.names, Names::GroupedQueryKeyValue);
            EXPECT_FALSE(c.bias || c.output_bias);
            EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
        }),
        reads("Falcon40B", R"({"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128,
        "num_kv_heads": 8, "new_decoder_architecture": true, "bias": true})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(128, 8, 64));
            EXPECT_TRUE(c.bias && c.output_bias);
        }),
        reads("NotMultiQuery", falcon + R"(, "multi_query": false})", [](const auto &c) { EXPECT_EQ(c.kv_heads, 71); }),
        refused("KvHeadsPerHeadDiffer", R"({"model_type": "falcon", "hidden_size": 4544, "num_kv_heads": 1, "multi_query": false})",
                "config.json: num_kv_heads (1) must equal num_attention_heads (71) without multi_query or "
                "new_decoder_architecture (q, k and v per head)"),
        refused("Alibi", falcon + R"(, "alibi": true})",
                "config.json: alibi is not supported for falcon (ALiBi position biases, not RoPE)"),
    };
}
INSTANTIATE_TEST_SUITE_P(FalconConfigsReadTheirOwnKeys, HuggingFaceConfig, ::testing::ValuesIn(falcon_cases()),
                         case_name<ConfigCase>);

// Hunyuan's keys and defaults; alpha is Hunyuan's own (transformers' other dynamic RoPEs ignore it).
std::vector<ConfigCase> hunyuan_cases() {
    const std::string hunyuan = R"({"model_type": "hunyuan_v1_dense", "hidden_size": 4096, "num_key_value_heads": 8,
        "head_dim": 128, "max_position_embeddings": 32768)";
    return {
        reads("Hunyuan", hunyuan + R"(, "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0,
        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, "use_qk_norm": true})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(32, 8, 128));
            EXPECT_FALSE(c.bias || c.output_bias);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_TRUE(c.qk_norm->after_rope);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
            EXPECT_EQ(c.qk_norm->query_module, "query_layernorm");
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Dynamic);
            EXPECT_EQ(c.rope_scaling.alpha, 1000.0);
            EXPECT_EQ(c.rope_scaling.original_context, 32768.0);
        }),
        // transformers reads no switch.
        reads("QkNormSwitchedOff", hunyuan + R"(, "use_qk_norm": false})", [](const auto &c) { EXPECT_TRUE(c.qk_norm.has_value()); }),
        refused("NegativeAlpha", hunyuan + R"(, "rope_scaling": {"type": "dynamic", "alpha": -1, "factor": 1.0}})",
                "config.json (rope_scaling): alpha must be positive, got -1.000000"),
        reads("LlamaIgnoresAlpha", R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
        "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 2.0}})", [](const auto &c) {
            EXPECT_EQ(c.rope_scaling.alpha, 1.0);
            EXPECT_FALSE(c.qk_norm.has_value());
        }),
    };
}
INSTANTIATE_TEST_SUITE_P(HunyuanConfigsReadTheirOwnKeys, HuggingFaceConfig, ::testing::ValuesIn(hunyuan_cases()),
                         case_name<ConfigCase>);

// GLM-4 (glm, glm4): half of each head rotates, its pairs in place; q, k and v biased unless
// attention_bias says otherwise, o never; 2 KV heads and head_dim 128 by default.
std::vector<ConfigCase> glm_cases() {
    std::vector<ConfigCase> cases;
    for (const auto &[type, name] : {std::pair{"glm", "Glm"}, {"glm4", "Glm4"}}) {
        const std::string glm = R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 4096, "num_attention_heads": 32)";
        cases.push_back(reads(name, glm + "}", [](const auto &c) {
            EXPECT_EQ(c.kv_heads, 2);
            EXPECT_EQ(c.head_dimension, 128);
            EXPECT_EQ(c.rotary_dimension, 64);
            EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
            EXPECT_TRUE(c.bias && !c.output_bias);
        }));
        cases.push_back(reads(name + std::string("WholeHeadsNoBias"), glm + R"(, "partial_rotary_factor": 1.0, "attention_bias": false})",
                              [](const auto &c) {
                                  EXPECT_EQ(c.rotary_dimension, 0);
                                  EXPECT_FALSE(c.bias || c.output_bias);
                              }));
    }
    return cases;
}
INSTANTIATE_TEST_SUITE_P(GlmConfigsRotateHalfOfEachHeadInPlace, HuggingFaceConfig, ::testing::ValuesIn(glm_cases()),
                         case_name<ConfigCase>);

// GLM-4.5 (glm4_moe): half of each head rotates, as halves; q, k and v biased only where
// attention_bias says, o never; q and k normed only where use_qk_norm says (eps rms_norm_eps,
// default 1e-5); the class's 96 heads and 8 KV heads where a config leaves them out.
std::vector<ConfigCase> glm45_cases() {
    const std::string glm = R"({"model_type": "glm4_moe", "hidden_size": 5120, "head_dim": 128)";
    return {
        reads("ClassDefaults", glm + "}", [](const auto &c) {
            EXPECT_EQ(c.heads, 96);
            EXPECT_EQ(c.kv_heads, 8);
            EXPECT_EQ(c.rotary_dimension, 64);
            EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
            EXPECT_FALSE(c.bias || c.output_bias || c.qk_norm);
        }),
        // GLM-4.5's own config.json keys.
        reads("Released", glm + R"(, "num_attention_heads": 96, "num_key_value_heads": 8, "partial_rotary_factor": 0.5,
        "attention_bias": true, "use_qk_norm": true, "rms_norm_eps": 1e-05, "rope_theta": 1000000})", [](const auto &c) {
            EXPECT_TRUE(c.bias && !c.output_bias);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::EachHead);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
            EXPECT_EQ(c.rope_base.value_or(0), 1e6);
        }),
    };
}
INSTANTIATE_TEST_SUITE_P(Glm45ConfigsRotateHalfOfEachHeadAsHalves, HuggingFaceConfig, ::testing::ValuesIn(glm45_cases()),
                         case_name<ConfigCase>);

// ---------------------------------------------------------------- Llama's look-alikes

// StarCoder2, OLMoE, Nemotron, Apertus, Arcee, Helium, EXAONE 4, ERNIE 4.5, Phi-2, GPT-NeoX,
// Ministral 3 and Seed-OSS: Llama's attention with each
// one's changes, read from their keys with their class defaults; what they do that this layer
// does not (OLMoE's clamp after the norm, a scaling Nemotron drops) refused by key.
std::vector<ConfigCase> look_alike_cases() {
    const std::string starcoder2 = R"({"model_type": "starcoder2", "hidden_size": 3072)";
    const std::string olmoe = R"({"model_type": "olmoe", "hidden_size": 2048, "num_attention_heads": 16)";
    const std::string nemotron = R"({"model_type": "nemotron", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8)";
    const std::string apertus = R"({"model_type": "apertus", "hidden_size": 4096, "num_attention_heads": 32)";
    const std::string arcee = R"({"model_type": "arcee", "hidden_size": 2560, "num_attention_heads": 20)";
    const std::string helium = R"({"model_type": "helium", "hidden_size": 2560)";
    const std::string exaone4 = R"({"model_type": "exaone4", "hidden_size": 5120, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 8)";
    const std::string ernie = R"({"model_type": "ernie4_5", "hidden_size": 1024)";
    const std::string phi = R"({"model_type": "phi", "hidden_size": 2560)";
    const std::string neox = R"({"model_type": "gpt_neox", "hidden_size": 6144)";
    const std::string seed_oss = R"({"model_type": "seed_oss", "hidden_size": 5120)";
    // Ministral 3, in a mistral3 config's text_config: YaRN, its queries scaled by position from 0.
    const nlohmann::json yarn{{"type", "yarn"}, {"rope_theta", 1e6}, {"factor", 16.0},
                              {"original_max_position_embeddings", 16384}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                              {"mscale", 1.0}, {"mscale_all_dim", 1.0}, {"llama_4_scaling_beta", 0.1}};
    nlohmann::json ministral{{"model_type", "ministral3"}, {"hidden_size", 4096}, {"rope_parameters", yarn}};
    const auto text_of = [](const nlohmann::json &text) {
        return nlohmann::json{{"model_type", "mistral3"}, {"text_config", text}}.dump();
    };
    const std::string ministral_released = text_of(ministral);
    ministral["rope_parameters"]["llama_4_scaling_beta"] = 0.0;
    const std::string ministral_beta_0 = text_of(ministral);
    ministral["rope_parameters"].erase("llama_4_scaling_beta");
    const std::string ministral_without_beta = text_of(ministral);
    ministral.erase("rope_parameters");
    const std::string ministral_without_rope = text_of(ministral);

    std::vector<ConfigCase> cases{
        reads("StarCoder2", starcoder2 + R"(, "sliding_window": 4096})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(24, 2, 128));
            EXPECT_TRUE(c.bias && c.output_bias);
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
        }),
        reads("StarCoder2WithoutBias", starcoder2 + R"(, "use_bias": false})", [](const auto &c) { EXPECT_FALSE(c.bias); }),
        reads("StarCoder2WithoutWindow", starcoder2 + "}", [](const auto &c) { EXPECT_FALSE(c.sliding_window); }),

        reads("Olmoe", olmoe + R"(, "clip_qkv": null})", [](const auto &c) {
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::AllHeads);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        refused("OlmoeClip", olmoe + R"(, "clip_qkv": 8.0})",
                "config.json: clip_qkv is not supported for olmoe (it clamps q, k and v after the QK-norm; this layer "
                "clamps them as projected)"),

        reads("Nemotron", nemotron + "}", [](const auto &c) { EXPECT_EQ(c.rotary_dimension, 64); }),
        reads("NemotronNullScaling", nemotron + R"(, "rope_scaling": null})",
              [](const auto &c) { EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None); }),
        refused("NemotronScaling", nemotron + R"(, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})",
                "config.json: a RoPE scaling is not supported for nemotron (transformers turns its heads by an unscaled "
                "RoPE whatever the config says)"),

        refused("ApertusWithoutScaling", apertus + "}",
                "config.json: apertus needs its RoPE scaling stated in rope_scaling or rope_parameters (transformers "
                "takes a missing one as llama3 x8, and 4 a null one as none)"),
        reads("Apertus", apertus + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})", [](const auto &c) {
            EXPECT_EQ(c.rope_base.value_or(0), 12e6);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::EachHead);
        }),

        reads("Arcee", arcee + "}", [](const auto &c) { EXPECT_FALSE(c.bias || c.qk_norm); }),
        reads("ArceeBiased", arcee + R"(, "attention_bias": true})", [](const auto &c) { EXPECT_TRUE(c.output_bias); }),

        reads("Helium", helium + R"(, "attention_bias": true})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(20, 20, 128));
            EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
            EXPECT_EQ(c.rope_base.value_or(0), 100000.0);
            EXPECT_TRUE(c.bias && !c.output_bias);
        }),

        reads("Exaone4SlidingLayer", exaone4 + "}", 2, [](const auto &c) {
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
            EXPECT_TRUE(c.rope_base.has_value());
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        // Full layers have no RoPE while others slide.
        reads("Exaone4FullLayer", exaone4 + "}", 3, [](const auto &c) { EXPECT_FALSE(c.sliding_window || c.rope_base); }),
    };
    // A null window: every layer full, every layer rotating ...
    for (const int64_t index : {2, 3}) {
        cases.push_back(reads("Exaone4WithoutWindowLayer" + std::to_string(index), exaone4 + R"(, "sliding_window": null})",
                              index, [](const auto &c) {
                                  EXPECT_FALSE(c.sliding_window.has_value());
                                  EXPECT_TRUE(c.rope_base.has_value());
                              }));
    }
    const std::vector<ConfigCase> more{
        // ... so such a config needs no layer index.
        reads("Exaone4WithoutWindow", exaone4 + R"(, "sliding_window": null})", [](const auto &c) {
            EXPECT_FALSE(c.sliding_window.has_value());
            EXPECT_TRUE(c.rope_base.has_value());
        }),
        reads("Exaone4LayerTypes", exaone4 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 1,
              [](const auto &c) { EXPECT_TRUE(c.sliding_window); }),

        reads("Ernie45", ernie + "}", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(16, 2, 128));
            EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
            EXPECT_EQ(c.rope_base.value_or(0), 500000.0);
            EXPECT_FALSE(c.bias || c.output_bias);
        }),
        reads("Ernie45Biased", ernie + R"(, "use_bias": true})", [](const auto &c) { EXPECT_TRUE(c.output_bias); }),

        reads("Ministral3", ministral_released, [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(32, 8, 128));
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Yarn);
            EXPECT_EQ(rope_amplitude(c.rope_scaling), 1.0);
            ASSERT_TRUE(c.query_temperature.has_value());
            EXPECT_EQ(std::tuple(c.query_temperature->floor_scale, c.query_temperature->scale,
                                 c.query_temperature->position_offset),
                      std::tuple(16384.0, 0.1, int64_t{0}));
            EXPECT_FALSE(c.bias || c.output_bias || c.sliding_window);
        }),
        reads("Ministral3ScalingBeta0", ministral_beta_0, [](const auto &c) { EXPECT_FALSE(c.query_temperature.has_value()); }),
        refused("Ministral3WithoutScalingBeta", ministral_without_beta,
                "config.json (text_config.rope_parameters): llama_4_scaling_beta is required (transformers fails "
                "without it; 0 for none)"),
        refused("Ministral3WithoutRope", ministral_without_rope,
                "config.json (text_config): ministral3 needs its RoPE scaling stated in rope_scaling or rope_parameters "
                "(transformers takes a missing or null one as YaRN x16 with its query scaling)"),

        // Phi-2: the four always biased, the output projection `dense`, half of each head rotated.
        reads("Phi2", phi + "}", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(32, 32, 80));
            EXPECT_EQ(c.names, Names::HuggingFaceDenseOutput);
            EXPECT_EQ(c.rotary_dimension, 40);
            EXPECT_TRUE(c.bias && c.output_bias);
        }),
        refused("Phi2QkLayerNorm", phi + R"(, "qk_layernorm": true})",
                "config.json: qk_layernorm is not supported for phi (a LayerNorm of q and k with a bias)"),

        // GPT-NeoX: a quarter of each head rotated, by rotary_pct and rotary_emb_base (transformers 4's
        // names) where stated; the four biased by default; a key and value head per query head.
        reads("GptNeoX", neox + R"(, "num_key_value_heads": 8})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(64, 64, 96));
            EXPECT_EQ(c.names, Names::GroupedQueryKeyValue);
            EXPECT_EQ(c.rotary_dimension, 24);
            EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
            EXPECT_TRUE(c.bias && c.output_bias);
        }),
        reads("GptNeoXStated", neox + R"(, "rotary_pct": 0.5, "rotary_emb_base": 500, "attention_bias": false})",
              [](const auto &c) {
                  EXPECT_EQ(c.rotary_dimension, 48);
                  EXPECT_EQ(c.rope_base.value_or(0), 500.0);
                  EXPECT_FALSE(c.bias || c.output_bias);
              }),
        // transformers reads rotary_emb_base and rotary_pct over rope_theta and partial_rotary_factor,
        // and no head_dim.
        reads("GptNeoXOwnKeysFirst", neox + R"(, "rotary_pct": 0.5, "partial_rotary_factor": 1.0,
        "rotary_emb_base": 500, "rope_theta": 10000, "head_dim": 64})", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.rotary_dimension, c.rope_base.value_or(0), c.head_dimension), std::tuple(48, 500.0, 96));
        }),
        // A null bias switch is refused: transformers' Linear(bias=None) has none, this reader's default one.
        refused("GptNeoXNullBias", neox + R"(, "attention_bias": null})", "config.json: attention_bias must be true or false, got null"),

        reads("SeedOss", seed_oss + "}", [](const auto &c) {
            EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(80, 8, 128));
            EXPECT_TRUE(c.bias && !c.output_bias);
        }),
        reads("SeedOssOutputBias", seed_oss + R"(, "attention_out_bias": true})", [](const auto &c) { EXPECT_TRUE(c.output_bias); }),
        reads("SeedOssWithoutBias", seed_oss + R"(, "attention_bias": false})", [](const auto &c) { EXPECT_FALSE(c.bias); }),
    };
    cases.insert(cases.end(), more.begin(), more.end());
    return cases;
}
INSTANTIATE_TEST_SUITE_P(LlamaLookAlikesReadTheirOwnKeys, HuggingFaceConfig, ::testing::ValuesIn(look_alike_cases()),
                         case_name<ConfigCase>);

// StableLM: a quarter of each head rotates (as halves); q, k and v biased as use_qkv_bias says, o
// never; qk_layernorm's per-head LayerNorms read from a module per head.
std::vector<ConfigCase> stablelm_cases() {
    const std::string stablelm = R"({"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32)";
    return {
        reads("StableLm", stablelm + "}", [](const auto &c) {
            EXPECT_EQ(c.kv_heads, 32);
            EXPECT_EQ(c.head_dimension, 64);
            EXPECT_EQ(c.rotary_dimension, 16);
            EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
            EXPECT_FALSE(c.bias || c.output_bias || c.qk_norm);
        }),
        reads("StableLm2", stablelm + R"(, "use_qkv_bias": true, "qk_layernorm": true, "layer_norm_eps": 1e-6})",
              [](const auto &c) {
                  EXPECT_TRUE(c.bias && !c.output_bias);
                  ASSERT_TRUE(c.qk_norm.has_value());
                  EXPECT_TRUE(c.qk_norm->centred && c.qk_norm->weights_per_head && c.qk_norm->weights_in_head_modules);
                  EXPECT_EQ(c.qk_norm->eps, 1e-6);
              }),
    };
}
INSTANTIATE_TEST_SUITE_P(StableLmConfigsRotateAQuarterOfEachHead, HuggingFaceConfig, ::testing::ValuesIn(stablelm_cases()),
                         case_name<ConfigCase>);

// OLMo 3: OLMo 2's norms; three layers of four slide (4096 keys) with an unscaled RoPE, the fourth
// sees all with rope_scaling; rope_theta must be stated (transformers' default has changed).
std::vector<ConfigCase> olmo3_cases() {
    const std::string olmo3 = R"("model_type": "olmo3", "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192})";
    return {
        reads("SlidingLayer", "{" + olmo3 + "}", 2, [](const auto &c) {
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
            EXPECT_EQ(c.rope_base.value_or(0), 500000.0);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::AllHeads);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        reads("FullLayer", "{" + olmo3 + "}", 3, [](const auto &c) {
            EXPECT_FALSE(c.sliding_window.has_value());
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Yarn);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::AllHeads);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        reads("LayerTypes", "{" + olmo3 + R"(, "layer_types": ["full_attention"])" + "}", 0,
              [](const auto &c) { EXPECT_FALSE(c.sliding_window.has_value()); }),
        refused("WithoutRopeTheta", R"({"model_type": "olmo3", "hidden_size": 64, "num_attention_heads": 4})", 0,
                "config.json: olmo3 needs its rope_theta stated (transformers' default for it has changed)"),
    };
}
INSTANTIATE_TEST_SUITE_P(Olmo3ConfigsSlideThreeLayersOfFour, HuggingFaceConfig, ::testing::ValuesIn(olmo3_cases()),
                         case_name<ConfigCase>);

// ---------------------------------------------------------------- what each model's attention takes

// What the layer does not do is refused by name; and what each model's attention module takes
// (RoPE scalings, biases, windows, QK-norms, which layers slide), read as transformers reads it.
std::vector<ConfigCase> refused_by_name_cases() {
    const std::string llama = R"("model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2)";
    const std::string small = R"("hidden_size": 64, "num_attention_heads": 4, "sliding_window": 16)";
    const std::string olmo = R"({"model_type": "olmo", "hidden_size": 64, "num_attention_heads": 4)";
    const std::string qwen2_windows = R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
        "use_sliding_window": true, "layer_types": ["full_attention", "sliding_attention"])";
    const std::string gemma3 = R"("model_type": "gemma3_text", "hidden_size": 2560, "rope_scaling": {"rope_type": "linear", "factor": 8.0})";
    const std::string smollm3 = R"("model_type": "smollm3", "hidden_size": 2048)";
    const std::string gemma2 = R"("model_type": "gemma2", "hidden_size": 2304, "query_pre_attn_scalar": 224)";
    const std::string gemma3_keys = R"({"model_type": "gemma3_text", "hidden_size": 768, "num_attention_heads": 3,
        "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512)";
    const std::string embedding_gemma = gemma3_keys + R"(, "use_bidirectional_attention": true})";
    const std::string cohere2 = R"({"model_type": "cohere2", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 50000.0})";
    const std::string phi3 = R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4, "partial_rotary_factor": 0.75,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope", )";
    // A Llama config with YaRN scaling of these keys.
    const auto yarn = [&](const std::string &scaling) {
        return "{" + llama + R"(, "max_position_embeddings": 40960, "rope_scaling": {"rope_type": "yarn", )" + scaling + "}}";
    };
    const std::string qwen_yarn_json = yarn(R"("factor": 4.0, "original_max_position_embeddings": 32768)");

    std::vector<ConfigCase> cases{
        refused("Llama3WithoutLowFreqFactor", "{" + llama + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
                "config.json (rope_scaling): missing key 'low_freq_factor'"),
        refused("Mrope", "{" + llama + R"(, "rope_parameters": {"rope_type": "mrope", "rope_theta": 1e6}})",
                "config.json (rope_parameters): rope_type 'mrope' is not supported (default, linear, llama3, yarn, "
                "longrope and dynamic)"),
        // Dynamic NTK grows from max_position_embeddings (transformers reads no other original).
        reads("DynamicNtk", "{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0}})",
              [](const auto &c) {
                  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Dynamic);
                  EXPECT_EQ(c.rope_scaling.original_context, 64.0);
                  EXPECT_EQ(c.rope_scaling.factor, 2.0);
              }),
        refused("DynamicNtkBelow1", "{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 0.5}})",
                "config.json (rope_scaling): dynamic scaling needs a factor of at least 1 and a positive "
                "max_position_embeddings"),
        refused("DynamicNtkOfAnotherOriginal", "{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0,
        "original_max_position_embeddings": 32}})",
                "config.json (rope_scaling): original_max_position_embeddings 32.000000 differs from "
                "max_position_embeddings, from which transformers' dynamic scaling grows"),
        refused("LinearOfFactor0", "{" + llama + R"(, "rope_scaling": {"type": "linear", "factor": 0}})",
                "config.json (rope_scaling): factor must be positive"),
        refused("LlamaPartialRotary", "{" + llama + R"(, "partial_rotary_factor": 0.5})",
                "config.json: partial_rotary_factor 0.500000 is not supported for llama (whole-head RoPE only)"),
        // transformers 5 keeps the rotary fraction beside the theta.
        refused("LlamaPartialRotaryInRopeParameters",
                "{" + llama + R"(, "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}})",
                "config.json: partial_rotary_factor 0.500000 is not supported for llama (whole-head RoPE only)"),
    };
    // Look-alikes with the same weight names and other math, and configs that do not say.
    for (const auto &[type, name] : {std::pair{"hunyuan_v1_moe", "HunyuanMoe"}, {"qwen3_next", "Qwen3Next"}, {"bloom", "Bloom"}}) {
        cases.push_back(refused(name, R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 64, "num_attention_heads": 4})",
                                "config.json: model_type '" + std::string(type) +
                                    "' is not supported by cached_attention (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, "
                                    "qwen3_moe, olmo, olmo2, olmo3, phi3, gemma, gemma2, gemma3_text, cohere, cohere2, glm, glm4, "
                                    "glm4_moe, gpt_oss, smollm3, llama4_text, stablelm, granite, granitemoe, granitemoeshared, "
                                    "starcoder2, olmoe, nemotron, apertus, arcee, helium, exaone4, ernie4_5, phi, gpt_neox, "
                                    "ministral3, seed_oss, falcon, hunyuan_v1_dense)"));
    }
    // Granite: Llama's attention with scores scaled by attention_multiplier (default 1).
    for (const auto &[type, name] :
         {std::pair{"granite", "Granite"}, {"granitemoe", "GraniteMoe"}, {"granitemoeshared", "GraniteMoeShared"}}) {
        const std::string granite = R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 64, "num_attention_heads": 4)";
        cases.push_back(reads(name + std::string("Multiplier"), granite + R"(, "attention_multiplier": 0.0625})",
                              [](const auto &c) { EXPECT_EQ(c.attention_scale.value_or(0), 0.0625); }));
        cases.push_back(reads(name, granite + "}", [](const auto &c) { EXPECT_EQ(c.attention_scale.value_or(0), 1.0); }));
        cases.push_back(refused(name + std::string("NegativeMultiplier"), granite + R"(, "attention_multiplier": -2})",
                                "config.json: attention_multiplier must be positive, got -2.000000"));
    }
    const std::vector<ConfigCase> more{
        // OLMo 1: Llama's attention, q, k and v clamped where clip_qkv says.
        reads("OlmoNullClip", olmo + R"(, "clip_qkv": null})", [](const auto &c) { EXPECT_FALSE(c.qkv_clip); }),
        reads("OlmoClip", olmo + R"(, "clip_qkv": 8.0})", [](const auto &c) { EXPECT_EQ(c.qkv_clip.value_or(0), 8.0); }),
        refused("OlmoClip0", olmo + R"(, "clip_qkv": 0})", "config.json: clip_qkv must be positive (or null for none), got 0.000000"),
        refused("GptOssNullRopeScaling", R"({"model_type": "gpt_oss", "hidden_size": 64, "rope_scaling": null})", 0,
                "config.json: gpt_oss needs its RoPE scaling stated in rope_scaling or rope_parameters (transformers "
                "takes a missing one as YaRN x32, and 4 a null one as none)"),
        refused("MistralNegativeWindow", R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "sliding_window": -1})",
                "config.json: sliding_window must be positive, got -1"),
        reads("LlamaNullWindowDefaultRope",
              "{" + llama + R"(, "sliding_window": null, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})", is_read),
        refused("MistralKvHeadsNotDividing",
                R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3})",
                "config.json: num_attention_heads (4) must be a multiple of num_key_value_heads (3)"),
        refused("LlamaOddHeadDim", R"({"model_type": "llama", "hidden_size": 60, "num_attention_heads": 4, "head_dim": 15})",
                "config.json: RoPE needs an even head_dim, got 15"),
        reads("Llama", "{" + llama + "}", [](const auto &c) {
            EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
            EXPECT_FALSE(c.bias || c.output_bias);  // attention_bias false: a checkpoint's biases are not read
            EXPECT_FALSE(c.qk_norm.has_value());
            EXPECT_FALSE(c.attention_scale.has_value());
            EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
            EXPECT_EQ(c.rotary_dimension, 0);  // the whole head
        }),

        // Biases and windows as each model's attention module takes them.
        reads("Qwen2", R"({"model_type": "qwen2", )" + small + "}", [](const auto &c) {
            EXPECT_TRUE(c.bias && !c.output_bias);
            EXPECT_FALSE(c.sliding_window.has_value());  // use_sliding_window is false by default
        }),
        // With use_sliding_window, the layers layer_types names slide (4096 keys where no window is
        // stated); without layer_types, which ones depends on the transformers version: refused.
        refused("Qwen2SlidingWithoutLayerTypes", R"({"model_type": "qwen2", "use_sliding_window": true, )" + small + "}",
                "config.json: use_sliding_window without layer_types is not supported for qwen2 (which layers slide "
                "depends on the transformers version: state layer_types)"),
        reads("Qwen2FullLayer", qwen2_windows + "}", 0, [](const auto &c) { EXPECT_FALSE(c.sliding_window.has_value()); }),
        reads("Qwen2SlidingLayer", qwen2_windows + "}", 1, [](const auto &c) { EXPECT_EQ(c.sliding_window.value_or(0), 4096); }),
        reads("Qwen2SlidingLayerOfAWindow", qwen2_windows + R"(, "sliding_window": 16})", 1,
              [](const auto &c) { EXPECT_EQ(c.sliding_window.value_or(0), 16); }),
        refused("Qwen2SlidingLayerTypesUnused", R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
        "layer_types": ["sliding_attention"], "sliding_window": 16})",
                "config.json: layer_types names sliding layers, but use_sliding_window is false (transformers fails on it)"),
        refused("Qwen2NullWindow", qwen2_windows + R"(, "sliding_window": null})",
                "config.json: use_sliding_window with a null sliding_window (transformers builds no window, or fails)"),
        reads("Qwen2MoeWithoutQkvBias", R"({"model_type": "qwen2_moe", "qkv_bias": false, )" + small + "}",
              [](const auto &c) { EXPECT_FALSE(c.bias); }),

        // Qwen3 and OLMo 2: attention_bias for all four, a QK-norm with their own eps defaults; Qwen3's
        // head_dim defaults to 128 (its config class's), OLMo 2's to E/H.
        reads("Qwen3", R"({"model_type": "qwen3", "attention_bias": true, )" + small + "}", [](const auto &c) {
            EXPECT_TRUE(c.bias && c.output_bias);
            EXPECT_EQ(c.head_dimension, 128);
            EXPECT_FALSE(c.sliding_window.has_value());
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::EachHead);
            EXPECT_EQ(c.qk_norm->eps, 1e-6);
        }),
        reads("Qwen3Moe", R"({"model_type": "qwen3_moe", )" + small + "}", [](const auto &c) { EXPECT_EQ(c.head_dimension, 16); }),
        refused("Qwen3MoeSliding", R"({"model_type": "qwen3_moe", "use_sliding_window": true, "layer_types": ["sliding_attention"], )" + small + "}",
                "config.json: use_sliding_window is not supported for qwen3_moe (which layers slide depends on the "
                "layer's index and the transformers version)"),
        reads("Olmo2", R"({"model_type": "olmo2", )" + small + "}", [](const auto &c) {
            EXPECT_FALSE(c.bias || c.output_bias || c.sliding_window);
            EXPECT_EQ(c.head_dimension, 16);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_EQ(c.qk_norm->span, Span::AllHeads);
            EXPECT_EQ(c.qk_norm->eps, 1e-5);
        }),
        refused("Olmo2NoEps", R"({"model_type": "olmo2", "rms_norm_eps": 0, )" + small + "}",
                "config.json: rms_norm_eps must be positive, got 0.000000"),

        // Gemma 3: which layers slide (layer_types, else every 6th is full), each layer's RoPE (transformers 4:
        // rope_local_base_freq unscaled for the sliding ones; 5: nested rope_parameters), its class defaults.
        reads("Gemma3SlidingLayer", "{" + gemma3 + "}", 4, [](const auto &c) {
            expect_heads(c, 8, 4, 256);
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
            EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
            EXPECT_FALSE(c.score_softcap.has_value());
            EXPECT_TRUE(c.causal);
        }),
        reads("Gemma3FullLayer", "{" + gemma3 + "}", 5, [](const auto &c) {
            EXPECT_FALSE(c.sliding_window.has_value());
            EXPECT_EQ(c.rope_base.value_or(0), 1e6);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Linear);
            EXPECT_DOUBLE_EQ(c.attention_scale.value_or(0), 1.0 / 16.0);
            ASSERT_TRUE(c.qk_norm.has_value());
            EXPECT_TRUE(c.qk_norm->weight_plus_one);
        }),
        reads("Gemma3LayerTypesSliding", "{" + gemma3 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 1,
              [](const auto &c) { EXPECT_TRUE(c.sliding_window); }),
        reads("Gemma3LayerTypesFull", "{" + gemma3 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 0,
              [](const auto &c) { EXPECT_FALSE(c.sliding_window); }),
        reads("Gemma3NestedRopeParameters", R"({"model_type": "gemma3_text", "hidden_size": 64, "sliding_window": 512,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}})", 0,
              [](const auto &c) {
                  EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
                  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
                  EXPECT_EQ(c.sliding_window.value_or(0), 512);
              }),
        refused("Gemma3WithoutLayer", R"({"model_type": "gemma3_text", "hidden_size": 64, "attn_logit_softcapping": 50.0})",
                "config.json: gemma3_text layers differ by index (sliding or full attention): give the layer's index "
                "(weights opened with the prefix model.layers.N., or CachedAttentionConfig::from(config, N))"),

        // SmolLM3: every fourth layer without RoPE (no_rope_layer_interval), or as no_rope_layers says;
        // its class defaults; its layers without RoPE slide only where use_sliding_window and
        // sliding_window say so (or layer_types).
        reads("SmolLM3RopeLayer", "{" + smollm3 + "}", 0, [](const auto &c) {
            expect_heads(c, 16, 4, 128);
            EXPECT_EQ(c.rope_base.value_or(0), 2e6);
            EXPECT_FALSE(c.sliding_window);
        }),
        reads("SmolLM3LayerWithoutRope", "{" + smollm3 + "}", 3, [](const auto &c) {
            EXPECT_FALSE(c.rope_base.has_value());
            EXPECT_FALSE(c.sliding_window);
        }),
        reads("SmolLM3Interval", "{" + smollm3 + R"(, "no_rope_layer_interval": 2})", 2,
              [](const auto &c) { EXPECT_TRUE(c.rope_base.has_value()); }),
        reads("SmolLM3NoRopeLayersListed", "{" + smollm3 + R"(, "no_rope_layers": [1, 0, 1]})", 1,
              [](const auto &c) { EXPECT_FALSE(c.rope_base.has_value()); }),
        reads("SmolLM3RopeLayersListed", "{" + smollm3 + R"(, "no_rope_layers": [1, 0, 1]})", 2,
              [](const auto &c) { EXPECT_TRUE(c.rope_base.has_value()); }),
        reads("SmolLM3SlidingLayerWithoutRope", "{" + smollm3 + R"(, "use_sliding_window": true, "sliding_window": 64})", 3,
              [](const auto &c) { EXPECT_EQ(c.sliding_window.value_or(0), 64); }),
        reads("SmolLM3SlidingOnlyWithoutRope", "{" + smollm3 + R"(, "use_sliding_window": true, "sliding_window": 64})", 2,
              [](const auto &c) { EXPECT_FALSE(c.sliding_window); }),
        reads("SmolLM3LayerTypes", "{" + smollm3 + R"(, "layer_types": ["sliding_attention"]})", 0,
              [](const auto &c) { EXPECT_FALSE(c.sliding_window); }),
        refused("SmolLM3ShortNoRopeLayers", "{" + smollm3 + R"(, "no_rope_layers": [1, 0]})", 2,
                "config.json: no_rope_layers lists 2 layers, not layer 2"),
        refused("SmolLM3Interval0", "{" + smollm3 + R"(, "no_rope_layer_interval": 0})", 2,
                "config.json: no_rope_layer_interval must be positive, got 0"),
        // Gemma 3 never caps scores, whatever its config states (transformers' Gemma3Attention stores
        // attn_logit_softcapping and does not apply it).
        reads("Gemma3StatedCap", R"({"model_type": "gemma3_text", "hidden_size": 64, "attn_logit_softcapping": 30.0})", 0,
              [](const auto &c) { EXPECT_FALSE(c.score_softcap.has_value()); }),

        // Gemma 2: sliding layers first, then alternating; capped at 50 unless the config says otherwise
        // (null: not capped; 0, which transformers divides by, is refused).
        reads("Gemma2SlidingLayer", "{" + gemma2 + "}", 0, [](const auto &c) {
            expect_heads(c, 8, 4, 256);
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
            EXPECT_EQ(c.score_softcap.value_or(0), 50.0);
            EXPECT_FALSE(c.bias || c.qk_norm);
        }),
        reads("Gemma2FullLayer", "{" + gemma2 + "}", 1, [](const auto &c) {
            EXPECT_FALSE(c.sliding_window.has_value());
            EXPECT_EQ(c.rope_base.value_or(0), 10000.0);
            EXPECT_DOUBLE_EQ(c.attention_scale.value_or(0), 1.0 / std::sqrt(224.0));
        }),
        reads("Gemma2NullCap", "{" + gemma2 + R"(, "attn_logit_softcapping": null})", 0,
              [](const auto &c) { EXPECT_FALSE(c.score_softcap.has_value()); }),
        reads("Gemma2StatedCap", "{" + gemma2 + R"(, "attn_logit_softcapping": 20})", 1,
              [](const auto &c) { EXPECT_EQ(c.score_softcap.value_or(0), 20.0); }),
        refused("Gemma2Cap0", "{" + gemma2 + R"(, "attn_logit_softcapping": 0})", 0,
                "config.json: attn_logit_softcapping must be positive (or null for none), got 0.000000"),
        refused("Gemma3ShortLayerTypes", "{" + gemma3 + R"(, "layer_types": ["full_attention"]})", 1,
                "config.json: layer_types lists 1 layers, not layer 1"),
        refused("Gemma3LayerPastTheLast", "{" + gemma3 + R"(, "num_hidden_layers": 4})", 4,
                "config.json: layer 4 is past num_hidden_layers 4"),
        refused("Gemma3NegativeLayer", "{" + gemma3 + "}", -1, "config.json: a layer index must not be negative, got -1"),
        refused("OwnConfigOfALayer", R"({"embedding_dimension": 8, "number_of_heads": 2})", 0,
                "config.json: a layer index is read only with a Hugging Face config.json"),

        // EmbeddingGemma attends both ways: its sliding layers within (sliding_window // 2) + 1 keys each
        // way, as transformers' config keeps it (512: 257), its full layers over every key.
        reads("EmbeddingGemmaSlidingLayer", embedding_gemma, 0, [](const auto &c) {
            EXPECT_FALSE(c.causal);
            EXPECT_EQ(c.sliding_window.value_or(0), 257);
        }),
        reads("EmbeddingGemmaFullLayer", embedding_gemma, 5, [](const auto &c) {
            EXPECT_FALSE(c.causal);
            EXPECT_FALSE(c.sliding_window.has_value());
        }),
        reads("Gemma3Causal", gemma3_keys + R"(, "use_bidirectional_attention": false})", 0, [](const auto &c) {
            EXPECT_TRUE(c.causal);
            EXPECT_EQ(c.sliding_window.value_or(0), 512);
        }),
        // Other types' encoders, and is_causal (whose windows reach one key farther in transformers 5), are refused.
        refused("LlamaBidirectional", "{" + llama + R"(, "use_bidirectional_attention": true})",
                "config.json: use_bidirectional_attention is not supported for llama (Gemma 3's only: these layers are "
                "causal)"),
        refused("Gemma3NotCausal", "{" + gemma3 + R"(, "is_causal": false})", 0,
                "config.json: is_causal false (bidirectional attention) is not supported for gemma3_text "
                "(use_bidirectional_attention: Gemma 3's only)"),
        // A multimodal Gemma 3 config is read through its text_config.
        reads("Gemma3Multimodal", R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
        "hidden_size": 2560, "sliding_window": 1024}, "vision_config": {"hidden_size": 1152}})", 0, [](const auto &c) {
            EXPECT_EQ(c.embedding_dimension, 2560);
            EXPECT_EQ(c.sliding_window.value_or(0), 1024);
            EXPECT_EQ(c.layer.value_or(-1), 0);
        }),
        // transformers 4 reads rope_scaling, 5 rope_parameters: both, with a scaling, are refused.
        refused("RopeParametersAndScaling",
                "{" + llama + R"(, "rope_parameters": {"rope_theta": 1e4}, "rope_scaling": {"type": "linear", "factor": 2}})",
                "config.json: both rope_parameters and a scaling rope_scaling are given (transformers 5 reads the first, "
                "4 the second); keep one"),

        // Cohere: RoPE over interleaved pairs.
        reads("Cohere", R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4})",
              [](const auto &c) { EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved); }),
        // Command R+: per-head LayerNorms of q and k (layer_norm_eps, default 1e-5); Cohere2 has none.
        reads("CommandRPlus", R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true})",
              [](const auto &c) {
                  ASSERT_TRUE(c.qk_norm.has_value());
                  EXPECT_TRUE(c.qk_norm->centred && c.qk_norm->weights_per_head);
                  EXPECT_EQ(c.qk_norm->eps, 1e-5);
              }),
        refused("CommandRPlusNoEps", R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true,
                               "layer_norm_eps": 0})",
                "config.json: layer_norm_eps must be positive, got 0.000000"),
        refused("Cohere2QkNorm", R"({"model_type": "cohere2", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true})", 0,
                "config.json: use_qk_norm is not supported for cohere2 (its attention has no QK-norm)"),
        // Cohere2 (Command R7B): every fourth layer full and without RoPE, the others sliding with it.
        reads("Cohere2SlidingLayer", cohere2, 2, [](const auto &c) {
            EXPECT_EQ(c.sliding_window.value_or(0), 4096);
            EXPECT_EQ(c.rope_base.value_or(0), 50000.0);
            EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved);
        }),
        reads("Cohere2FullLayer", cohere2, 3, [](const auto &c) {
            EXPECT_FALSE(c.sliding_window.has_value());
            EXPECT_FALSE(c.rope_base.has_value());
        }),
        // Gemma 1: Llama's math with a head_dim of 256 by default.
        reads("Gemma", R"({"model_type": "gemma", "hidden_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 1})",
              [](const auto &c) { EXPECT_EQ(c.head_dimension, 256); }),
        // Phi-3 may turn a fraction of each head; it must leave an even number of dims.
        reads("Phi3PartialRotary", R"({"model_type": "phi3", "partial_rotary_factor": 0.75, )" + small + "}",
              [](const auto &c) { EXPECT_EQ(c.rotary_dimension, 12); }),
        refused("Phi3OddPartialRotary", R"({"model_type": "phi3", "partial_rotary_factor": 0.6, )" + small + "}",
                "config.json: partial_rotary_factor 0.600000 of head_dim 16 must turn an even number of dims, got 9"),

        // LongRoPE as Phi-3 states it: one factor per rotated pair in each set, the original context at
        // the top level, the amplitude sqrt(1 + ln(131072 / 4096) / ln 4096).
        reads("Phi3LongRope", phi3 + R"("short_factor": [1, 1, 1, 1, 2, 3], "long_factor": [1, 2, 4, 8, 16, 32]}})",
              [](const auto &c) {
                  const RopeScaling &long_rope = c.rope_scaling;
                  EXPECT_EQ(long_rope.type, RopeScaling::Type::LongRope);
                  EXPECT_EQ(long_rope.short_factors, (std::vector<double>{1, 1, 1, 1, 2, 3}));
                  EXPECT_EQ(long_rope.long_factors, (std::vector<double>{1, 2, 4, 8, 16, 32}));
                  EXPECT_FALSE(long_rope.long_factors_used);
                  EXPECT_EQ(long_rope.original_context, 4096.0);
                  EXPECT_NEAR(long_rope.attention_factor, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)), 1e-12);
              }),
        refused("Phi3LongRopeOfTooFewFactors", phi3 + R"("short_factor": [1, 1], "long_factor": [1, 2]}})",
                "config.json: longrope's short_factor and long_factor need one value per rotated pair (6), got 2"),
        refused("Phi3LongRopeWithoutLongFactors", phi3 + R"("short_factor": [1, 1, 1, 1, 1, 1]}})",
                "config.json (rope_scaling): missing key 'long_factor'"),
        // transformers 4 reads max_position_embeddings / original where the config states its own
        // original context, 5 a stated factor: where they differ, refused (a stated amplitude settles it).
        refused("Phi3LongRopeOfAnotherFactor",
                phi3 + R"("factor": 4, "short_factor": [1, 1, 1, 1, 1, 1], "long_factor": [1, 1, 1, 1, 1, 1]}})",
                "config.json (rope_scaling): factor 4.000000 differs from max_position_embeddings / "
                "original_max_position_embeddings (32.000000), which transformers 4 reads in its place; state "
                "attention_factor"),
        reads("Phi3LongRopeOfAnotherFactorAndAnAmplitude",
              phi3 + R"("factor": 4, "attention_factor": 1.5, "short_factor": [1, 1, 1, 1, 1, 1], "long_factor": [1, 1, 1, 1, 1, 1]}})",
              [](const auto &c) { EXPECT_EQ(c.rope_scaling.attention_factor, 1.5); }),

        // YaRN: Qwen's long-context form (factor as stated, 0.1 ln 4 + 1), DeepSeek's mscale ratio,
        // a stated attention_factor, and the original context from max_position_embeddings.
        reads("QwenYarn", qwen_yarn_json, [](const auto &c) {
            const RopeScaling &qwen_yarn = c.rope_scaling;
            EXPECT_EQ(qwen_yarn.type, RopeScaling::Type::Yarn);
            EXPECT_EQ(qwen_yarn.factor, 4.0);
            EXPECT_EQ(qwen_yarn.original_context, 32768.0);
            EXPECT_DOUBLE_EQ(qwen_yarn.attention_factor, 0.1 * std::log(4.0) + 1.0);
            EXPECT_TRUE(qwen_yarn.truncate);
            EXPECT_EQ(qwen_yarn.beta_fast, 32.0);
            EXPECT_EQ(qwen_yarn.beta_slow, 1.0);
        }),
        reads("DeepSeekYarn", yarn(R"("factor": 40, "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": null, "truncate": false)"),
              [](const auto &c) {
                  const RopeScaling &deepseek = c.rope_scaling;
                  EXPECT_EQ(deepseek.original_context, 40960.0);
                  EXPECT_DOUBLE_EQ(deepseek.attention_factor, (0.0707 * std::log(40.0) + 1.0) / (0.1 * std::log(40.0) + 1.0));
                  EXPECT_EQ(deepseek.beta_fast, 32.0);
                  EXPECT_FALSE(deepseek.truncate);
              }),
        reads("YarnOfAStatedAmplitude", yarn(R"("factor": 2, "attention_factor": 1.5, "beta_slow": 2)"),
              [](const auto &c) { EXPECT_EQ(c.rope_scaling.attention_factor, 1.5); }),
        reads("YarnWithoutStretch", yarn(R"("factor": 0.5)"),
              [](const auto &c) { EXPECT_EQ(c.rope_scaling.attention_factor, 1.0); }),  // no stretch, no scale
        refused("YarnWithoutAnOriginal", "{" + llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})",
                "config.json: missing key 'max_position_embeddings'"),
        // transformers 5: the original context at the top level, and a null factor their ratio.
        reads("YarnOfTransformers5", "{" + llama + R"(, "max_position_embeddings": 8192, "original_max_position_embeddings": 2048,
                                   "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": null}})",
              [](const auto &c) {
                  EXPECT_EQ(c.rope_scaling.original_context, 2048.0);
                  EXPECT_EQ(c.rope_scaling.factor, 4.0);
              }),
        // vLLM's attn_factor, which transformers ignores: the two disagree, so it is refused.
        refused("YarnOfVllmsAttnFactor", "{" + llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
                                                "attn_factor": 0.878}})",
                "config.json (rope_scaling): attn_factor is read by vLLM and ignored by transformers; refused rather "
                "than guessed (state attention_factor instead)"),
        // vLLM's neutral value agrees.
        reads("YarnOfVllmsNeutralAttnFactor", yarn(R"("factor": 4.0, "original_max_position_embeddings": 32768, "attn_factor": 1.0)"),
              [qwen_yarn_json](const auto &c) {
                  EXPECT_EQ(c.rope_scaling.attention_factor, read(qwen_yarn_json).rope_scaling.attention_factor);
              }),
        reads("Mistral", R"({"model_type": "mistral", "attention_bias": true, )" + small + "}", [](const auto &c) {
            EXPECT_FALSE(c.bias || c.output_bias);
            EXPECT_EQ(c.sliding_window.value_or(0), 16);
        }),
        reads("LlamaBiasedWithAWindowStated", R"({"model_type": "llama", "attention_bias": true, )" + small + "}", [](const auto &c) {
            EXPECT_TRUE(c.bias && c.output_bias);
            EXPECT_FALSE(c.sliding_window.has_value());  // Llama attends to every key
        }),
        // Llama 3.1's scaling, as transformers 5 writes it.
        reads("Llama31", "{" + llama + R"(, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})", [](const auto &c) {
            EXPECT_EQ(c.rope_base.value_or(0), 500000.0);
            EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
            EXPECT_EQ(c.rope_scaling.original_context, 8192.0);
        }),
    };
    cases.insert(cases.end(), more.begin(), more.end());
    return cases;
}
INSTANTIATE_TEST_SUITE_P(WhatTheLayerDoesNotDoIsRefusedByName, HuggingFaceConfig, ::testing::ValuesIn(refused_by_name_cases()),
                         case_name<ConfigCase>);

// Refusals checked by what they name: a config without a model type, and a SmolLM3 config read
// without a layer index.
INSTANTIATE_TEST_SUITE_P(
    WhatTheLayerDoesNotDoIsRefusedByName, ConfigRefusal,
    ::testing::Values(RefusalCase{"NoModelType", R"({"hidden_size": 64, "num_attention_heads": 4})", "model_type ''"},
                      RefusalCase{"SmolLM3WithoutLayer", R"({"model_type": "smollm3", "hidden_size": 2048})",
                                  "smollm3 layers differ by index (with RoPE or without)"}),
    case_name<RefusalCase>);

// Gemma 3's stated attn_logit_softcapping, which it never applies, is named as unused; a config
// without one has no unused keys.
TEST(CachedAttentionHuggingFace, Gemma3NamesItsUnusedSoftCap) {
    const std::string gemma3 = R"("model_type": "gemma3_text", "hidden_size": 2560, "rope_scaling": {"rope_type": "linear", "factor": 8.0})";
    const std::string capped_gemma3 = R"({"model_type": "gemma3_text", "hidden_size": 64, "attn_logit_softcapping": 30.0})";
    const std::vector<std::string> unused = CachedAttentionConfig::unused_keys(ConfigReader::parse(capped_gemma3, "c"));
    ASSERT_EQ(unused.size(), 1u);
    testing::expect_contains(unused[0], "attn_logit_softcapping is ignored");
    EXPECT_TRUE(CachedAttentionConfig::unused_keys(ConfigReader::parse("{" + gemma3 + "}", "c")).empty());
}

}  // namespace
}  // namespace hattn
