// The Hugging Face layers' checks against float64 references that tests/test_cached_attention.cpp
// runs on the CPU and tests/test_cached_attention_gpu.cpp on each GPU, and their helpers: checkpoints
// under Hugging Face names, masks of the caller's own, and calls through a cache.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/safetensors_writer.h"
#include "reference/cached_attention.h"
#include "support/cached_layer.h"
#include "support/compare.h"
#include "support/config.h"
#include "support/errors.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn::testing {

// The test layer's tensors under a Llama-family checkpoint's names and prefix; without the output
// bias when `qwen2_biases` (Qwen2 has biases on q, k and v only).
inline std::map<std::string, Tensor> hugging_face_tensors(const TestLayer &t, bool qwen2_biases) {
    const std::string p = "model.layers.0.self_attn.";
    std::map<std::string, Tensor> tensors{{p + "q_proj.weight", t.ref.wq}, {p + "k_proj.weight", t.ref.wk},
                                          {p + "v_proj.weight", t.ref.wv}, {p + "o_proj.weight", t.ref.wo}};
    if (!t.ref.bq) return tensors;
    tensors.insert({{p + "q_proj.bias", *t.ref.bq}, {p + "k_proj.bias", *t.ref.bk}, {p + "v_proj.bias", *t.ref.bv}});
    if (!qwen2_biases) tensors.insert({p + "o_proj.bias", *t.ref.bo});
    return tensors;
}

// The seed's Hugging Face tensors (no biases) under the prefix of each of `layers`
// (model.layers.N.self_attn.), with `extra` under each prefix too.
inline std::map<std::string, Tensor> layers_of(const TestLayer &seed, std::initializer_list<int> layers,
                                               const std::map<std::string, Tensor> &extra = {}) {
    std::map<std::string, Tensor> tensors;
    const std::string from = "model.layers.0.self_attn.";
    for (const int layer : layers) {
        const std::string to = "model.layers." + std::to_string(layer) + ".self_attn.";
        for (const auto &[name, tensor] : hugging_face_tensors(seed, false)) tensors.emplace(to + name.substr(from.size()), tensor);
        for (const auto &[name, tensor] : extra) tensors.emplace(to + name, tensor);
    }
    return tensors;
}

// Prefill of 5 tokens and 2 decode steps through both layers; the worst relative L2 difference.
inline double prefill_and_decode_difference(const CachedAttention &a, const CachedAttention &b) {
    const Tensor prompt = testing::random_tensor({2, 5, 64}, 90);
    KVCache ca = a.make_cache(2, 8), cb = b.make_cache(2, 8);
    double worst = testing::relative_l2(a.self_attention(prompt, &ca), b.self_attention(prompt, &cb));
    for (uint32_t step = 0; step < 2; step++) {
        const Tensor x = testing::random_tensor({2, 1, 64}, 91 + step);
        worst = std::max(worst, testing::relative_l2(a.decode_step(x, ca), b.decode_step(x, cb)));
    }
    return worst;
}

// A mask [B, 1, S, widest] for a call of S new tokens after each sequence's lengths[b] tokens: key
// j hidden from new query i of sequence b where rule(p = lengths[b] + i, j) says, or, with
// `callers_own`, where (b + 2i + j) % 3 == 0 (a caller's own mask, different per sequence).
struct TestMask {
    std::vector<uint8_t> hidden;
    Shape shape;
    MaskView view() const { return {hidden.data(), shape}; }
};
using KeyRule = std::function<bool(int64_t query_position, int64_t key_position)>;
inline TestMask test_mask(const std::vector<int32_t> &lengths, int64_t S, bool callers_own, const KeyRule &rule = {}) {
    const int64_t B = static_cast<int64_t>(lengths.size());
    const int64_t widest = *std::max_element(lengths.begin(), lengths.end()) + S;
    TestMask m{std::vector<uint8_t>(B * S * widest), {B, 1, S, widest}};
    for (int64_t b = 0; b < B; b++) {
        for (int64_t i = 0; i < S; i++) {
            for (int64_t j = 0; j < widest; j++) {
                m.hidden[(b * S + i) * widest + j] = (callers_own && (b + 2 * i + j) % 3 == 0) || (rule && rule(lengths[b] + i, j));
            }
        }
    }
    return m;
}

// Mistral 7B v0.1: a window of 4096 keys, here 7. Up to the window every query sees all its keys,
// exactly as without one; past it a query sees its last 7, decoding or prefilling: the same as the
// masked path of a layer without a window, hiding the older keys.
inline void check_sliding_window() {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});  // Mistral has no biases
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    // Mistral slides whatever use_sliding_window (a Qwen2 key) says.
    const CachedAttention windowed(testing::config_of({{"model_type", "mistral"}, {"hidden_size", 64},
                                                       {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                       {"rope_theta", 10000.0}, {"sliding_window", 7},
                                                       {"use_sliding_window", false}}),
                                   Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    EXPECT_EQ(windowed.config().sliding_window.value_or(0), 7);
    EXPECT_LE(prefill_and_decode_difference(windowed, *seed.layer), 1e-6);  // 5 + 2 tokens: the window

    // Sequences of 3 and 6 tokens, then 4 decode steps: sequence 1 passes the window at once.
    KVCache ours = windowed.make_cache(2, 20), masked = seed.layer->make_cache(2, 20);
    const Tensor prompt = testing::random_tensor({2, 6, 64}, 95);
    for (auto [layer, cache] : {std::pair{&windowed, &ours}, {&*seed.layer, &masked}}) {
        layer->self_attention(prompt, cache);
        cache->truncate_to(3, 0);
    }
    // The masked path: query p of sequence b hides keys j <= p - 7.
    const KeyRule before_window = [](int64_t p, int64_t j) { return j <= p - 7; };
    double worst = 0;
    for (uint32_t step = 0; step < 4; step++) {
        const Tensor x = testing::random_tensor({2, 1, 64}, 96 + step);
        const TestMask mask = test_mask(masked.lengths(), 1, false, before_window);
        const MaskView view = mask.view();
        worst = std::max(worst, testing::relative_l2(windowed.decode_step(x, ours), seed.layer->self_attention(x, &masked, &view)));
    }
    // A prefill past the window (blocks of queries, each over the keys its windows reach).
    const Tensor more = testing::random_tensor({2, 5, 64}, 100);
    const TestMask mask = test_mask(masked.lengths(), 5, false, before_window);
    const MaskView view = mask.view();
    worst = std::max(worst, testing::relative_l2(windowed.self_attention(more, &ours), seed.layer->self_attention(more, &masked, &view)));
    EXPECT_LE(worst, 1e-6);
    EXPECT_EQ(ours.lengths(), std::vector<int32_t>({12, 15}));

    // A mask of the caller's own hides keys within the window too: a decode step and 3 tokens
    // against the whole layer given both masks at once.
    for (const int64_t S : {1, 3}) {
        const Tensor x = testing::random_tensor({2, S, 64}, 101 + S);
        const TestMask own = test_mask(ours.lengths(), S, true), both = test_mask(ours.lengths(), S, true, before_window);
        const TestMask window_only = test_mask(ours.lengths(), S, false, before_window);
        const MaskView own_view = own.view(), both_view = both.view(), window_view = window_only.view();
        KVCache spare = masked;  // for the window alone
        const Tensor out = windowed.self_attention(x, &ours, &own_view);
        EXPECT_LE(testing::relative_l2(out, seed.layer->self_attention(x, &masked, &both_view)), 1e-6) << S;
        // The window alone differs: the check can fail.
        EXPECT_GT(testing::relative_l2(out, seed.layer->self_attention(x, &spare, &window_view)), 1e-2) << S;
    }
    // A mask too narrow for the keys is refused, changing nothing.
    std::vector<uint8_t> narrow(2 * 15, 0);
    const MaskView too_narrow{narrow.data(), {2, 1, 1, 15}};
    EXPECT_EQ(testing::error_message([&] { windowed.self_attention(testing::random_tensor({2, 1, 64}, 99), &ours, &too_narrow); }),
              "cached_attention: mask [2, 1, 1, 15] must be [2, 1, 1, >=20]");
    EXPECT_EQ(ours.lengths(), std::vector<int32_t>({16, 19}));
}

// The outputs [B, S, E] of x's tokens through one cache, in calls of the given numbers of tokens (a
// call of one token is a decode step).
inline Tensor outputs_of_calls(const CachedAttention &layer, const Tensor &x, const std::vector<int64_t> &calls) {
    const int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
    KVCache cache = layer.make_cache(B, S);
    Tensor out({B, S, E});
    int64_t begin = 0;
    for (const int64_t count : calls) {
        const Tensor part = count == 1 ? layer.decode_step(x.tokens(begin, begin + 1), cache)
                                       : layer.self_attention(x.tokens(begin, begin + count), &cache);
        for (int64_t b = 0; b < B; b++) std::copy_n(part.data() + b * count * E, count * E, out.data() + (b * S + begin) * E);
        begin += count;
    }
    return out;
}

// Norm weights about 1, as trained ones are: 1 + spread x a seeded normal draw.
inline Tensor norm_weights(std::vector<int64_t> shape, uint32_t seed, float spread) {
    Tensor w = testing::random_tensor(std::move(shape), seed);
    for (int64_t i = 0; i < w.size(); i++) w.data()[i] = 1.0f + spread * w.data()[i];
    return w;
}

// The outputs [B, S, E] of x's first `prompt` tokens through self_attention into a cache, then of
// the rest one decode step at a time.
inline Tensor prompt_then_decode(const CachedAttention &layer, const Tensor &x, int64_t prompt) {
    std::vector<int64_t> calls{prompt};
    calls.resize(x.dim(1) - prompt + 1, 1);
    return outputs_of_calls(layer, x, calls);
}

// A layer that is not causal (an encoder's bidirectional attention), whole or within a window of
// `window` keys each way: `tokens` tokens attend both ways, against the float64 reference. It has
// no prefill/decode split, so a cache and a decode step are refused, the cache left as it was.
inline void check_bidirectional(std::optional<int64_t> window, int64_t tokens) {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    CachedAttentionConfig config = CachedAttentionConfig::from(testing::config_of(
        {{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}}));
    config.causal = false;
    config.sliding_window = window;
    const CachedAttention layer(config, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    reference::CachedAttentionWeights ref = seed.ref;
    ref.window = window;
    ref.causal = false;
    const Tensor x = testing::random_tensor({2, tokens, 64}, 149);
    const Tensor out = layer.self_attention(x);
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    // The causal outputs differ: the check can fail.
    ref.causal = true;
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-2);

    const std::string refusal = "a bidirectional layer (causal false, EmbeddingGemma's use_bidirectional_attention) "
                                "takes no cache and no decode step";
    testing::expect_contains(testing::error_message([&] { layer.make_cache(2, tokens); }), refusal);
    KVCache cache(2, 2, 16, tokens);
    testing::expect_contains(testing::error_message([&] { layer.self_attention(x.tokens(0, 1), &cache); }), refusal);
    testing::expect_contains(testing::error_message([&] { layer.decode_step(x.tokens(0, 1), cache); }), refusal);
    testing::expect_contains(testing::error_message([&] { layer.forward(x, &x, &x, nullptr, &cache); }), refusal);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>(2, 0));
    if (!window) return;

    // A mask of the caller's own within the window both ways, against the layer without a window
    // given both masks at once.
    CachedAttentionConfig unwindowed = config;
    unwindowed.sliding_window.reset();
    const CachedAttention whole(unwindowed, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    const std::vector<int32_t> from_0(2, 0);
    const KeyRule outside = [w = *window](int64_t p, int64_t j) { return j <= p - w || j >= p + w; };
    const TestMask own = test_mask(from_0, tokens, true), both = test_mask(from_0, tokens, true, outside);
    const TestMask window_only = test_mask(from_0, tokens, false, outside);
    const MaskView own_view = own.view(), both_view = both.view(), window_view = window_only.view();
    const Tensor masked_out = layer.self_attention(x, nullptr, &own_view);
    EXPECT_LE(testing::relative_l2(masked_out, whole.self_attention(x, nullptr, &both_view)), 1e-6);
    EXPECT_GT(testing::relative_l2(masked_out, whole.self_attention(x, nullptr, &window_view)), 1e-2);
}

// Qwen3 norms each head of q and k, OLMo 2 all of a token's heads at once (RMSNorm, before RoPE):
// 4 tokens prefilled, 5 decoded, against the float64 reference of the 9 at once.
inline void check_qk_norm(const std::string &model_type) {
    const bool each_head = model_type == "qwen3";
    TestLayer seed({64, 4, 2, 16, false, 1e6});
    seed.ref.norm_eps = 1e-5;
    seed.ref.q_norm = norm_weights({each_head ? 16 : 4 * 16}, 120, 0.3f);
    seed.ref.k_norm = norm_weights({each_head ? 16 : 2 * 16}, 121, 0.3f);
    std::map<std::string, Tensor> tensors = hugging_face_tensors(seed, false);
    tensors.insert({{"model.layers.0.self_attn.q_norm.weight", *seed.ref.q_norm},
                    {"model.layers.0.self_attn.k_norm.weight", *seed.ref.k_norm}});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    // Qwen3's head_dim would default to 128: its configs always state it.
    const CachedAttention layer(testing::config_of({{"model_type", model_type}, {"hidden_size", 64},
                                                    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                    {"head_dim", 16}, {"rope_theta", 1e6}, {"rms_norm_eps", 1e-5}}),
                                Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    ASSERT_TRUE(layer.config().qk_norm.has_value());
    const Tensor x = testing::random_tensor({2, 9, 64}, 122);
    const Tensor out = prompt_then_decode(layer, x, 4);
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-5);
    // Without the norm the output differs: the check can fail.
    seed.ref.q_norm.reset();
    seed.ref.k_norm.reset();
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-2);
}

// Command R+'s QK-norm: a LayerNorm without bias over each head's D, each head its own weights
// ([H, D] and [Hkv, D]). A Llama layer given that norm by hand (the reference rotates halves;
// Cohere's interleaved RoPE with it is a spec case), through a prompt and decode steps.
// in_head_modules: each head's weights under a name of its own (StableLM's
// q_layernorm.norms.<h>.weight), where Command R+ stacks them in q_norm.weight [heads, D].
inline void check_per_head_layer_norms(bool in_head_modules) {
    TestLayer seed({64, 4, 2, 16, false, 1e4});
    seed.ref.norm_eps = 1e-5;
    seed.ref.norm_centred = true;
    seed.ref.q_norm = norm_weights({4, 16}, 123, 0.5f);
    seed.ref.k_norm = norm_weights({2, 16}, 124, 0.5f);
    std::map<std::string, Tensor> tensors = hugging_face_tensors(seed, false);
    for (const auto &[of, weights] : {std::pair{"q", *seed.ref.q_norm}, {"k", *seed.ref.k_norm}}) {
        const std::string prefix = std::string("model.layers.0.self_attn.") + of;
        if (!in_head_modules) tensors.emplace(prefix + "_norm.weight", weights);
        for (int64_t h = 0; in_head_modules && h < weights.dim(0); h++) {
            tensors.emplace(prefix + "_layernorm.norms." + std::to_string(h) + ".weight",
                            Tensor({16}, std::vector<float>(weights.data() + h * 16, weights.data() + (h + 1) * 16)));
        }
    }
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    CachedAttentionConfig config = CachedAttentionConfig::from(testing::config_of(
        {{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}}));
    CachedAttentionConfig::QkNorm norm{CachedAttentionConfig::QkNorm::Span::EachHead, 1e-5};
    norm.centred = norm.weights_per_head = true;
    norm.weights_in_head_modules = in_head_modules;
    if (in_head_modules) norm.query_module = "q_layernorm", norm.key_module = "k_layernorm";
    config.qk_norm = norm;
    const CachedAttention layer(config, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    const Tensor x = testing::random_tensor({2, 9, 64}, 125);
    const Tensor out = prompt_then_decode(layer, x, 4);
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-5);
    // As an RMSNorm, or with one head's weights for all, the reference differs: the check can fail.
    seed.ref.norm_centred = false;
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-2);
    seed.ref.norm_centred = true;
    seed.ref.q_norm = Tensor({16}, std::vector<float>(seed.ref.q_norm->data(), seed.ref.q_norm->data() + 16));
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-2);
}

// Gemma 3: every sixth layer full (RoPE of rope_theta), the others sliding (of
// rope_local_base_freq); its norms scale by 1 + w; scores by query_pre_attn_scalar^-1/2. Layers
// 0 and 5 of one checkpoint, their indices from the weights' prefixes, against the float64
// reference given what each should compute.
inline void check_gemma3_layers() {
    TestLayer seed({64, 4, 2, 16, false, std::nullopt});
    const Tensor q_norm = testing::random_tensor({16}, 130), k_norm = testing::random_tensor({16}, 131);
    const auto tensors = layers_of(seed, {0, 5}, {{"q_norm.weight", q_norm}, {"k_norm.weight", k_norm}});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    const ConfigReader config = testing::config_of({{"model_type", "gemma3_text"}, {"hidden_size", 64},
                                                    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                    {"head_dim", 16}, {"rope_theta", 1e6}, {"rope_local_base_freq", 500.0},
                                                    {"query_pre_attn_scalar", 24}, {"sliding_window", 512},
                                                    {"rms_norm_eps", 1e-6}, {"num_hidden_layers", 6}});
    const auto plus_one = [](const Tensor &w) {
        Tensor out = w;
        for (int64_t i = 0; i < out.size(); i++) out.data()[i] += 1.0f;
        return out;
    };
    seed.ref.q_norm = plus_one(q_norm), seed.ref.k_norm = plus_one(k_norm);
    seed.ref.scale = 1.0 / std::sqrt(24.0);
    const Tensor x = testing::random_tensor({2, 9, 64}, 132);
    for (auto [layer, base, window] : {std::tuple{0, 500.0, 512}, {5, 1e6, 0}}) {
        const CachedAttention gemma(config, Weights::open(dir.file("model.safetensors"),
                                                          "model.layers." + std::to_string(layer) + ".self_attn."));
        EXPECT_EQ(gemma.config().sliding_window.value_or(0), window) << "layer " << layer;
        seed.ref.rope_base = base;
        KVCache cache = gemma.make_cache(2, 9);
        const Tensor prompt = gemma.self_attention(x.tokens(0, 5), &cache);
        const Tensor step = gemma.decode_step(x.tokens(5, 6), cache);
        const std::vector<double> expected = reference::cached_attention(seed.ref, x.tokens(0, 6), {}, {}, 0);
        Tensor out({2, 6, 64});
        for (int64_t b = 0; b < 2; b++) {
            std::copy_n(prompt.data() + b * 5 * 64, 5 * 64, out.data() + b * 6 * 64);
            std::copy_n(step.data() + b * 64, 64, out.data() + (b * 6 + 5) * 64);
        }
        EXPECT_LE(testing::relative_l2(out, expected), 1e-5) << "layer " << layer;
    }
    // A config read for one layer does not take another layer's weights.
    EXPECT_EQ(testing::error_message([&] {
                  CachedAttention(CachedAttentionConfig::from(config, 5), Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
              }),
              "cached_attention: the config was read for layer 5, the weights' prefix 'model.layers.0.self_attn.' names layer 0");
    // Without a layer index (a prefix that names none), a Gemma 3 layer is refused.
    testing::expect_contains(testing::error_message([&] { CachedAttention(config, Weights::open(dir.file("model.safetensors"))); }),
                             "gemma3_text layers differ by index");
}

// gpt-oss: layer 0 slides over 3 keys, layer 1 sees every key; both have biases and sinks. A
// prompt of 5 tokens, then 4 decode steps (past the window: the windowed decode path).
inline void check_gpt_oss_layers() {
    TestLayer seed({64, 4, 2, 16, true, 10000.0});
    Tensor sinks = testing::random_tensor({4}, 140);
    for (int64_t h = 0; h < 4; h++) sinks.data()[h] *= 1.5f;
    std::map<std::string, Tensor> tensors = layers_of(seed, {0, 1}, {{"sinks", sinks}});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    const ConfigReader config = testing::config_of({{"model_type", "gpt_oss"}, {"hidden_size", 64},
                                                    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                    {"head_dim", 16}, {"rope_theta", 10000.0}, {"sliding_window", 3},
                                                    {"num_hidden_layers", 2},
                                                    {"rope_scaling", nlohmann::json{{"rope_type", "default"}}}});
    const Tensor x = testing::random_tensor({2, 9, 64}, 141);
    for (auto [layer, window] : {std::pair{0, 3}, {1, 0}}) {
        const CachedAttention gpt_oss(config, Weights::open(dir.file("model.safetensors"),
                                                            "model.layers." + std::to_string(layer) + ".self_attn."));
        EXPECT_EQ(gpt_oss.config().sliding_window.value_or(0), window) << "layer " << layer;
        const Tensor out = prompt_then_decode(gpt_oss, x, 5);
        seed.ref.sinks = sinks;
        seed.ref.window = window ? std::optional<int64_t>(window) : std::nullopt;
        EXPECT_LE(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-5) << "layer " << layer;
        // Without the sinks the reference differs: the check can fail.
        seed.ref.sinks.reset();
        EXPECT_GT(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-2) << "layer " << layer;
        // The same layer's weights without sinks are refused by name.
        tensors.erase("model.layers." + std::to_string(layer) + ".self_attn.sinks");
    }
    write_safetensors(dir.file("no_sinks.safetensors"), tensors);
    try {
        CachedAttention(config, Weights::open(dir.file("no_sinks.safetensors"), "model.layers.0.self_attn."));
        FAIL() << "a gpt-oss layer without sinks was built";
    } catch (const Error &e) {
        testing::expect_contains(e.what(), "model.layers.0.self_attn.sinks");
    }
}

// Gemma 2: layer 0 slides over 3 keys, layer 1 sees every key; both scale scores by
// query_pre_attn_scalar^-1/2 and soft-cap them, here at 0.8 so that capping bends most scores. A
// prompt of 5 tokens, then 4 decode steps (past the window: the windowed decode path).
inline void check_gemma2_layers() {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), layers_of(seed, {0, 1}));
    const ConfigReader config = testing::config_of({{"model_type", "gemma2"}, {"hidden_size", 64},
                                                    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                    {"head_dim", 16}, {"sliding_window", 3}, {"num_hidden_layers", 2},
                                                    {"query_pre_attn_scalar", 8}, {"attn_logit_softcapping", 0.8}});
    const Tensor x = testing::random_tensor({2, 9, 64}, 142);
    seed.ref.scale = 1.0 / std::sqrt(8.0);
    for (auto [layer, window] : {std::pair{0, 3}, {1, 0}}) {
        const CachedAttention gemma(config, Weights::open(dir.file("model.safetensors"),
                                                          "model.layers." + std::to_string(layer) + ".self_attn."));
        EXPECT_EQ(gemma.config().sliding_window.value_or(0), window) << "layer " << layer;
        const Tensor out = prompt_then_decode(gemma, x, 5);
        seed.ref.softcap = 0.8;
        seed.ref.window = window ? std::optional<int64_t>(window) : std::nullopt;
        EXPECT_LE(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-5) << "layer " << layer;
        // Without the capping the reference differs: the check can fail.
        seed.ref.softcap.reset();
        EXPECT_GT(testing::relative_l2(out, reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-2) << "layer " << layer;
    }
}

// Llama 4: layer 0 rotates pairs in place, RMS-normalises q and k without weights (after RoPE, as
// transformers does) and attends within chunks of 4 keys; layer 3 has no RoPE and scales its
// queries by position (floor_scale 3, attn_scale 0.5: 1.35 from position 2). Nine tokens through a
// prompt of 5 (past the first chunk) and 4 decode steps (from the third chunk on), and at once.
inline void check_llama4_layers() {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), layers_of(seed, {0, 3}));
    const ConfigReader config = testing::config_of({{"model_type", "llama4_text"}, {"hidden_size", 64},
                                                    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                                    {"head_dim", 16}, {"rope_theta", 10000.0}, {"num_hidden_layers", 4},
                                                    {"attention_chunk_size", 4}, {"floor_scale", 3}, {"attn_scale", 0.5}});
    const Tensor x = testing::random_tensor({2, 9, 64}, 143);
    const Tensor ones({16}, std::vector<float>(16, 1.0f));
    for (const int layer : {0, 3}) {
        const CachedAttention llama4(config, Weights::open(dir.file("model.safetensors"),
                                                           "model.layers." + std::to_string(layer) + ".self_attn."));
        reference::CachedAttentionWeights ref = seed.ref;
        if (layer == 0) {
            ref.rope_pairs_in_place = ref.norm_after_rope = true;
            ref.q_norm = ref.k_norm = ones;
            ref.norm_eps = 1e-5;
            ref.chunk = 4;
        } else {
            ref.rope_base.reset();
            ref.temperature = {3.0, 0.5, 1};
        }
        const auto expected = reference::cached_attention(ref, x, {}, {}, 0);
        EXPECT_LE(testing::relative_l2(prompt_then_decode(llama4, x, 5), expected), 1e-5) << "layer " << layer;
        EXPECT_LE(testing::relative_l2(llama4.self_attention(x), expected), 1e-5) << "layer " << layer;
        // Calls that start inside a chunk and reach into the next ones (positions 2-7, then 8).
        EXPECT_LE(testing::relative_l2(outputs_of_calls(llama4, x, {2, 6, 1}), expected), 1e-5) << "layer " << layer;
        // Without the chunks, or the temperature, the reference differs: the checks can fail.
        ref.chunk.reset();
        ref.temperature.reset();
        EXPECT_GT(testing::relative_l2(llama4.self_attention(x), reference::cached_attention(ref, x, {}, {}, 0)), 1e-2)
            << "layer " << layer;
    }
}

// Ministral 3's queries scaled by position counting from 0 (Llama 4's count from 1), on a layer
// with RoPE: a prompt of 5 and 6 decode steps, the scale changing at positions 4 and 8.
inline void check_queries_scaled_from_position_0() {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    CachedAttentionConfig config = seed.layer->config();
    config.query_temperature = CachedAttentionConfig::QueryTemperature{4.0, 0.5, 0};
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    config.names = CachedAttentionConfig::Names::HuggingFace;
    const CachedAttention layer(config, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    reference::CachedAttentionWeights ref = seed.ref;
    ref.bq = ref.bk = ref.bv = ref.bo = std::nullopt;
    ref.temperature = {4.0, 0.5, 0};
    const Tensor x = testing::random_tensor({2, 11, 64}, 154);
    const Tensor out = prompt_then_decode(layer, x, 5);
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    ref.temperature = {4.0, 0.5, 1};  // counted from 1: the check can fail
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-3);
}

// `out` [B, S, E] of x against the reference turning the first `rotary_dim` dims of each head, and
// unlike the reference turning whole heads (so the check can fail).
inline void expect_partial_rope(const Tensor &out, reference::CachedAttentionWeights ref, const Tensor &x, int64_t rotary_dim) {
    ref.rotary_dim = rotary_dim;
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    ref.rotary_dim = 0;
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-2);
}

// A GLM-4 layer (its q, k and v biases; none on o) through a prompt of 5 and 4 decode steps: the
// first 8 of each head's 16 dims turn, their pairs in place.
inline void check_glm_layer() {
    TestLayer seed({64, 4, 2, 16, true, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, true));
    const CachedAttention glm(testing::config_of({{"model_type", "glm"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                  {"head_dim", 16}, {"rope_theta", 10000.0}}),
                              Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    reference::CachedAttentionWeights ref = seed.ref;
    ref.bo = Tensor({64});  // no output bias
    ref.rope_pairs_in_place = true;
    const Tensor x = testing::random_tensor({2, 9, 64}, 144);
    expect_partial_rope(prompt_then_decode(glm, x, 5), ref, x, 8);
}

// The seed's q, k and v weights (or biases, of a row each) fused as query_key_value: per KV head,
// its query heads' rows, then its key's and value's (GPT-NeoX: a group per head; Falcon).
inline Tensor fused_by_group(const Tensor &q, const Tensor &k, const Tensor &v, int64_t H, int64_t Hkv, int64_t D) {
    const int64_t cols = q.rank() == 2 ? q.dim(1) : 1, g = H / Hkv, head = D * cols;
    Shape shape = q.shape();
    shape[0] = (H + 2 * Hkv) * D;
    Tensor fused(shape);
    float *to = fused.data();
    for (int64_t group = 0; group < Hkv; group++) {
        to = std::copy_n(q.data() + group * g * head, g * head, to);
        to = std::copy_n(k.data() + group * head, head, to);
        to = std::copy_n(v.data() + group * head, head, to);
    }
    return fused;
}

// A layer whose weights are query_key_value (grouped) and dense, both biased, under prefix p.
inline CachedAttention fused_qkv_layer(const TestLayer &seed, const nlohmann::json &config, const std::string &p,
                                       const testing::TempDir &dir) {
    const reference::CachedAttentionWeights &r = seed.ref;
    write_safetensors(dir.file("model.safetensors"),
                      {{p + "query_key_value.weight", fused_by_group(r.wq, r.wk, r.wv, r.H, r.Hkv, r.D)},
                       {p + "query_key_value.bias", fused_by_group(*r.bq, *r.bk, *r.bv, r.H, r.Hkv, r.D)},
                       {p + "dense.weight", r.wo}, {p + "dense.bias", *r.bo}});
    return CachedAttention(testing::config_of(config), Weights::open(dir.file("model.safetensors"), p));
}

// A GPT-NeoX (Pythia) layer through a prompt of 5 and 4 decode steps: each head's q, k and v rows in
// turn in query_key_value (biased), the output `dense`; a quarter of each head (4 of 16 dims)
// rotated, as rotary_pct and rotary_emb_base say.
inline void check_gpt_neox_layer() {
    TestLayer seed({64, 4, 4, 16, true, 10000.0});
    testing::TempDir dir;
    const CachedAttention neox = fused_qkv_layer(seed, {{"model_type", "gpt_neox"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                        {"rotary_pct", 0.25}, {"rotary_emb_base", 10000}},
                                                 "gpt_neox.layers.0.attention.", dir);
    const Tensor x = testing::random_tensor({2, 9, 64}, 155);
    expect_partial_rope(prompt_then_decode(neox, x, 5), seed.ref, x, 4);
}

// Falcon's three layouts of query_key_value, each through a prompt of 5 and 4 decode steps: one
// KV head (multi_query, Falcon-7B), KV heads of 2 query heads each (new_decoder_architecture,
// Falcon-40B), and q, k and v per head (neither).
inline void check_falcon_layers() {
    for (const auto &[kv_heads, multi_query, new_architecture] :
         {std::tuple{1, true, false}, std::tuple{2, false, true}, std::tuple{4, false, false}}) {
        TestLayer seed({64, 4, kv_heads, 16, true, 10000.0}, 160);
        testing::TempDir dir;
        const CachedAttention falcon = fused_qkv_layer(
            seed, {{"model_type", "falcon"}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"num_kv_heads", kv_heads},
                   {"multi_query", multi_query}, {"new_decoder_architecture", new_architecture}, {"bias", true},
                   {"rope_theta", 10000.0}, {"alibi", false}},
            "transformer.h.0.self_attention.", dir);
        EXPECT_EQ(falcon.config().kv_heads, kv_heads);
        const Tensor x = testing::random_tensor({2, 9, 64}, 161);
        EXPECT_LE(testing::relative_l2(prompt_then_decode(falcon, x, 5), reference::cached_attention(seed.ref, x, {}, {}, 0)),
                  1e-5) << kv_heads << " KV heads";
    }
}

// out (x through a layer, from an empty cache) differs from the reference after each change to
// its weights: the check against the unchanged reference can fail.
inline void expect_each_change_differs(const Tensor &out, const reference::CachedAttentionWeights &ref, const Tensor &x,
                                       const std::vector<std::function<void(reference::CachedAttentionWeights &)>> &changes) {
    for (size_t i = 0; i < changes.size(); i++) {
        reference::CachedAttentionWeights changed = ref;
        changes[i](changed);
        EXPECT_GT(testing::relative_l2(out, reference::cached_attention(changed, x, {}, {}, 0)), 1e-2) << "change " << i;
    }
}

// A GLM-4.5 layer (glm4_moe) through a prompt of 5 and 4 decode steps: q, k and v biased
// (attention_bias), o not; q and k RMS-normed per head (use_qk_norm); the first 8 of each head's
// 16 dims turn as halves, not GLM-4's pairs.
inline void check_glm4_moe_layer() {
    TestLayer seed({64, 4, 2, 16, true, 10000.0});
    seed.ref.norm_eps = 1e-5;
    seed.ref.q_norm = norm_weights({16}, 146, 0.3f);
    seed.ref.k_norm = norm_weights({16}, 147, 0.3f);
    std::map<std::string, Tensor> tensors = hugging_face_tensors(seed, true);
    tensors.insert({{"model.layers.0.self_attn.q_norm.weight", *seed.ref.q_norm},
                    {"model.layers.0.self_attn.k_norm.weight", *seed.ref.k_norm}});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    const CachedAttention glm(testing::config_of({{"model_type", "glm4_moe"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                  {"num_key_value_heads", 2}, {"head_dim", 16}, {"rope_theta", 10000.0},
                                                  {"attention_bias", true}, {"use_qk_norm", true}}),
                              Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    reference::CachedAttentionWeights ref = seed.ref;
    ref.bo.reset();  // no output bias
    ref.rotary_dim = 8;
    const Tensor x = testing::random_tensor({2, 9, 64}, 148);
    const Tensor out = prompt_then_decode(glm, x, 5);
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    // GLM-4's pairs, the whole head, or no norm: each differs, so the check can fail.
    expect_each_change_differs(out, ref, x,
                               {[](auto &r) { r.rope_pairs_in_place = true; }, [](auto &r) { r.rotary_dim = 0; },
                                [](auto &r) { r.q_norm.reset(), r.k_norm.reset(); }});
}

// Hunyuan dense: q and k RMS-normed per head after RoPE (weights [D], query_layernorm and
// key_layernorm), the four biased, and a "dynamic" RoPE with alpha 1000: within
// max_position_embeddings its base is theta alpha^(D / (D - 2)); a call past it turns by dynamic
// NTK's base from theta, without alpha, as transformers' dynamic update does.
inline void check_hunyuan_layer() {
    TestLayer seed({64, 4, 2, 16, true, 10000.0});
    reference::CachedAttentionWeights ref = seed.ref;
    ref.norm_eps = 1e-5;
    ref.q_norm = norm_weights({16}, 150, 0.3f);
    ref.k_norm = norm_weights({16}, 151, 0.3f);
    ref.norm_after_rope = true;
    std::map<std::string, Tensor> tensors = hugging_face_tensors(seed, false);
    tensors.insert({{"model.layers.0.self_attn.query_layernorm.weight", *ref.q_norm},
                    {"model.layers.0.self_attn.key_layernorm.weight", *ref.k_norm}});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), tensors);
    const auto hunyuan = [&](int64_t max_positions) {
        return CachedAttention(
            testing::config_of({{"model_type", "hunyuan_v1_dense"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                {"num_key_value_heads", 2}, {"head_dim", 16}, {"rope_theta", 10000.0},
                                {"attention_bias", true}, {"use_qk_norm", true}, {"max_position_embeddings", max_positions},
                                {"rope_scaling", {{"type", "dynamic"}, {"alpha", 1000.0}, {"factor", 1.0}}}}),
            Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    };
    const Tensor x = testing::random_tensor({2, 9, 64}, 152);
    const Tensor within = prompt_then_decode(hunyuan(32), x, 5);
    ref.rope_base = 10000.0 * std::pow(1000.0, 16.0 / 14.0);
    EXPECT_LE(testing::relative_l2(within, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    // Normed before RoPE, the base without alpha, or no norm: each differs, so the check can fail.
    expect_each_change_differs(within, ref, x,
                               {[](auto &r) { r.norm_after_rope = false; }, [](auto &r) { r.rope_base = 10000.0; },
                                [](auto &r) { r.q_norm.reset(), r.k_norm.reset(); }});
    // One call of 12 tokens past max_position_embeddings 8: base theta (12 / 8)^(D / (D - 2)).
    const Tensor long_x = testing::random_tensor({2, 12, 64}, 153);
    const Tensor past = hunyuan(8).self_attention(long_x);
    ref.rope_base = 10000.0 * std::pow(12.0 / 8.0, 16.0 / 14.0);
    EXPECT_LE(testing::relative_l2(past, reference::cached_attention(ref, long_x, {}, {}, 0)), 1e-5);
    ref.rope_base = 10000.0 * std::pow(1000.0, 16.0 / 14.0);
    EXPECT_GT(testing::relative_l2(past, reference::cached_attention(ref, long_x, {}, {}, 0)), 1e-2);
}

// OLMo 1 (OLMo-7B-0424): q, k and v clamped to clip_qkv as projected, here 0.5 so that most of
// them bend; a prompt of 5 and 4 decode steps.
inline void check_olmo_clip() {
    TestLayer seed({64, 4, 2, 16, true, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    const CachedAttention olmo(testing::config_of({{"model_type", "olmo"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                   {"num_key_value_heads", 2}, {"rope_theta", 10000.0},
                                                   {"attention_bias", true}, {"clip_qkv", 0.5}}),
                               Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    const Tensor x = testing::random_tensor({2, 9, 64}, 145);
    const Tensor out = prompt_then_decode(olmo, x, 5);
    reference::CachedAttentionWeights ref = seed.ref;
    ref.qkv_clip = 0.5;
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    ref.qkv_clip.reset();  // unclamped: the check can fail
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-2);
}

}  // namespace hattn::testing
