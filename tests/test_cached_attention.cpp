// hattn::CachedAttention and hattn::KVCache: the layer against a float64 reference, and decoding
// through the cache against whole-sequence runs.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "reference/cached_attention.h"
#include "support/cached_layer.h"
#include "support/compare.h"
#include "support/config.h"
#include "support/device.h"
#include "support/config_changes.h"
#include "support/errors.h"
#include "support/stateful_layer.h"
#include "support/random.h"
#include "hattn/safetensors_writer.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

using testing::Shape4;
using testing::TestLayer;

class CachedAttentionShapes : public ::testing::TestWithParam<Shape4> {};

TEST_P(CachedAttentionShapes, SelfAttentionMatchesReference) {
    TestLayer t(GetParam());
    const Tensor x = testing::random_tensor({2, 13, GetParam().E}, 9);
    EXPECT_LE(testing::relative_l2(t.layer->self_attention(x), reference::cached_attention(t.ref, x, {}, {}, 0)),
              1e-5);
}

// Without a cache the kernels read the projected keys and values in place: one token takes the
// decode kernel that way, and no tokens give an empty output.
TEST_P(CachedAttentionShapes, OneTokenOrNoneWithoutACache) {
    TestLayer t(GetParam());
    const Tensor x = testing::random_tensor({2, 1, GetParam().E}, 11);
    EXPECT_LE(testing::relative_l2(t.layer->self_attention(x), reference::cached_attention(t.ref, x, {}, {}, 0)),
              1e-5);
    EXPECT_EQ(t.layer->self_attention(Tensor({2, 0, GetParam().E})).shape(), Shape({2, 0, GetParam().E}));
    EXPECT_EQ(t.layer->self_attention(Tensor({0, 3, GetParam().E})).shape(), Shape({0, 3, GetParam().E}));
}

TEST_P(CachedAttentionShapes, PrefillThenDecodeEqualsForward) {
    TestLayer t(GetParam());
    const Tensor x = testing::random_tensor({2, 9, GetParam().E}, 10);
    const std::vector<double> expected = reference::cached_attention(t.ref, x, {}, {}, 0);
    KVCache cache = t.layer->make_cache(2, 9);
    Tensor out({2, 9, GetParam().E});
    auto place = [&](const Tensor &part, int64_t begin) {
        for (int64_t b = 0; b < 2; b++)
            std::copy_n(part.data() + b * part.dim(1) * part.dim(2), part.dim(1) * part.dim(2),
                        out.data() + (b * 9 + begin) * part.dim(2));
    };
    place(t.layer->self_attention(x.tokens(0, 4), &cache), 0);
    for (int64_t s = 4; s < 9; s++) place(t.layer->decode_step(x.tokens(s, s + 1), cache), s);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({9, 9}));
    EXPECT_LE(testing::relative_l2(out, expected), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Layers, CachedAttentionShapes,
                         ::testing::Values(Shape4{64, 4, 4, 16, true, 10000.0},   // MHA, RoPE
                                           Shape4{96, 6, 2, 16, false, 10000.0},  // GQA
                                           Shape4{64, 4, 1, 32, true, 500.0},     // MQA
                                           Shape4{64, 8, 8, 8, true, std::nullopt},
                                           Shape4{40, 2, 2, 20, true, std::nullopt},   // H*D != E
                                           Shape4{96, 2, 1, 96, false, 10000.0},       // Phi-3-mini's D
                                           Shape4{128, 2, 1, 256, false, 10000.0}),    // Gemma's D
                         [](const auto &info) { return "case" + std::to_string(info.index); });

// A cached layer's self-attention and decode calls, for the checks of tests/support/stateful_layer.h.
testing::StatefulLayer<KVCache> stateful(const CachedAttention &layer) {
    return {[&layer](int64_t batch, int64_t capacity) { return layer.make_cache(batch, capacity); },
            [&layer](const Tensor &x, KVCache &cache) { return layer.self_attention(x, &cache); },
            [&layer](const Tensor &x, KVCache &cache) { return layer.decode_step(x, cache); }};
}

TEST(CachedAttentionDecode, NonFiniteInputIsRefusedAndChangesNothing) {
    TestLayer t(Shape4{64, 4, 2, 16, true, 10000.0});
    double divergence = 1;
    EXPECT_EQ(testing::non_finite_input_messages(stateful(*t.layer), 64, 51, divergence),
              std::vector<std::string>({"cached_attention: decode input: element 69 is NaN; inputs must be finite",
                                        "cached_attention: input: element 3 is infinite; inputs must be finite"}));
    EXPECT_LE(divergence, 1e-6);
    const Tensor context = testing::random_tensor({2, 3, 64}, 52);
    Tensor bad_values = context;
    bad_values.data()[7] = std::nanf("");
    EXPECT_EQ(testing::error_message([&] { t.layer->conditioning_cache(context, bad_values); }),
              "cached_attention: value input: element 7 is NaN; inputs must be finite");
}

// Finite input or weights can overflow float32 inside the layer (the fast-math kernels then give
// NaN): the output is checked, and the call refused with where it first appeared, the cache unchanged.
TEST(CachedAttentionDecode, AnOverflowIsRefusedAndChangesNothing) {
    TestLayer t(Shape4{64, 4, 2, 16, true, 10000.0});
    double divergence = 1;
    for (const std::string &message : testing::overflowing_input_messages(stateful(*t.layer), 64, 53, divergence)) {
        testing::expect_contains(message, "cached_attention: the output overflowed float32 (element 0 is");
        testing::expect_contains(message, "it first appears in the query projection or its RoPE; the input's largest "
                                          "magnitude is 3e+38, the largest weight");
    }
    EXPECT_LE(divergence, 1e-6);
    // One weight of 3e38, in the value projection.
    std::map<std::string, Tensor> tensors = t.tensors;
    tensors["value_projection.weight"].data()[5] = 3e38f;
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), tensors);
    const CachedAttention huge(t.layer->config(), Weights::open(dir.file("w.safetensors")));
    KVCache cache = huge.make_cache(2, 4);
    // (v itself stays below float32's largest value; the products after it overflow.)
    testing::expect_contains(testing::error_message([&] { huge.self_attention(testing::random_tensor({2, 3, 64}, 54), &cache); }),
                             "it first appears in the attention or the output projection; the input's largest magnitude "
                             "is 0.996319, the largest weight 3e+38 (in the value projection)");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>(2, 0));
}

TEST(CachedAttentionDecode, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    for (Shape4 shape : {Shape4{64, 4, 4, 16, true, 10000.0}, Shape4{96, 6, 2, 16, false, 10000.0}}) {
        TestLayer t(shape);
        EXPECT_LE(testing::continuous_batching_error(stateful(*t.layer), shape.E, 50), 1e-6) << shape.H << "/" << shape.Hkv;
    }
}

TEST(KVCacheSlots, AssignedSequencesAreChecked) {
    KVCache cache(2, 2, 4, 8), other_heads(1, 1, 4, 8), longer(2, 2, 4, 16);
    longer.append(testing::random_tensor({2, 9, 2, 4}, 1).view(), testing::random_tensor({2, 9, 2, 4}, 2).view());
    cache.append(testing::random_tensor({2, 3, 2, 4}, 3).view(), testing::random_tensor({2, 3, 2, 4}, 4).view());
    EXPECT_THROW(cache.assign_sequence(0, other_heads), Error);
    EXPECT_THROW(cache.assign_sequence(0, longer), Error);  // 9 tokens, capacity 8
    EXPECT_THROW(cache.assign_sequence(2, cache, 0), Error);
    EXPECT_THROW(cache.assign_sequence(0, cache, -1), Error);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({3, 3}));
    longer.truncate_to(5, 1);
    cache.assign_sequence(1, longer, 1);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({3, 5}));
    for (int64_t h = 0; h < 2; h++)  // rows come from source 1 and land at the target's own stride
        for (int64_t i = 0; i < 5 * 4; i++) {
            EXPECT_EQ(cache.keys().data[((1 * 2 + h) * 8) * 4 + i], longer.keys().data[((1 * 2 + h) * 16) * 4 + i]);
            EXPECT_EQ(cache.values().data[((1 * 2 + h) * 8) * 4 + i], longer.values().data[((1 * 2 + h) * 16) * 4 + i]);
        }
    cache.reset(0);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({0, 5}));
    EXPECT_THROW(cache.reset(2), Error);
}

TEST(CachedAttentionThreads, OneLayerServesThreadsThatEachHaveACache) {
    TestLayer t(Shape4{64, 4, 2, 16, true, 10000.0});
    EXPECT_LE(testing::shared_by_threads_error(stateful(*t.layer), 64, 40), 1e-6);
}

// The cache is filled with keys and values computed elsewhere (no x history exists), then decoded.
TEST(CachedAttentionDecode, FromExternallyFilledCacheMatchesReference) {
    const Shape4 s{64, 8, 2, 16, true, 10000.0};
    TestLayer t(s);
    const int64_t B = 2, prior = 21;
    const Tensor k = testing::random_tensor({B, prior, s.Hkv, s.D}, 30);
    const Tensor v = testing::random_tensor({B, prior, s.Hkv, s.D}, 31);
    KVCache cache = t.layer->make_cache(B, 32);
    cache.append(k.view(), v.view());
    const Tensor x = testing::random_tensor({B, 1, s.E}, 32);
    const std::vector<double> expected = reference::cached_attention(
        t.ref, x, {k.values().begin(), k.values().end()}, {v.values().begin(), v.values().end()}, prior);
    EXPECT_LE(testing::relative_l2(t.layer->decode_step(x, cache), expected), 1e-5);
}

// Decodes `steps` tokens of x from the cache's current state; returns their outputs.
Tensor decode_all(CachedAttention &layer, KVCache &cache, const Tensor &x) {
    Tensor out({x.dim(0), x.dim(1), x.dim(2)});
    for (int64_t s = 0; s < x.dim(1); s++) {
        const Tensor y = layer.decode_step(x.tokens(s, s + 1), cache);
        for (int64_t b = 0; b < x.dim(0); b++)
            std::copy_n(y.data() + b * x.dim(2), x.dim(2), out.data() + (b * x.dim(1) + s) * x.dim(2));
    }
    return out;
}

double relative_difference(const Tensor &a, const Tensor &b) {
    return testing::relative_l2(a, {b.values().begin(), b.values().end()});
}

// A slot is a view into the storage: one for a sequence the batch lacks, or past the capacity,
// would reach other sequences' or heads' rows.
TEST(KVCacheSlots, AreCheckedLikeAppends) {
    KVCache cache(2, 2, 8, 8);
    EXPECT_NO_THROW(cache.key_slot(1, 8));
    EXPECT_THROW(cache.key_slot(2, 1), Error);
    EXPECT_THROW(cache.value_slot(-1, 1), Error);
    EXPECT_THROW(cache.key_slot(0, 9), Error);
}

// A view without data or with a stride list of the wrong length is refused before any row moves.
TEST(KVCacheSlots, AppendRefusesMalformedViewsAndChangesNothing) {
    KVCache cache(1, 2, 4, 8);
    const Tensor kv = testing::random_tensor({1, 2, 2, 4}, 1);
    const ConstTensorView no_data(nullptr, {1, 2, 2, 4});
    ConstTensorView short_strides = kv.view();
    short_strides.strides = {1};
    EXPECT_EQ(testing::error_message([&] { cache.append(no_data, no_data); }),
              "KV cache append: keys and values must be views with data and one stride per dimension");
    EXPECT_EQ(testing::error_message([&] { cache.append(short_strides, kv.view()); }),
              "KV cache append: keys and values must be views with data and one stride per dimension");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({0}));
    // Rows of the cache's own storage could be overwritten before they are read.
    cache.append(kv.view(), kv.view());
    const ConstTensorView own(cache.keys().data, {1, 2, 2, 4});
    EXPECT_EQ(testing::error_message([&] { cache.append(kv.view(), own); }),
              "KV cache append: keys and values must not lie in the cache's own storage (copy them first)");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({2}));
}

TEST(CachedAttentionDecode, TruncateThenDecodeEqualsAFreshRun) {
    TestLayer t({64, 4, 2, 16, true, 10000.0});
    const Tensor x = testing::random_tensor({1, 12, 64}, 40);
    const Tensor next = testing::random_tensor({1, 3, 64}, 41);
    KVCache cache = t.layer->make_cache(1, 16);
    t.layer->self_attention(x, &cache);
    cache.truncate_to(7);
    const Tensor after_truncate = decode_all(*t.layer, cache, next);

    KVCache fresh = t.layer->make_cache(1, 16);
    t.layer->self_attention(x.tokens(0, 7), &fresh);
    EXPECT_LE(relative_difference(after_truncate, decode_all(*t.layer, fresh, next)), 1e-6);
}

TEST(CachedAttentionDecode, ForkThenDecodeEqualsAFreshRun) {
    TestLayer t({64, 4, 4, 16, true, 10000.0});
    const Tensor x = testing::random_tensor({2, 6, 64}, 50);
    KVCache cache = t.layer->make_cache(2, 10);
    t.layer->self_attention(x, &cache);
    cache.fork(0, 1);  // sequence 1 now continues sequence 0
    const Tensor next_one = testing::random_tensor({1, 2, 64}, 51);
    Tensor next({2, 2, 64});
    std::copy_n(next_one.data(), 128, next.data());
    std::copy_n(next_one.data(), 128, next.data() + 128);
    const Tensor forked = decode_all(*t.layer, cache, next);

    KVCache fresh = t.layer->make_cache(1, 10);
    t.layer->self_attention(x.tokens(0, 6).reshaped({2, 6, 64}), nullptr);  // exercise the no-cache path
    Tensor x0({1, 6, 64});
    std::copy_n(x.data(), 6 * 64, x0.data());
    t.layer->self_attention(x0, &fresh);
    const Tensor alone = decode_all(*t.layer, fresh, next_one);
    for (int64_t b = 0; b < 2; b++) {
        Tensor row({1, 2, 64});
        std::copy_n(forked.data() + b * 128, 128, row.data());
        EXPECT_LE(relative_difference(row, alone), 1e-6) << "sequence " << b;
    }
}

TEST(CachedAttentionDecode, RaggedBatchEqualsEachSequenceAlone) {
    TestLayer t({96, 6, 3, 16, false, 10000.0});
    const Tensor x = testing::random_tensor({2, 8, 96}, 60);
    const Tensor next = testing::random_tensor({2, 2, 96}, 61);
    KVCache cache = t.layer->make_cache(2, 12);
    t.layer->self_attention(x, &cache);
    cache.truncate_to(5, 1);  // sequence 0 holds 8 tokens, sequence 1 holds 5
    ASSERT_EQ(cache.lengths(), std::vector<int32_t>({8, 5}));
    const Tensor batched = decode_all(*t.layer, cache, next);

    for (int64_t b = 0; b < 2; b++) {
        const int64_t kept = b == 0 ? 8 : 5;
        Tensor xb({1, kept, 96}), nb({1, 2, 96}), got({1, 2, 96});
        std::copy_n(x.data() + b * 8 * 96, kept * 96, xb.data());
        std::copy_n(next.data() + b * 2 * 96, 2 * 96, nb.data());
        std::copy_n(batched.data() + b * 2 * 96, 2 * 96, got.data());
        KVCache alone = t.layer->make_cache(1, 12);
        t.layer->self_attention(xb, &alone);
        EXPECT_LE(relative_difference(got, decode_all(*t.layer, alone, nb)), 1e-6) << "sequence " << b;
    }
}

TEST(CachedAttentionDecode, OverflowThrowsAndLeavesTheCacheUnchanged) {
    TestLayer t({64, 4, 4, 16, true, 10000.0});
    KVCache cache = t.layer->make_cache(1, 4);
    t.layer->self_attention(testing::random_tensor({1, 3, 64}, 70), &cache);
    try {
        t.layer->self_attention(testing::random_tensor({1, 2, 64}, 71), &cache);
        FAIL() << "expected an overflow error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("KV cache full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({3}));
    Tensor k({1, 2, 4, 16}), v({1, 2, 4, 16});
    EXPECT_THROW(cache.append(k.view(), v.view()), Error);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({3}));
}

TEST(CachedAttentionErrors, BadShapesAreNamed) {
    TestLayer t({64, 4, 4, 16, true, std::nullopt});
    EXPECT_THROW(t.layer->self_attention(testing::random_tensor({1, 3, 65}, 1)), Error);
    KVCache other = KVCache(1, 2, 16, 8);
    EXPECT_THROW(t.layer->self_attention(testing::random_tensor({1, 3, 64}, 1), &other), Error);
    KVCache cache = t.layer->make_cache(1, 8);
    EXPECT_THROW(t.layer->decode_step(testing::random_tensor({1, 2, 64}, 1), cache), Error);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({0}));
}

TEST(CachedAttentionForward, SeedFormMatchesSelfAttentionAndCrossAttention) {
    TestLayer t({64, 4, 2, 16, true, 10000.0});
    const Tensor x = testing::random_tensor({2, 5, 64}, 90), context = testing::random_tensor({2, 7, 64}, 91);
    const Tensor self = t.layer->self_attention(x);
    EXPECT_EQ(t.layer->forward(x, &x, &x).values(), self.values());
    const ConditioningCache cond = t.layer->conditioning_cache(context, context);
    EXPECT_EQ(t.layer->forward(x, nullptr, nullptr, nullptr, nullptr, &cond).values(),
              t.layer->cross_attention(x, cond).values());
    // Both caches: the seed attends to the conditioning cache and leaves the generation cache as it is.
    KVCache generation = t.layer->make_cache(2, 8);
    EXPECT_EQ(t.layer->forward(x, &x, &x, nullptr, &generation, &cond).values(),
              t.layer->cross_attention(x, cond).values());
    EXPECT_EQ(generation.lengths(), std::vector<int32_t>({0, 0}));
    EXPECT_THROW(t.layer->forward(x, nullptr, nullptr), Error);
    EXPECT_EQ(t.layer->cross_attention(Tensor({2, 0, 64}), cond).shape(), Shape({2, 0, 64}));
}

// A config built by hand skips from()'s checks: the layer refuses sizes that cannot be.
TEST(CachedAttentionConfig, AHandBuiltConfigIsChecked) {
    TestLayer t({64, 4, 2, 16, true, std::nullopt});
    for (auto [heads, kv_heads] : {std::pair<int64_t, int64_t>{0, 2}, {4, 3}}) {
        CachedAttentionConfig config = t.layer->config();
        config.heads = heads, config.kv_heads = kv_heads;
        const std::string message = testing::error_message([&] { t.with_config(config); });
        EXPECT_EQ(message, "cached_attention: E=64 H=" + std::to_string(heads) + " Hkv=" + std::to_string(kv_heads) +
                               " D=16: each must be positive, and H a multiple of Hkv");
    }
    // validate() alone, and rules no weight's shape would catch.
    testing::expect_each_change_refused<CachedAttentionConfig>(
        t.layer->config(),
        {
            {[](auto &c) { c.rotary_dimension = 18; },
             "rotary_dimension must be even and at most the head dimension 16, got 18"},
            {[](auto &c) { c.sliding_window = 0; }, "sliding_window must be positive, got 0"},
            {[](auto &c) { c.rope_base = 0.0; }, "rope_base must be positive, got 0.000000"},
            {[](auto &c) { c.rope_base = 1e4, c.head_dimension = 15, c.embedding_dimension = 60; },
             "RoPE needs an even head dimension (or a rotary_dimension), got 15"},
            {[](auto &c) { c.attention_scale = 1e-300; },
             "attention_scale must be a positive normal float, got 0.000000"},
            {[](auto &c) { c.qk_norm.emplace().eps = 0; }, "the QK-norm's eps must be positive, got 0.000000"},
            {[](auto &c) { c.names = CachedAttentionConfig::Names::HuggingFaceFusedQkv; },
             "a fused qkv_proj has no biases here (Phi-3 has none)"},
        },
        "cached_attention", [&](const CachedAttentionConfig &config) { t.with_config(config); });
}

// A context cache of another KV head count would pass the kernel (any count that divides H does)
// and group the heads wrongly.
TEST(CachedAttentionCross, AContextCacheOfAnotherShapeIsRefused) {
    TestLayer t({64, 4, 2, 16, true, std::nullopt});
    KVCache four_heads(1, 4, 16, 5);
    const Tensor kv = testing::random_tensor({1, 5, 4, 16}, 1);
    four_heads.append(kv.view(), kv.view());
    EXPECT_EQ(testing::error_message([&] {
                  t.layer->cross_attention(testing::random_tensor({1, 3, 64}, 2), ConditioningCache(four_heads));
              }),
              "cached_attention: context cache [Hkv=4, D=16] does not fit this layer's [Hkv=2, D=16]");
}

TEST(CachedAttentionMask, AMaskWithoutDataIsNamed) {
    TestLayer t({64, 4, 2, 16, true, std::nullopt});
    const MaskView no_data{nullptr, {1, 1, 3, 3}};
    EXPECT_EQ(testing::error_message([&] {
                  const Tensor x = testing::random_tensor({1, 3, 64}, 82);
                  t.layer->forward(x, &x, &x, &no_data);
              }),
              "cached_attention: mask [1, 1, 3, 3] has no data");
}

TEST(CachedAttentionCross, FullyMaskedRowOutputsTheBias) {
    TestLayer t({64, 4, 2, 16, true, std::nullopt});
    const Tensor x = testing::random_tensor({1, 3, 64}, 80), context = testing::random_tensor({1, 5, 64}, 81);
    std::vector<uint8_t> mask(15, 0);
    std::fill_n(mask.begin() + 5, 5, 1);  // query 1 sees nothing
    const MaskView view{mask.data(), {1, 1, 3, 5}};
    const Tensor y = t.layer->cross_attention(x, t.layer->conditioning_cache(context, context), &view);
    for (int64_t e = 0; e < 64; e++) EXPECT_EQ(y.data()[64 + e], t.ref.bo->data()[e]);
}

// ---------------------------------------------------------------- configuration

std::string config_error(const std::string &json) {
    try {
        CachedAttentionConfig::from(ConfigReader::parse(json, "config.json"));
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(CachedAttentionConfig, EachRuleNamesItsKey) {
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 0})").find("number_of_heads"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 2, "head_dimension": -1})").find("head_dimension"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 9, "number_of_heads": 2})").find("divisible"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 2, "attention_type": "grouped_query"})").find("number_of_key_value_heads"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 4, "attention_type": "grouped_query", "number_of_key_value_heads": 3})").find("(3)"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 4, "attention_type": "grouped_query", "number_of_key_value_heads": 0})").find("number_of_key_value_heads"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 4, "number_of_key_value_heads": 2})").find("multi_head"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 8, "number_of_heads": 2, "attention_type": "linear"})").find("'linear'"), std::string::npos);
    EXPECT_NE(config_error(R"({"embedding_dimension": 6, "number_of_heads": 2, "rope_base": 10000})").find("even head_dimension"), std::string::npos);
    EXPECT_EQ(config_error(R"({"embedding_dimension": 8, "number_of_heads": 2, "dropout": 0.1, "unknown": 1})"), "");
}

// ---------------------------------------------------------------- Hugging Face Llama-family layers

// The test layer's tensors under a Llama-family checkpoint's names and prefix; without the output
// bias when `qwen2_biases` (Qwen2 has biases on q, k and v only).
std::map<std::string, Tensor> hugging_face_tensors(const TestLayer &t, bool qwen2_biases) {
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
std::map<std::string, Tensor> layers_of(const TestLayer &seed, std::initializer_list<int> layers,
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
double prefill_and_decode_difference(const CachedAttention &a, const CachedAttention &b) {
    const Tensor prompt = testing::random_tensor({2, 5, 64}, 90);
    KVCache ca = a.make_cache(2, 8), cb = b.make_cache(2, 8);
    double worst = testing::relative_l2(a.self_attention(prompt, &ca), b.self_attention(prompt, &cb));
    for (uint32_t step = 0; step < 2; step++) {
        const Tensor x = testing::random_tensor({2, 1, 64}, 91 + step);
        worst = std::max(worst, testing::relative_l2(a.decode_step(x, ca), b.decode_step(x, cb)));
    }
    return worst;
}

TEST(CachedAttentionHuggingFace, ALlamaLayerIsTheSeedLayerUnderOtherNames) {
    TestLayer seed({64, 4, 2, 16, true, 500000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    const CachedAttention llama(testing::config_of({{"hidden_size", 64}, {"num_attention_heads", 4},
                                                    {"num_key_value_heads", 2}, {"rope_theta", 500000.0},
                                                    {"attention_bias", true}, {"rope_scaling", nullptr},
                                                    {"model_type", "llama"}, {"intermediate_size", 172}}),
                                Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    EXPECT_EQ(llama.config().names, CachedAttentionConfig::Names::HuggingFace);
    EXPECT_EQ(llama.config().kv_heads, 2);
    EXPECT_EQ(llama.config().head_dimension, 16);
    EXPECT_LE(prefill_and_decode_difference(llama, *seed.layer), 1e-6);
}

TEST(CachedAttentionHuggingFace, AQwen2LayerUsesTheBiasesItHas) {
    TestLayer seed({64, 4, 2, 16, true, 1e6});
    for (int64_t e = 0; e < 64; e++) seed.ref.bo->data()[e] = 0.0f;  // what a missing output bias means
    std::map<std::string, Tensor> seed_tensors{{"query_projection.weight", seed.ref.wq}, {"key_projection.weight", seed.ref.wk},
                                               {"value_projection.weight", seed.ref.wv}, {"output_projection.weight", seed.ref.wo},
                                               {"query_projection.bias", *seed.ref.bq}, {"key_projection.bias", *seed.ref.bk},
                                               {"value_projection.bias", *seed.ref.bv}, {"output_projection.bias", *seed.ref.bo}};
    testing::TempDir dir;
    write_safetensors(dir.file("seed.safetensors"), seed_tensors);
    write_safetensors(dir.file("qwen2.safetensors"), hugging_face_tensors(seed, true));
    CachedAttentionConfig seed_config = seed.layer->config();
    seed_config.rope_base = 1e6;
    const CachedAttention zero_output_bias(seed_config, Weights::open(dir.file("seed.safetensors")));
    // Qwen2's config.json has no attention_bias, and a sliding window it does not use.
    const CachedAttention qwen2(testing::config_of({{"model_type", "qwen2"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                    {"num_key_value_heads", 2}, {"rope_theta", 1e6},
                                                    {"sliding_window", 131072}, {"use_sliding_window", false}}),
                                Weights::open(dir.file("qwen2.safetensors"), "model.layers.0.self_attn."));
    EXPECT_LE(prefill_and_decode_difference(qwen2, zero_output_bias), 1e-6);
    // attention_bias true asks for all four.
    testing::expect_contains(testing::error_message([&] {
                        CachedAttention(testing::config_of({{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                            {"num_key_value_heads", 2}, {"attention_bias", true}}),
                                        Weights::open(dir.file("qwen2.safetensors"), "model.layers.0.self_attn."));
                    }),
                    "o_proj.bias");
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
TestMask test_mask(const std::vector<int32_t> &lengths, int64_t S, bool callers_own, const KeyRule &rule = {}) {
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
void check_sliding_window() {
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

TEST(CachedAttentionHuggingFace, ASlidingWindowHidesKeysPastIt) { check_sliding_window(); }

// The outputs [B, S, E] of x's tokens through one cache, in calls of the given numbers of tokens (a
// call of one token is a decode step).
Tensor outputs_of_calls(const CachedAttention &layer, const Tensor &x, const std::vector<int64_t> &calls) {
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
Tensor norm_weights(std::vector<int64_t> shape, uint32_t seed, float spread) {
    Tensor w = testing::random_tensor(std::move(shape), seed);
    for (int64_t i = 0; i < w.size(); i++) w.data()[i] = 1.0f + spread * w.data()[i];
    return w;
}

// The outputs [B, S, E] of x's first `prompt` tokens through self_attention into a cache, then of
// the rest one decode step at a time.
Tensor prompt_then_decode(const CachedAttention &layer, const Tensor &x, int64_t prompt) {
    std::vector<int64_t> calls{prompt};
    calls.resize(x.dim(1) - prompt + 1, 1);
    return outputs_of_calls(layer, x, calls);
}

// A layer that is not causal (an encoder's bidirectional attention), whole or within a window of
// `window` keys each way: `tokens` tokens attend both ways, against the float64 reference. It has
// no prefill/decode split, so a cache and a decode step are refused, the cache left as it was.
void check_bidirectional(std::optional<int64_t> window, int64_t tokens) {
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
TEST(CachedAttention, ALayerThatIsNotCausalSeesLaterKeys) { check_bidirectional(std::nullopt, 9); }
// Past 256 queries the windowed prompt takes several calls of the kernels.
TEST(CachedAttention, ABidirectionalWindowHidesKeysFartherThanItEitherWay) { check_bidirectional(40, 264); }

// Qwen3 norms each head of q and k, OLMo 2 all of a token's heads at once (RMSNorm, before RoPE):
// 4 tokens prefilled, 5 decoded, against the float64 reference of the 9 at once.
void check_qk_norm(const std::string &model_type) {
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
void check_per_head_layer_norms(bool in_head_modules) {
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
TEST(CachedAttentionHuggingFace, PerHeadLayerNormsOfQueriesAndKeys) {
    check_per_head_layer_norms(false);
    check_per_head_layer_norms(true);
}

// Phi-3: q, k and v stacked in qkv_proj, no biases, Mistral's sliding window (here wider than the
// test's 7 tokens, so every key is seen); the same layer as the seed's without biases.
TEST(CachedAttentionHuggingFace, APhi3LayerSplitsItsFusedProjection) {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    Tensor qkv({(4 + 2 * 2) * 16, 64});
    std::copy_n(seed.ref.wq.data(), 64 * 64, qkv.data());
    std::copy_n(seed.ref.wk.data(), 32 * 64, qkv.data() + 64 * 64);
    std::copy_n(seed.ref.wv.data(), 32 * 64, qkv.data() + 96 * 64);
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), {{"model.layers.0.self_attn.qkv_proj.weight", qkv},
                                                      {"model.layers.0.self_attn.o_proj.weight", seed.ref.wo}});
    const CachedAttention phi3(testing::config_of({{"model_type", "phi3"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                   {"num_key_value_heads", 2}, {"rope_theta", 10000.0},
                                                   {"sliding_window", 2047}, {"attention_bias", true}}),
                               Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    EXPECT_EQ(phi3.config().names, CachedAttentionConfig::Names::HuggingFaceFusedQkv);
    EXPECT_EQ(phi3.config().sliding_window.value_or(0), 2047);
    EXPECT_LE(prefill_and_decode_difference(phi3, *seed.layer), 1e-6);
    const Tensor x = testing::random_tensor({2, 7, 64}, 133);
    EXPECT_LE(testing::relative_l2(phi3.self_attention(x), reference::cached_attention(seed.ref, x, {}, {}, 0)), 1e-5);
}

TEST(CachedAttentionHuggingFace, Qwen3NormsEachHeadOfQueriesAndKeys) { check_qk_norm("qwen3"); }

// Gemma 3: every sixth layer full (RoPE of rope_theta), the others sliding (of
// rope_local_base_freq); its norms scale by 1 + w; scores by query_pre_attn_scalar^-1/2. Layers
// 0 and 5 of one checkpoint, their indices from the weights' prefixes, against the float64
// reference given what each should compute.
void check_gemma3_layers() {
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

TEST(CachedAttentionHuggingFace, Gemma3LayersRotateAndScaleAsTheirIndexSays) { check_gemma3_layers(); }
TEST(CachedAttentionHuggingFace, Olmo2NormsAllHeadsOfQueriesAndKeys) { check_qk_norm("olmo2"); }

// gpt-oss: layer 0 slides over 3 keys, layer 1 sees every key; both have biases and sinks. A
// prompt of 5 tokens, then 4 decode steps (past the window: the windowed decode path).
void check_gpt_oss_layers() {
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
TEST(CachedAttentionHuggingFace, GptOssLayersAddSinksAndAlternateWindows) { check_gpt_oss_layers(); }

// Gemma 2: layer 0 slides over 3 keys, layer 1 sees every key; both scale scores by
// query_pre_attn_scalar^-1/2 and soft-cap them, here at 0.8 so that capping bends most scores. A
// prompt of 5 tokens, then 4 decode steps (past the window: the windowed decode path).
void check_gemma2_layers() {
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
TEST(CachedAttentionHuggingFace, Gemma2LayersSoftCapScoresAndAlternateWindows) { check_gemma2_layers(); }

// Llama 4: layer 0 rotates pairs in place, RMS-normalises q and k without weights (after RoPE, as
// transformers does) and attends within chunks of 4 keys; layer 3 has no RoPE and scales its
// queries by position (floor_scale 3, attn_scale 0.5: 1.35 from position 2). Nine tokens through a
// prompt of 5 (past the first chunk) and 4 decode steps (from the third chunk on), and at once.
void check_llama4_layers() {
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
TEST(CachedAttentionHuggingFace, Llama4LayersAttendInChunksOrScaleTheirQueries) { check_llama4_layers(); }

// Ministral 3's queries scaled by position counting from 0 (Llama 4's count from 1), on a layer
// with RoPE: a prompt of 5 and 6 decode steps, the scale changing at positions 4 and 8.
void check_queries_scaled_from_position_0() {
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
TEST(CachedAttention, QueriesScaledByPositionCountFromTheirOffset) { check_queries_scaled_from_position_0(); }

// Llama 4's config: its class defaults, which layers rotate (no_rope_layers; an empty list, as some
// configs state, is the default) and attend in chunks (layer_types where stated), and its switches
// (attn_temperature_tuning, a number in Scout's first config; use_qk_norm, false in Maverick's).
TEST(CachedAttentionHuggingFace, Llama4ConfigsSayWhichLayersRotateAndChunk) {
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
    const auto layer = [](const nlohmann::json &config, int64_t index) {
        return CachedAttentionConfig::from(testing::config_of(config, "c"), index);
    };
    const auto layer_error = [&](const nlohmann::json &config, int64_t index) {
        return testing::error_message([&] { layer(config, index); });
    };
    const CachedAttentionConfig rope0 = layer(scout, 0), nope3 = layer(scout, 3);
    EXPECT_EQ(rope0.heads, 40);
    EXPECT_EQ(rope0.kv_heads, 8);
    EXPECT_EQ(rope0.head_dimension, 128);
    EXPECT_FALSE(rope0.bias || rope0.output_bias || rope0.sliding_window || rope0.query_temperature);
    EXPECT_EQ(rope0.rope_base.value_or(0), 500000.0);
    EXPECT_EQ(rope0.rope_scaling.type, RopeScaling::Type::Llama3);
    EXPECT_EQ(rope0.rope_layout, RopeLayout::Interleaved);
    EXPECT_EQ(rope0.attention_chunk.value_or(0), 8192);
    ASSERT_TRUE(rope0.qk_norm.has_value());
    EXPECT_FALSE(rope0.qk_norm->weighted);
    EXPECT_EQ(rope0.qk_norm->eps, 1e-5);
    EXPECT_FALSE(nope3.rope_base || nope3.attention_chunk || nope3.qk_norm);
    ASSERT_TRUE(nope3.query_temperature.has_value());
    EXPECT_EQ(nope3.query_temperature->floor_scale, 8192.0);
    EXPECT_EQ(nope3.query_temperature->scale, 0.1);
    EXPECT_FALSE(layer(with("attn_temperature_tuning", false), 3).query_temperature);
    EXPECT_TRUE(layer(with("attn_temperature_tuning", nullptr), 3).query_temperature);  // on by default
    EXPECT_FALSE(layer(with("use_qk_norm", false), 0).qk_norm);
    EXPECT_TRUE(layer(with("no_rope_layers", {1, 0}), 1).query_temperature);
    EXPECT_EQ(layer(with("layer_types", {"full_attention"}), 0).attention_chunk, std::nullopt);
    EXPECT_EQ(layer(with("attention_chunk_size", 16), 2).attention_chunk.value_or(0), 16);
    // transformers norms q and k after RoPE, which takes out YaRN's amplitude: the table carries none.
    const nlohmann::json yarn{{"rope_type", "yarn"}, {"factor", 8.0}, {"original_max_position_embeddings", 8192}};
    nlohmann::json yarn_scout = with("rope_scaling", yarn);
    EXPECT_EQ(rope_amplitude(layer(yarn_scout, 0).rope_scaling), 1.0);
    yarn_scout["use_qk_norm"] = false;  // without the norm, the amplitude stays
    EXPECT_GT(rope_amplitude(layer(yarn_scout, 0).rope_scaling), 1.0);
    nlohmann::json null_chunk = scout;
    null_chunk["attention_chunk_size"] = nullptr;
    EXPECT_EQ(layer_error(null_chunk, 0), "c: a chunked layer needs attention_chunk_size, got null");
    EXPECT_EQ(layer_error(with("layer_types", {"sliding_attention"}), 0),
              "c: layer_types[0] 'sliding_attention' is not supported for llama4_text (chunked_attention, full_attention)");
    EXPECT_EQ(layer_error(with("attn_temperature_tuning", "yes"), 3),
              "c: key 'attn_temperature_tuning' must be true, false or a number, got \"yes\"");
    EXPECT_EQ(layer_error(with("floor_scale", 0), 3), "c: floor_scale must be positive, got 0.000000");
    // SmolLM3 keeps reading an empty no_rope_layers as a list of no layers.
    EXPECT_EQ(layer_error({{"model_type", "smollm3"}, {"hidden_size", 2048}, {"no_rope_layers", nlohmann::json::array()}}, 0),
              "c: no_rope_layers lists 0 layers, not layer 0");
    // The multimodal config, through its text_config.
    EXPECT_EQ(layer({{"model_type", "llama4"}, {"text_config", scout}}, 0).attention_chunk.value_or(0), 8192);
}

// `out` [B, S, E] of x against the reference turning the first `rotary_dim` dims of each head, and
// unlike the reference turning whole heads (so the check can fail).
void expect_partial_rope(const Tensor &out, reference::CachedAttentionWeights ref, const Tensor &x, int64_t rotary_dim) {
    ref.rotary_dim = rotary_dim;
    EXPECT_LE(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-5);
    ref.rotary_dim = 0;
    EXPECT_GT(testing::relative_l2(out, reference::cached_attention(ref, x, {}, {}, 0)), 1e-2);
}

// A GLM-4 layer (its q, k and v biases; none on o) through a prompt of 5 and 4 decode steps: the
// first 8 of each head's 16 dims turn, their pairs in place.
void check_glm_layer() {
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
TEST(CachedAttentionHuggingFace, AGlmLayerTurnsHalfOfEachHeadInPlace) { check_glm_layer(); }

// A GPT-NeoX (Pythia) layer through a prompt of 5 and 4 decode steps: each head's q, k and v rows in
// turn in query_key_value (biased), the output `dense`; a quarter of each head (4 of 16 dims)
// rotated, as rotary_pct and rotary_emb_base say.
// The seed's q, k and v weights (or biases, of a row each) fused as query_key_value: per KV head,
// its query heads' rows, then its key's and value's (GPT-NeoX: a group per head; Falcon).
Tensor fused_by_group(const Tensor &q, const Tensor &k, const Tensor &v, int64_t H, int64_t Hkv, int64_t D) {
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
CachedAttention fused_qkv_layer(const TestLayer &seed, const nlohmann::json &config, const std::string &p,
                                const testing::TempDir &dir) {
    const reference::CachedAttentionWeights &r = seed.ref;
    write_safetensors(dir.file("model.safetensors"),
                      {{p + "query_key_value.weight", fused_by_group(r.wq, r.wk, r.wv, r.H, r.Hkv, r.D)},
                       {p + "query_key_value.bias", fused_by_group(*r.bq, *r.bk, *r.bv, r.H, r.Hkv, r.D)},
                       {p + "dense.weight", r.wo}, {p + "dense.bias", *r.bo}});
    return CachedAttention(testing::config_of(config), Weights::open(dir.file("model.safetensors"), p));
}

void check_gpt_neox_layer() {
    TestLayer seed({64, 4, 4, 16, true, 10000.0});
    testing::TempDir dir;
    const CachedAttention neox = fused_qkv_layer(seed, {{"model_type", "gpt_neox"}, {"hidden_size", 64}, {"num_attention_heads", 4},
                                                        {"rotary_pct", 0.25}, {"rotary_emb_base", 10000}},
                                                 "gpt_neox.layers.0.attention.", dir);
    const Tensor x = testing::random_tensor({2, 9, 64}, 155);
    expect_partial_rope(prompt_then_decode(neox, x, 5), seed.ref, x, 4);
}
TEST(CachedAttentionHuggingFace, AGptNeoXLayerSplitsEachHeadsFusedRows) { check_gpt_neox_layer(); }

// Falcon's three layouts of query_key_value, each through a prompt of 5 and 4 decode steps: one
// KV head (multi_query, Falcon-7B), KV heads of 2 query heads each (new_decoder_architecture,
// Falcon-40B), and q, k and v per head (neither).
void check_falcon_layers() {
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
TEST(CachedAttentionHuggingFace, FalconLayersSplitTheirFusedRowsByKvHead) { check_falcon_layers(); }

// Falcon's keys: one KV head unless new_decoder_architecture or multi_query false; num_kv_heads
// then (the heads where missing); head_dim and num_key_value_heads unread; ALiBi refused.
TEST(CachedAttentionHuggingFace, FalconConfigsReadTheirOwnKeys) {
    const auto read = [](const std::string &json) { return CachedAttentionConfig::from(ConfigReader::parse(json, "config.json")); };
    const std::string falcon = R"({"model_type": "falcon", "hidden_size": 4544, "num_kv_heads": 71, "head_dim": 32,
        "num_key_value_heads": 71)";
    const CachedAttentionConfig seven_b = read(falcon + "}");
    EXPECT_EQ(std::tuple(seven_b.heads, seven_b.kv_heads, seven_b.head_dimension), std::tuple(71, 1, 64));
    EXPECT_EQ(seven_b.names, CachedAttentionConfig::Names::GroupedQueryKeyValue);
    EXPECT_FALSE(seven_b.bias || seven_b.output_bias);
    EXPECT_EQ(seven_b.rope_base.value_or(0), 10000.0);
    const CachedAttentionConfig forty_b = read(R"({"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128,
        "num_kv_heads": 8, "new_decoder_architecture": true, "bias": true})");
    EXPECT_EQ(std::tuple(forty_b.heads, forty_b.kv_heads, forty_b.head_dimension), std::tuple(128, 8, 64));
    EXPECT_TRUE(forty_b.bias && forty_b.output_bias);
    EXPECT_EQ(read(falcon + R"(, "multi_query": false})").kv_heads, 71);
    EXPECT_EQ(config_error(R"({"model_type": "falcon", "hidden_size": 4544, "num_kv_heads": 1, "multi_query": false})"),
              "config.json: num_kv_heads (1) must equal num_attention_heads (71) without multi_query or "
              "new_decoder_architecture (q, k and v per head)");
    EXPECT_EQ(config_error(falcon + R"(, "alibi": true})"),
              "config.json: alibi is not supported for falcon (ALiBi position biases, not RoPE)");
}

// out (x through a layer, from an empty cache) differs from the reference after each change to
// its weights: the check against the unchanged reference can fail.
void expect_each_change_differs(const Tensor &out, const reference::CachedAttentionWeights &ref, const Tensor &x,
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
void check_glm4_moe_layer() {
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
TEST(CachedAttentionHuggingFace, AGlm45LayerTurnsHalfOfEachHeadAsHalvesAndNormsQK) { check_glm4_moe_layer(); }

// Hunyuan dense: q and k RMS-normed per head after RoPE (weights [D], query_layernorm and
// key_layernorm), the four biased, and a "dynamic" RoPE with alpha 1000: within
// max_position_embeddings its base is theta alpha^(D / (D - 2)); a call past it turns by dynamic
// NTK's base from theta, without alpha, as transformers' dynamic update does.
void check_hunyuan_layer() {
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
TEST(CachedAttentionHuggingFace, AHunyuanLayerNormsRotatedQKWithAnAlphaRope) { check_hunyuan_layer(); }

// Hunyuan's keys and defaults; alpha is Hunyuan's own (transformers' other dynamic RoPEs ignore it).
TEST(CachedAttentionHuggingFace, HunyuanConfigsReadTheirOwnKeys) {
    const auto read = [](const std::string &json) { return CachedAttentionConfig::from(ConfigReader::parse(json, "config.json")); };
    const std::string hunyuan = R"({"model_type": "hunyuan_v1_dense", "hidden_size": 4096, "num_key_value_heads": 8,
        "head_dim": 128, "max_position_embeddings": 32768)";
    const CachedAttentionConfig tencent = read(hunyuan + R"(, "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0,
        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, "use_qk_norm": true})");
    EXPECT_EQ(std::tuple(tencent.heads, tencent.kv_heads, tencent.head_dimension), std::tuple(32, 8, 128));
    EXPECT_FALSE(tencent.bias || tencent.output_bias);
    ASSERT_TRUE(tencent.qk_norm.has_value());
    EXPECT_TRUE(tencent.qk_norm->after_rope);
    EXPECT_EQ(tencent.qk_norm->eps, 1e-5);
    EXPECT_EQ(tencent.qk_norm->query_module, "query_layernorm");
    EXPECT_EQ(tencent.rope_scaling.type, RopeScaling::Type::Dynamic);
    EXPECT_EQ(tencent.rope_scaling.alpha, 1000.0);
    EXPECT_EQ(tencent.rope_scaling.original_context, 32768.0);
    EXPECT_TRUE(read(hunyuan + R"(, "use_qk_norm": false})").qk_norm.has_value());  // transformers reads no switch
    EXPECT_EQ(config_error(hunyuan + R"(, "rope_scaling": {"type": "dynamic", "alpha": -1, "factor": 1.0}})"),
              "config.json (rope_scaling): alpha must be positive, got -1.000000");
    const CachedAttentionConfig llama = read(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
        "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 2.0}})");
    EXPECT_EQ(llama.rope_scaling.alpha, 1.0);
    EXPECT_FALSE(llama.qk_norm.has_value());
}

// OLMo 1 (OLMo-7B-0424): q, k and v clamped to clip_qkv as projected, here 0.5 so that most of
// them bend; a prompt of 5 and 4 decode steps.
void check_olmo_clip() {
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
TEST(CachedAttentionHuggingFace, AnOlmoLayerClampsQKAndV) { check_olmo_clip(); }

// GLM-4 (glm, glm4): half of each head rotates, its pairs in place; q, k and v biased unless
// attention_bias says otherwise, o never; 2 KV heads and head_dim 128 by default.
TEST(CachedAttentionHuggingFace, GlmConfigsRotateHalfOfEachHeadInPlace) {
    for (const char *type : {"glm", "glm4"}) {
        const std::string glm = R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 4096, "num_attention_heads": 32)";
        const CachedAttentionConfig c = CachedAttentionConfig::from(ConfigReader::parse(glm + "}", "c"));
        EXPECT_EQ(c.kv_heads, 2) << type;
        EXPECT_EQ(c.head_dimension, 128) << type;
        EXPECT_EQ(c.rotary_dimension, 64) << type;
        EXPECT_EQ(c.rope_layout, RopeLayout::Interleaved) << type;
        EXPECT_TRUE(c.bias && !c.output_bias) << type;
        const CachedAttentionConfig whole =
            CachedAttentionConfig::from(ConfigReader::parse(glm + R"(, "partial_rotary_factor": 1.0, "attention_bias": false})", "c"));
        EXPECT_EQ(whole.rotary_dimension, 0) << type;
        EXPECT_FALSE(whole.bias || whole.output_bias) << type;
    }
}

// GLM-4.5 (glm4_moe): half of each head rotates, as halves; q, k and v biased only where
// attention_bias says, o never; q and k normed only where use_qk_norm says (eps rms_norm_eps,
// default 1e-5); the class's 96 heads and 8 KV heads where a config leaves them out.
TEST(CachedAttentionHuggingFace, Glm45ConfigsRotateHalfOfEachHeadAsHalves) {
    const std::string glm = R"({"model_type": "glm4_moe", "hidden_size": 5120, "head_dim": 128)";
    const CachedAttentionConfig plain = CachedAttentionConfig::from(ConfigReader::parse(glm + "}", "c"));
    EXPECT_EQ(plain.heads, 96);
    EXPECT_EQ(plain.kv_heads, 8);
    EXPECT_EQ(plain.rotary_dimension, 64);
    EXPECT_EQ(plain.rope_layout, RopeLayout::NeoX);
    EXPECT_FALSE(plain.bias || plain.output_bias || plain.qk_norm);
    // GLM-4.5's own config.json keys.
    const CachedAttentionConfig released = CachedAttentionConfig::from(ConfigReader::parse(
        glm + R"(, "num_attention_heads": 96, "num_key_value_heads": 8, "partial_rotary_factor": 0.5,
        "attention_bias": true, "use_qk_norm": true, "rms_norm_eps": 1e-05, "rope_theta": 1000000})", "c"));
    EXPECT_TRUE(released.bias && !released.output_bias);
    ASSERT_TRUE(released.qk_norm.has_value());
    EXPECT_EQ(released.qk_norm->span, CachedAttentionConfig::QkNorm::Span::EachHead);
    EXPECT_EQ(released.qk_norm->eps, 1e-5);
    EXPECT_EQ(released.rope_base.value_or(0), 1e6);
}

// StarCoder2, OLMoE, Nemotron, Apertus, Arcee, Helium, EXAONE 4, ERNIE 4.5, Phi-2, GPT-NeoX,
// Ministral 3 and Seed-OSS: Llama's attention with each
// one's changes, read from their keys with their class defaults; what they do that this layer
// does not (OLMoE's clamp after the norm, a scaling Nemotron drops) refused by key.
TEST(CachedAttentionHuggingFace, LlamaLookAlikesReadTheirOwnKeys) {
    const auto read = [](const std::string &json) { return CachedAttentionConfig::from(ConfigReader::parse(json, "c")); };
    const auto error = [](const std::string &json) {
        return testing::error_message([&] { CachedAttentionConfig::from(ConfigReader::parse(json, "c")); });
    };
    const std::string starcoder2 = R"({"model_type": "starcoder2", "hidden_size": 3072)";
    const CachedAttentionConfig coder = read(starcoder2 + R"(, "sliding_window": 4096})");
    EXPECT_EQ(std::tuple(coder.heads, coder.kv_heads, coder.head_dimension), std::tuple(24, 2, 128));
    EXPECT_TRUE(coder.bias && coder.output_bias);
    EXPECT_EQ(coder.sliding_window.value_or(0), 4096);
    EXPECT_FALSE(read(starcoder2 + R"(, "use_bias": false})").bias || read(starcoder2 + "}").sliding_window);

    const std::string olmoe = R"({"model_type": "olmoe", "hidden_size": 2048, "num_attention_heads": 16)";
    const CachedAttentionConfig moe = read(olmoe + R"(, "clip_qkv": null})");
    ASSERT_TRUE(moe.qk_norm.has_value());
    EXPECT_EQ(moe.qk_norm->span, CachedAttentionConfig::QkNorm::Span::AllHeads);
    EXPECT_EQ(moe.qk_norm->eps, 1e-5);
    EXPECT_EQ(error(olmoe + R"(, "clip_qkv": 8.0})"), "c: clip_qkv is not supported for olmoe (it clamps q, k and v after "
                                                    "the QK-norm; this layer clamps them as projected)");

    const std::string nemotron = R"({"model_type": "nemotron", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8)";
    EXPECT_EQ(read(nemotron + "}").rotary_dimension, 64);
    EXPECT_EQ(read(nemotron + R"(, "rope_scaling": null})").rope_scaling.type, RopeScaling::Type::None);
    EXPECT_EQ(error(nemotron + R"(, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})"),
              "c: a RoPE scaling is not supported for nemotron (transformers turns its heads by an unscaled RoPE whatever "
              "the config says)");

    const std::string apertus = R"({"model_type": "apertus", "hidden_size": 4096, "num_attention_heads": 32)";
    EXPECT_EQ(error(apertus + "}"), "c: apertus needs its RoPE scaling stated in rope_scaling or rope_parameters "
                                    "(transformers takes a missing one as llama3 x8, and 4 a null one as none)");
    const CachedAttentionConfig swiss = read(apertus + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})");
    EXPECT_EQ(swiss.rope_base.value_or(0), 12e6);
    EXPECT_EQ(swiss.rope_scaling.type, RopeScaling::Type::Llama3);
    ASSERT_TRUE(swiss.qk_norm.has_value());
    EXPECT_EQ(swiss.qk_norm->span, CachedAttentionConfig::QkNorm::Span::EachHead);

    const std::string arcee = R"({"model_type": "arcee", "hidden_size": 2560, "num_attention_heads": 20)";
    EXPECT_FALSE(read(arcee + "}").bias || read(arcee + "}").qk_norm);
    EXPECT_TRUE(read(arcee + R"(, "attention_bias": true})").output_bias);

    const std::string helium = R"({"model_type": "helium", "hidden_size": 2560)";
    const CachedAttentionConfig kyutai = read(helium + R"(, "attention_bias": true})");
    EXPECT_EQ(std::tuple(kyutai.heads, kyutai.kv_heads, kyutai.head_dimension), std::tuple(20, 20, 128));
    EXPECT_EQ(kyutai.rope_layout, RopeLayout::Interleaved);
    EXPECT_EQ(kyutai.rope_base.value_or(0), 100000.0);
    EXPECT_TRUE(kyutai.bias && !kyutai.output_bias);

    const std::string exaone4 = R"({"model_type": "exaone4", "hidden_size": 5120, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 8)";
    const auto layer = [](const std::string &json, int64_t index) {
        return CachedAttentionConfig::from(ConfigReader::parse(json, "c"), index);
    };
    const CachedAttentionConfig local = layer(exaone4 + "}", 2), global = layer(exaone4 + "}", 3);
    EXPECT_EQ(local.sliding_window.value_or(0), 4096);
    EXPECT_TRUE(local.rope_base.has_value());
    ASSERT_TRUE(local.qk_norm.has_value());
    EXPECT_EQ(local.qk_norm->eps, 1e-5);
    EXPECT_FALSE(global.sliding_window || global.rope_base);  // full layers have no RoPE while others slide
    for (const int64_t index : {2, 3}) {  // a null window: every layer full, every layer rotating
        const CachedAttentionConfig windowless = layer(exaone4 + R"(, "sliding_window": null})", index);
        EXPECT_FALSE(windowless.sliding_window.has_value()) << index;
        EXPECT_TRUE(windowless.rope_base.has_value()) << index;
    }
    // ... so such a config needs no layer index.
    const CachedAttentionConfig any_layer = read(exaone4 + R"(, "sliding_window": null})");
    EXPECT_FALSE(any_layer.sliding_window.has_value());
    EXPECT_TRUE(any_layer.rope_base.has_value());
    EXPECT_TRUE(layer(exaone4 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 1).sliding_window);

    const std::string ernie = R"({"model_type": "ernie4_5", "hidden_size": 1024)";
    const CachedAttentionConfig baidu = read(ernie + "}");
    EXPECT_EQ(std::tuple(baidu.heads, baidu.kv_heads, baidu.head_dimension), std::tuple(16, 2, 128));
    EXPECT_EQ(baidu.rope_layout, RopeLayout::Interleaved);
    EXPECT_EQ(baidu.rope_base.value_or(0), 500000.0);
    EXPECT_FALSE(baidu.bias || baidu.output_bias);
    EXPECT_TRUE(read(ernie + R"(, "use_bias": true})").output_bias);

    // Ministral 3 (in a mistral3 config's text_config): YaRN, its queries scaled by position from 0.
    const nlohmann::json yarn{{"type", "yarn"}, {"rope_theta", 1e6}, {"factor", 16.0},
                              {"original_max_position_embeddings", 16384}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                              {"mscale", 1.0}, {"mscale_all_dim", 1.0}, {"llama_4_scaling_beta", 0.1}};
    nlohmann::json ministral{{"model_type", "ministral3"}, {"hidden_size", 4096}, {"rope_parameters", yarn}};
    const auto text_of = [](const nlohmann::json &text) {
        return CachedAttentionConfig::from(testing::config_of({{"model_type", "mistral3"}, {"text_config", text}}, "c"));
    };
    const CachedAttentionConfig mistral = text_of(ministral);
    EXPECT_EQ(std::tuple(mistral.heads, mistral.kv_heads, mistral.head_dimension), std::tuple(32, 8, 128));
    EXPECT_EQ(mistral.rope_scaling.type, RopeScaling::Type::Yarn);
    EXPECT_EQ(rope_amplitude(mistral.rope_scaling), 1.0);
    ASSERT_TRUE(mistral.query_temperature.has_value());
    EXPECT_EQ(std::tuple(mistral.query_temperature->floor_scale, mistral.query_temperature->scale,
                         mistral.query_temperature->position_offset),
              std::tuple(16384.0, 0.1, int64_t{0}));
    EXPECT_FALSE(mistral.bias || mistral.output_bias || mistral.sliding_window);
    ministral["rope_parameters"]["llama_4_scaling_beta"] = 0.0;
    EXPECT_FALSE(text_of(ministral).query_temperature.has_value());
    ministral["rope_parameters"].erase("llama_4_scaling_beta");
    EXPECT_EQ(testing::error_message([&] { text_of(ministral); }),
              "c (text_config.rope_parameters): llama_4_scaling_beta is required (transformers fails without it; 0 for none)");
    ministral.erase("rope_parameters");
    EXPECT_EQ(testing::error_message([&] { text_of(ministral); }),
              "c (text_config): ministral3 needs its RoPE scaling stated in rope_scaling or rope_parameters (transformers "
              "takes a missing or null one as YaRN x16 with its query scaling)");

    // Phi-2: the four always biased, the output projection `dense`, half of each head rotated.
    const std::string phi = R"({"model_type": "phi", "hidden_size": 2560)";
    const CachedAttentionConfig phi2 = read(phi + "}");
    EXPECT_EQ(std::tuple(phi2.heads, phi2.kv_heads, phi2.head_dimension), std::tuple(32, 32, 80));
    EXPECT_EQ(phi2.names, CachedAttentionConfig::Names::HuggingFaceDenseOutput);
    EXPECT_EQ(phi2.rotary_dimension, 40);
    EXPECT_TRUE(phi2.bias && phi2.output_bias);
    EXPECT_EQ(error(phi + R"(, "qk_layernorm": true})"),
              "c: qk_layernorm is not supported for phi (a LayerNorm of q and k with a bias)");

    // GPT-NeoX: a quarter of each head rotated, by rotary_pct and rotary_emb_base (transformers 4's
    // names) where stated; the four biased by default; a key and value head per query head.
    const std::string neox = R"({"model_type": "gpt_neox", "hidden_size": 6144)";
    const CachedAttentionConfig pythia = read(neox + R"(, "num_key_value_heads": 8})");
    EXPECT_EQ(std::tuple(pythia.heads, pythia.kv_heads, pythia.head_dimension), std::tuple(64, 64, 96));
    EXPECT_EQ(pythia.names, CachedAttentionConfig::Names::GroupedQueryKeyValue);
    EXPECT_EQ(pythia.rotary_dimension, 24);
    EXPECT_EQ(pythia.rope_base.value_or(0), 10000.0);
    EXPECT_TRUE(pythia.bias && pythia.output_bias);
    const CachedAttentionConfig stated = read(neox + R"(, "rotary_pct": 0.5, "rotary_emb_base": 500, "attention_bias": false})");
    EXPECT_EQ(stated.rotary_dimension, 48);
    EXPECT_EQ(stated.rope_base.value_or(0), 500.0);
    EXPECT_FALSE(stated.bias || stated.output_bias);
    // transformers reads rotary_emb_base and rotary_pct over rope_theta and partial_rotary_factor,
    // and no head_dim.
    const CachedAttentionConfig both = read(neox + R"(, "rotary_pct": 0.5, "partial_rotary_factor": 1.0,
        "rotary_emb_base": 500, "rope_theta": 10000, "head_dim": 64})");
    EXPECT_EQ(std::tuple(both.rotary_dimension, both.rope_base.value_or(0), both.head_dimension), std::tuple(48, 500.0, 96));
    // A null bias switch is refused: transformers' Linear(bias=None) has none, this reader's default one.
    EXPECT_EQ(error(neox + R"(, "attention_bias": null})"), "c: attention_bias must be true or false, got null");

    const std::string seed_oss = R"({"model_type": "seed_oss", "hidden_size": 5120)";
    const CachedAttentionConfig seed = read(seed_oss + "}");
    EXPECT_EQ(std::tuple(seed.heads, seed.kv_heads, seed.head_dimension), std::tuple(80, 8, 128));
    EXPECT_TRUE(seed.bias && !seed.output_bias);
    EXPECT_TRUE(read(seed_oss + R"(, "attention_out_bias": true})").output_bias);
    EXPECT_FALSE(read(seed_oss + R"(, "attention_bias": false})").bias);
}

// StableLM: a quarter of each head rotates (as halves); q, k and v biased as use_qkv_bias says, o
// never; qk_layernorm's per-head LayerNorms read from a module per head.
TEST(CachedAttentionHuggingFace, StableLmConfigsRotateAQuarterOfEachHead) {
    const std::string stablelm = R"({"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32)";
    const CachedAttentionConfig c = CachedAttentionConfig::from(ConfigReader::parse(stablelm + "}", "c"));
    EXPECT_EQ(c.kv_heads, 32);
    EXPECT_EQ(c.head_dimension, 64);
    EXPECT_EQ(c.rotary_dimension, 16);
    EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
    EXPECT_FALSE(c.bias || c.output_bias || c.qk_norm);
    const CachedAttentionConfig stablelm2 = CachedAttentionConfig::from(
        ConfigReader::parse(stablelm + R"(, "use_qkv_bias": true, "qk_layernorm": true, "layer_norm_eps": 1e-6})", "c"));
    EXPECT_TRUE(stablelm2.bias && !stablelm2.output_bias);
    ASSERT_TRUE(stablelm2.qk_norm.has_value());
    EXPECT_TRUE(stablelm2.qk_norm->centred && stablelm2.qk_norm->weights_per_head && stablelm2.qk_norm->weights_in_head_modules);
    EXPECT_EQ(stablelm2.qk_norm->eps, 1e-6);
}

// OLMo 3: OLMo 2's norms; three layers of four slide (4096 keys) with an unscaled RoPE, the fourth
// sees all with rope_scaling; rope_theta must be stated (transformers' default has changed).
TEST(CachedAttentionHuggingFace, Olmo3ConfigsSlideThreeLayersOfFour) {
    const auto layer = [](const std::string &json, int64_t index) {
        return CachedAttentionConfig::from(ConfigReader::parse("{" + json + "}", "c"), index);
    };
    const std::string olmo3 = R"("model_type": "olmo3", "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192})";
    const CachedAttentionConfig sliding = layer(olmo3, 2), full = layer(olmo3, 3);
    EXPECT_EQ(sliding.sliding_window.value_or(0), 4096);
    EXPECT_FALSE(full.sliding_window.has_value());
    EXPECT_EQ(sliding.rope_base.value_or(0), 500000.0);
    EXPECT_EQ(sliding.rope_scaling.type, RopeScaling::Type::None);
    EXPECT_EQ(full.rope_scaling.type, RopeScaling::Type::Yarn);
    for (const CachedAttentionConfig &c : {sliding, full}) {
        ASSERT_TRUE(c.qk_norm.has_value());
        EXPECT_EQ(c.qk_norm->span, CachedAttentionConfig::QkNorm::Span::AllHeads);
        EXPECT_EQ(c.qk_norm->eps, 1e-5);
    }
    EXPECT_FALSE(layer(olmo3 + R"(, "layer_types": ["full_attention"])", 0).sliding_window.has_value());
    EXPECT_EQ(testing::error_message([&] { layer(R"("model_type": "olmo3", "hidden_size": 64, "num_attention_heads": 4)", 0); }),
              "c: olmo3 needs its rope_theta stated (transformers' default for it has changed)");
}

// The layer's own checks of chunks and temperature, and a mask of the caller's own within the chunks.
TEST(CachedAttentionHuggingFace, ChunksAndTemperatureAreChecked) {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    CachedAttentionConfig config = seed.layer->config();
    config.names = CachedAttentionConfig::Names::HuggingFace;
    const auto build_error = [&](const CachedAttentionConfig &c) {
        return testing::error_message([&] { CachedAttention(c, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn.")); });
    };
    CachedAttentionConfig chunked = config;
    chunked.attention_chunk = 0;
    EXPECT_EQ(build_error(chunked), "cached_attention: attention_chunk must be positive, got 0");
    chunked.attention_chunk = 4;
    chunked.sliding_window = 8;
    EXPECT_EQ(build_error(chunked),
              "cached_attention: a layer slides (sliding_window) or attends in chunks (attention_chunk), not both");
    CachedAttentionConfig warm = config;
    warm.query_temperature = CachedAttentionConfig::QueryTemperature{0.0, 0.1};
    EXPECT_EQ(build_error(warm), "cached_attention: the query temperature's floor_scale must be positive, got 0.000000");
    warm.query_temperature = CachedAttentionConfig::QueryTemperature{8.0, -1.0};
    EXPECT_EQ(build_error(warm), "cached_attention: the query temperature's scale must be 0 or positive, got -1.000000");

    CachedAttentionConfig both_ways = config;
    both_ways.attention_chunk = 4;
    both_ways.causal = false;
    EXPECT_EQ(build_error(both_ways), "cached_attention: a layer that attends in chunks (attention_chunk) is causal");

    // A mask of the caller's own hides keys within the chunks too: sequences of 1 and 3 tokens, then
    // 5 crossing into the second chunk, against the whole layer given the chunks' rule and that
    // mask at once.
    chunked.sliding_window.reset();
    const CachedAttention layer(chunked, Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    KVCache cache = layer.make_cache(2, 8), whole = seed.layer->make_cache(2, 8);
    const Tensor prompt = testing::random_tensor({2, 3, 64}, 150), more = testing::random_tensor({2, 5, 64}, 151);
    for (auto [attention, kv] : {std::pair{&layer, &cache}, {&*seed.layer, &whole}}) {
        attention->self_attention(prompt, kv);
        kv->truncate_to(1, 0);
    }
    const KeyRule other_chunk = [](int64_t p, int64_t j) { return j / 4 != p / 4; };
    const TestMask own = test_mask(cache.lengths(), 5, true), both = test_mask(cache.lengths(), 5, true, other_chunk);
    const TestMask chunks_only = test_mask(cache.lengths(), 5, false, other_chunk);
    const MaskView own_view = own.view(), both_view = both.view(), chunks_view = chunks_only.view();
    KVCache spare = whole;  // for the chunks alone
    const Tensor out = layer.self_attention(more, &cache, &own_view);
    EXPECT_LE(testing::relative_l2(out, seed.layer->self_attention(more, &whole, &both_view)), 1e-6);
    EXPECT_GT(testing::relative_l2(out, seed.layer->self_attention(more, &spare, &chunks_view)), 1e-2);
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({6, 8}));
}

// The scale and the cap reach the kernels as floats: a value that would round to 0 (a cap the
// kernels would read as none) or to inf is refused when the layer is built.
TEST(CachedAttentionHuggingFace, ScaleAndCapMustSurviveTheCastToFloat) {
    TestLayer seed({64, 4, 2, 16, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("model.safetensors"), hugging_face_tensors(seed, false));
    const auto layer = [&](const std::string &config) {
        CachedAttention(ConfigReader::parse(config, "config.json"),
                        Weights::open(dir.file("model.safetensors"), "model.layers.0.self_attn."));
    };
    const auto build = [&](const std::string &config) { return testing::error_message([&] { layer(config); }); };
    const std::string granite = R"({"model_type": "granite", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, )";
    testing::expect_contains(build(granite + R"("attention_multiplier": 1e39})"), "attention_scale must be a positive normal float");
    EXPECT_NO_THROW(layer(granite + R"("attention_multiplier": 0.25})"));
    const std::string gemma2 = R"({"model_type": "gemma2", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                                   "head_dim": 16, "num_hidden_layers": 1, )";
    testing::expect_contains(build(gemma2 + R"("attn_logit_softcapping": 1e-50})"), "score_softcap must be a positive normal float");
    testing::expect_contains(build(gemma2 + R"("attn_logit_softcapping": 1e39})"), "score_softcap must be a positive normal float");
    EXPECT_NO_THROW(layer(gemma2 + R"("attn_logit_softcapping": 30})"));
}

// On a GPU the windowed prefill reads crops of the resident cache (device crops, or copies where
// OpenCL cannot crop at that offset).
class CachedOnGpu : public testing::OnEachGpu {};
TEST_P(CachedOnGpu, ASlidingWindowHidesKeysPastIt) {
    const testing::OnDevice on(GetParam());
    check_sliding_window();
}
TEST_P(CachedOnGpu, QkNormMatchesTheReference) {
    const testing::OnDevice on(GetParam());
    check_qk_norm("qwen3");
    check_qk_norm("olmo2");
    check_gemma3_layers();
    check_per_head_layer_norms(false);
    check_per_head_layer_norms(true);
}
TEST_P(CachedOnGpu, GptOssSinksMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_gpt_oss_layers();
}
TEST_P(CachedOnGpu, Gemma2SoftCappingMatchesTheReference) {
    const testing::OnDevice on(GetParam());
    check_gemma2_layers();
}
TEST_P(CachedOnGpu, Llama4ChunksAndTemperatureMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_llama4_layers();
}
TEST_P(CachedOnGpu, GlmPartialPairsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_glm_layer();
}
TEST_P(CachedOnGpu, Glm45HalvesAndNormsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_glm4_moe_layer();
}
TEST_P(CachedOnGpu, BidirectionalLayersMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_bidirectional(std::nullopt, 9);
    check_bidirectional(40, 264);
}
TEST_P(CachedOnGpu, QueriesScaledFromPositionZeroMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_queries_scaled_from_position_0();
}
TEST_P(CachedOnGpu, FalconFusedGroupsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_falcon_layers();
}
TEST_P(CachedOnGpu, GptNeoXFusedHeadsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_gpt_neox_layer();
}
TEST_P(CachedOnGpu, HunyuanNormsAfterRopeMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_hunyuan_layer();
}
TEST_P(CachedOnGpu, OlmoClampsMatchTheReference) {
    const testing::OnDevice on(GetParam());
    check_olmo_clip();
}
HATTN_INSTANTIATE_ON_EACH_GPU(CachedOnGpu);

// docs/models.md lists every model type the reader takes, and no other: the types an unknown
// one's refusal names (skipped where the sources are not at hand, as on a device).
TEST(CachedAttentionHuggingFace, TheModelsPageListsEveryModelType) {
    std::ifstream page(std::string(HATTN_SOURCE_DIR) + "/docs/models.md");
    if (!page) GTEST_SKIP() << "no docs/models.md under " << HATTN_SOURCE_DIR;
    std::set<std::string> listed;
    for (std::string line; std::getline(page, line);) {
        if (line.rfind("| `", 0) != 0) continue;
        const std::string first = line.substr(2, line.find_first_of("(|", 2) - 2);  // the row's names
        for (size_t open = first.find('`'); open != std::string::npos;) {
            const size_t close = first.find('`', open + 1);
            listed.insert(first.substr(open + 1, close - open - 1));
            open = first.find('`', close + 1);
        }
    }
    listed.erase("model_type");  // the header
    const std::string refusal = config_error(R"({"model_type": "none", "hidden_size": 64, "num_attention_heads": 4})");
    const std::string names = refusal.substr(refusal.find('(') + 1, refusal.rfind(')') - refusal.find('(') - 1);
    std::set<std::string> read;
    for (size_t begin = 0, end; begin < names.size(); begin = end + 2) {
        end = std::min(names.find(", ", begin), names.size());
        read.insert(names.substr(begin, end - begin));
    }
    EXPECT_EQ(listed, read);
}

TEST(CachedAttentionHuggingFace, WhatTheLayerDoesNotDoIsRefusedByName) {
    const std::string llama = R"("model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2)";
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})"),
              "config.json (rope_scaling): missing key 'low_freq_factor'");
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_parameters": {"rope_type": "mrope", "rope_theta": 1e6}})"),
              "config.json (rope_parameters): rope_type 'mrope' is not supported (default, linear, llama3, yarn, longrope and "
              "dynamic)");
    // Dynamic NTK grows from max_position_embeddings (transformers reads no other original).
    const CachedAttentionConfig dynamic = CachedAttentionConfig::from(ConfigReader::parse(
        "{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0}})", "c"));
    EXPECT_EQ(dynamic.rope_scaling.type, RopeScaling::Type::Dynamic);
    EXPECT_EQ(dynamic.rope_scaling.original_context, 64.0);
    EXPECT_EQ(dynamic.rope_scaling.factor, 2.0);
    EXPECT_EQ(config_error("{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 0.5}})"),
              "config.json (rope_scaling): dynamic scaling needs a factor of at least 1 and a positive max_position_embeddings");
    EXPECT_EQ(config_error("{" + llama + R"(, "max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0,
        "original_max_position_embeddings": 32}})"),
              "config.json (rope_scaling): original_max_position_embeddings 32.000000 differs from max_position_embeddings, "
              "from which transformers' dynamic scaling grows");
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_scaling": {"type": "linear", "factor": 0}})"),
              "config.json (rope_scaling): factor must be positive");
    EXPECT_EQ(config_error("{" + llama + R"(, "partial_rotary_factor": 0.5})"),
              "config.json: partial_rotary_factor 0.500000 is not supported for llama (whole-head RoPE only)");
    // transformers 5 keeps the rotary fraction beside the theta.
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}})"),
              "config.json: partial_rotary_factor 0.500000 is not supported for llama (whole-head RoPE only)");
    // Look-alikes with the same weight names and other math, and configs that do not say.
    for (const char *type : {"hunyuan_v1_moe", "qwen3_next", "bloom"}) {
        EXPECT_EQ(config_error(R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 64, "num_attention_heads": 4})"),
                  "config.json: model_type '" + std::string(type) +
                      "' is not supported by cached_attention (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, "
                      "qwen3_moe, olmo, olmo2, olmo3, phi3, gemma, gemma2, gemma3_text, cohere, cohere2, glm, glm4, "
                      "glm4_moe, gpt_oss, smollm3, llama4_text, stablelm, granite, granitemoe, granitemoeshared, "
                      "starcoder2, olmoe, nemotron, apertus, arcee, helium, exaone4, ernie4_5, phi, gpt_neox, ministral3, "
                      "seed_oss, falcon, hunyuan_v1_dense)");
    }
    // OLMo 1: Llama's attention, q, k and v clamped where clip_qkv says.
    const std::string olmo = R"({"model_type": "olmo", "hidden_size": 64, "num_attention_heads": 4)";
    EXPECT_FALSE(CachedAttentionConfig::from(ConfigReader::parse(olmo + R"(, "clip_qkv": null})", "c")).qkv_clip);
    EXPECT_EQ(CachedAttentionConfig::from(ConfigReader::parse(olmo + R"(, "clip_qkv": 8.0})", "c")).qkv_clip.value_or(0), 8.0);
    EXPECT_EQ(config_error(olmo + R"(, "clip_qkv": 0})"), "config.json: clip_qkv must be positive (or null for none), got 0.000000");
    testing::expect_contains(config_error(R"({"hidden_size": 64, "num_attention_heads": 4})"), "model_type ''");
    try {
        CachedAttentionConfig::from(ConfigReader::parse(R"({"model_type": "gpt_oss", "hidden_size": 64, "rope_scaling": null})",
                                                        "config.json"),
                                    0);
        ADD_FAILURE() << "a gpt_oss config without rope_scaling was read";
    } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()), "config.json: gpt_oss needs its RoPE scaling stated in rope_scaling or rope_parameters "
                                         "(transformers takes a missing one as YaRN x32, and 4 a null one as none)");
    }
    EXPECT_EQ(config_error(R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "sliding_window": -1})"),
              "config.json: sliding_window must be positive, got -1");
    EXPECT_EQ(config_error("{" + llama + R"(, "sliding_window": null, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})"), "");
    EXPECT_EQ(config_error(R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3})"),
              "config.json: num_attention_heads (4) must be a multiple of num_key_value_heads (3)");
    EXPECT_EQ(config_error(R"({"model_type": "llama", "hidden_size": 60, "num_attention_heads": 4, "head_dim": 15})"),
              "config.json: RoPE needs an even head_dim, got 15");
    const auto hf = [](const std::string &json) { return CachedAttentionConfig::from(ConfigReader::parse(json, "c")); };
    const CachedAttentionConfig plain = hf("{" + llama + "}");
    EXPECT_EQ(plain.rope_base.value_or(0), 10000.0);
    EXPECT_FALSE(plain.bias || plain.output_bias);  // attention_bias false: a checkpoint's biases are not read
    // Biases and windows as each model's attention module takes them.
    const std::string small = R"("hidden_size": 64, "num_attention_heads": 4, "sliding_window": 16)";
    const CachedAttentionConfig qwen2 = hf(R"({"model_type": "qwen2", )" + small + "}");
    EXPECT_TRUE(qwen2.bias && !qwen2.output_bias);
    EXPECT_FALSE(qwen2.sliding_window.has_value());  // use_sliding_window is false by default
    // transformers slides 4096 keys where no window is stated
    // With use_sliding_window, the layers layer_types names slide (4096 keys where no window is
    // stated); without layer_types, which ones depends on the transformers version: refused.
    EXPECT_EQ(config_error(R"({"model_type": "qwen2", "use_sliding_window": true, )" + small + "}"),
              "config.json: use_sliding_window without layer_types is not supported for qwen2 (which layers slide "
              "depends on the transformers version: state layer_types)");
    const auto qwen2_layer = [](const std::string &json, int64_t index) {
        return CachedAttentionConfig::from(ConfigReader::parse(json, "c"), index).sliding_window;
    };
    const std::string qwen2_windows = R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
        "use_sliding_window": true, "layer_types": ["full_attention", "sliding_attention"])";
    EXPECT_FALSE(qwen2_layer(qwen2_windows + "}", 0).has_value());
    EXPECT_EQ(qwen2_layer(qwen2_windows + "}", 1).value_or(0), 4096);
    EXPECT_EQ(qwen2_layer(qwen2_windows + R"(, "sliding_window": 16})", 1).value_or(0), 16);
    EXPECT_EQ(config_error(R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
        "layer_types": ["sliding_attention"], "sliding_window": 16})"),
              "config.json: layer_types names sliding layers, but use_sliding_window is false (transformers fails on it)");
    EXPECT_EQ(config_error(qwen2_windows + R"(, "sliding_window": null})"),
              "config.json: use_sliding_window with a null sliding_window (transformers builds no window, or fails)");
    EXPECT_FALSE(hf(R"({"model_type": "qwen2_moe", "qkv_bias": false, )" + small + "}").bias);
    // Qwen3 and OLMo 2: attention_bias for all four, a QK-norm with their own eps defaults; Qwen3's
    // head_dim defaults to 128 (its config class's), OLMo 2's to E/H.
    using Span = CachedAttentionConfig::QkNorm::Span;
    const CachedAttentionConfig qwen3 = hf(R"({"model_type": "qwen3", "attention_bias": true, )" + small + "}");
    EXPECT_TRUE(qwen3.bias && qwen3.output_bias);
    EXPECT_EQ(qwen3.head_dimension, 128);
    EXPECT_FALSE(qwen3.sliding_window.has_value());
    ASSERT_TRUE(qwen3.qk_norm.has_value());
    EXPECT_EQ(qwen3.qk_norm->span, Span::EachHead);
    EXPECT_EQ(qwen3.qk_norm->eps, 1e-6);
    EXPECT_EQ(hf(R"({"model_type": "qwen3_moe", )" + small + "}").head_dimension, 16);
    EXPECT_EQ(config_error(R"({"model_type": "qwen3_moe", "use_sliding_window": true, "layer_types": ["sliding_attention"], )" +
                           small + "}"),
              "config.json: use_sliding_window is not supported for qwen3_moe (which layers slide depends on the layer's "
              "index and the transformers version)");
    const CachedAttentionConfig olmo2 = hf(R"({"model_type": "olmo2", )" + small + "}");
    EXPECT_FALSE(olmo2.bias || olmo2.output_bias || olmo2.sliding_window);
    EXPECT_EQ(olmo2.head_dimension, 16);
    ASSERT_TRUE(olmo2.qk_norm.has_value());
    EXPECT_EQ(olmo2.qk_norm->span, Span::AllHeads);
    EXPECT_EQ(olmo2.qk_norm->eps, 1e-5);
    EXPECT_EQ(config_error(R"({"model_type": "olmo2", "rms_norm_eps": 0, )" + small + "}"),
              "config.json: rms_norm_eps must be positive, got 0.000000");
    EXPECT_FALSE(plain.qk_norm.has_value());
    EXPECT_FALSE(plain.attention_scale.has_value());
    // Gemma 3: which layers slide (layer_types, else every 6th is full), each layer's RoPE (transformers 4:
    // rope_local_base_freq unscaled for the sliding ones; 5: nested rope_parameters), its class defaults.
    const std::string gemma3 = R"("model_type": "gemma3_text", "hidden_size": 2560, "rope_scaling": {"rope_type": "linear", "factor": 8.0})";
    const auto layer = [&](const std::string &json, int64_t index) {
        return CachedAttentionConfig::from(ConfigReader::parse(json, "c"), index);
    };
    // A model type's class defaults, where the config leaves the heads out.
    const auto expect_heads = [](const CachedAttentionConfig &c, int64_t heads, int64_t kv_heads, int64_t head_dim) {
        EXPECT_EQ(std::tuple(c.heads, c.kv_heads, c.head_dimension), std::tuple(heads, kv_heads, head_dim));
    };
    const CachedAttentionConfig local = layer("{" + gemma3 + "}", 4), global = layer("{" + gemma3 + "}", 5);
    expect_heads(local, 8, 4, 256);
    EXPECT_EQ(local.sliding_window.value_or(0), 4096);
    EXPECT_EQ(local.rope_base.value_or(0), 10000.0);
    EXPECT_EQ(local.rope_scaling.type, RopeScaling::Type::None);
    EXPECT_FALSE(global.sliding_window.has_value());
    EXPECT_EQ(global.rope_base.value_or(0), 1e6);
    EXPECT_EQ(global.rope_scaling.type, RopeScaling::Type::Linear);
    EXPECT_DOUBLE_EQ(global.attention_scale.value_or(0), 1.0 / 16.0);
    ASSERT_TRUE(global.qk_norm.has_value());
    EXPECT_TRUE(global.qk_norm->weight_plus_one);
    EXPECT_TRUE(layer("{" + gemma3 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 1).sliding_window);
    EXPECT_FALSE(layer("{" + gemma3 + R"(, "layer_types": ["full_attention", "sliding_attention"]})", 0).sliding_window);
    const CachedAttentionConfig nested = layer(R"({"model_type": "gemma3_text", "hidden_size": 64, "sliding_window": 512,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}})", 0);
    EXPECT_EQ(nested.rope_base.value_or(0), 10000.0);
    EXPECT_EQ(nested.rope_scaling.type, RopeScaling::Type::None);
    EXPECT_EQ(nested.sliding_window.value_or(0), 512);
    EXPECT_EQ(config_error(R"({"model_type": "gemma3_text", "hidden_size": 64, "attn_logit_softcapping": 50.0})"),
              "config.json: gemma3_text layers differ by index (sliding or full attention): give the layer's index "
              "(weights opened with the prefix model.layers.N., or CachedAttentionConfig::from(config, N))");
    const auto layer_error = [&](const std::string &json, int64_t index) {
        return testing::error_message([&] { layer(json, index); });
    };
    // Granite: Llama's attention with scores scaled by attention_multiplier (default 1).
    for (const char *type : {"granite", "granitemoe", "granitemoeshared"}) {
        const std::string granite = R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 64, "num_attention_heads": 4)";
        EXPECT_EQ(hf(granite + R"(, "attention_multiplier": 0.0625})").attention_scale.value_or(0), 0.0625) << type;
        EXPECT_EQ(hf(granite + "}").attention_scale.value_or(0), 1.0) << type;
        EXPECT_EQ(config_error(granite + R"(, "attention_multiplier": -2})"),
                  "config.json: attention_multiplier must be positive, got -2.000000") << type;
    }
    // SmolLM3: every fourth layer without RoPE (no_rope_layer_interval), or as no_rope_layers says;
    // its class defaults; its layers without RoPE slide only where use_sliding_window and
    // sliding_window say so (or layer_types).
    const std::string smollm3 = R"("model_type": "smollm3", "hidden_size": 2048)";
    const CachedAttentionConfig rope0 = layer("{" + smollm3 + "}", 0), nope3 = layer("{" + smollm3 + "}", 3);
    expect_heads(rope0, 16, 4, 128);
    EXPECT_EQ(rope0.rope_base.value_or(0), 2e6);
    EXPECT_FALSE(nope3.rope_base.has_value());
    EXPECT_FALSE(rope0.sliding_window || nope3.sliding_window);
    EXPECT_TRUE(layer("{" + smollm3 + R"(, "no_rope_layer_interval": 2})", 2).rope_base.has_value());
    EXPECT_FALSE(layer("{" + smollm3 + R"(, "no_rope_layers": [1, 0, 1]})", 1).rope_base.has_value());
    EXPECT_TRUE(layer("{" + smollm3 + R"(, "no_rope_layers": [1, 0, 1]})", 2).rope_base.has_value());
    EXPECT_EQ(layer("{" + smollm3 + R"(, "use_sliding_window": true, "sliding_window": 64})", 3).sliding_window.value_or(0), 64);
    EXPECT_FALSE(layer("{" + smollm3 + R"(, "use_sliding_window": true, "sliding_window": 64})", 2).sliding_window);
    EXPECT_FALSE(layer("{" + smollm3 + R"(, "layer_types": ["sliding_attention"]})", 0).sliding_window);
    EXPECT_EQ(layer_error("{" + smollm3 + R"(, "no_rope_layers": [1, 0]})", 2), "c: no_rope_layers lists 2 layers, not layer 2");
    EXPECT_EQ(layer_error("{" + smollm3 + R"(, "no_rope_layer_interval": 0})", 2),
              "c: no_rope_layer_interval must be positive, got 0");
    testing::expect_contains(config_error("{" + smollm3 + "}"), "smollm3 layers differ by index (with RoPE or without)");
    // Gemma 3 never caps scores, whatever its config states (transformers' Gemma3Attention stores
    // attn_logit_softcapping and does not apply it); the stated key is named as unused.
    const std::string capped_gemma3 = R"({"model_type": "gemma3_text", "hidden_size": 64, "attn_logit_softcapping": 30.0})";
    EXPECT_FALSE(layer(capped_gemma3, 0).score_softcap.has_value());
    const std::vector<std::string> unused = CachedAttentionConfig::unused_keys(ConfigReader::parse(capped_gemma3, "c"));
    ASSERT_EQ(unused.size(), 1u);
    testing::expect_contains(unused[0], "attn_logit_softcapping is ignored");
    EXPECT_TRUE(CachedAttentionConfig::unused_keys(ConfigReader::parse("{" + gemma3 + "}", "c")).empty());
    EXPECT_FALSE(local.score_softcap.has_value());
    // Gemma 2: sliding layers first, then alternating; capped at 50 unless the config says otherwise
    // (null: not capped; 0, which transformers divides by, is refused).
    const std::string gemma2 = R"("model_type": "gemma2", "hidden_size": 2304, "query_pre_attn_scalar": 224)";
    const CachedAttentionConfig gemma2_local = layer("{" + gemma2 + "}", 0), gemma2_global = layer("{" + gemma2 + "}", 1);
    expect_heads(gemma2_local, 8, 4, 256);
    EXPECT_EQ(gemma2_local.sliding_window.value_or(0), 4096);
    EXPECT_FALSE(gemma2_global.sliding_window.has_value());
    EXPECT_EQ(gemma2_global.rope_base.value_or(0), 10000.0);
    EXPECT_DOUBLE_EQ(gemma2_global.attention_scale.value_or(0), 1.0 / std::sqrt(224.0));
    EXPECT_EQ(gemma2_local.score_softcap.value_or(0), 50.0);
    EXPECT_FALSE(gemma2_local.bias || gemma2_local.qk_norm);
    EXPECT_FALSE(layer("{" + gemma2 + R"(, "attn_logit_softcapping": null})", 0).score_softcap.has_value());
    EXPECT_EQ(layer("{" + gemma2 + R"(, "attn_logit_softcapping": 20})", 1).score_softcap.value_or(0), 20.0);
    EXPECT_EQ(layer_error("{" + gemma2 + R"(, "attn_logit_softcapping": 0})", 0),
              "c: attn_logit_softcapping must be positive (or null for none), got 0.000000");
    EXPECT_EQ(layer_error("{" + gemma3 + R"(, "layer_types": ["full_attention"]})", 1), "c: layer_types lists 1 layers, not layer 1");
    EXPECT_EQ(layer_error("{" + gemma3 + R"(, "num_hidden_layers": 4})", 4), "c: layer 4 is past num_hidden_layers 4");
    EXPECT_EQ(layer_error("{" + gemma3 + "}", -1), "c: a layer index must not be negative, got -1");
    EXPECT_EQ(layer_error(R"({"embedding_dimension": 8, "number_of_heads": 2})", 0),
              "c: a layer index is read only with a Hugging Face config.json");
    // EmbeddingGemma attends both ways: its sliding layers within (sliding_window // 2) + 1 keys each
    // way, as transformers' config keeps it (512: 257), its full layers over every key.
    const std::string gemma3_keys = R"({"model_type": "gemma3_text", "hidden_size": 768, "num_attention_heads": 3,
        "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512)";
    const std::string embedding_gemma = gemma3_keys + R"(, "use_bidirectional_attention": true})";
    const CachedAttentionConfig sliding_both_ways = layer(embedding_gemma, 0),
                                full_both_ways = layer(embedding_gemma, 5);
    EXPECT_FALSE(sliding_both_ways.causal || full_both_ways.causal);
    EXPECT_EQ(sliding_both_ways.sliding_window.value_or(0), 257);
    EXPECT_FALSE(full_both_ways.sliding_window.has_value());
    EXPECT_TRUE(layer(gemma3_keys + R"(, "use_bidirectional_attention": false})", 0).causal);
    EXPECT_EQ(layer(gemma3_keys + R"(, "use_bidirectional_attention": false})", 0).sliding_window.value_or(0), 512);
    EXPECT_TRUE(local.causal);
    // Other types' encoders, and is_causal (whose windows reach one key farther in transformers 5), are refused.
    EXPECT_EQ(config_error("{" + llama + R"(, "use_bidirectional_attention": true})"),
              "config.json: use_bidirectional_attention is not supported for llama (Gemma 3's only: these layers are causal)");
    EXPECT_EQ(layer_error("{" + gemma3 + R"(, "is_causal": false})", 0),
              "c: is_causal false (bidirectional attention) is not supported for gemma3_text (use_bidirectional_attention: "
              "Gemma 3's only)");
    // A multimodal Gemma 3 config is read through its text_config.
    const CachedAttentionConfig multimodal = layer(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
        "hidden_size": 2560, "sliding_window": 1024}, "vision_config": {"hidden_size": 1152}})", 0);
    EXPECT_EQ(multimodal.embedding_dimension, 2560);
    EXPECT_EQ(multimodal.sliding_window.value_or(0), 1024);
    EXPECT_EQ(multimodal.layer.value_or(-1), 0);
    // transformers 4 reads rope_scaling, 5 rope_parameters: both, with a scaling, are refused.
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_parameters": {"rope_theta": 1e4}, "rope_scaling": {"type": "linear", "factor": 2}})"),
              "config.json: both rope_parameters and a scaling rope_scaling are given (transformers 5 reads the first, 4 "
              "the second); keep one");
    // Cohere: RoPE over interleaved pairs.
    EXPECT_EQ(hf(R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4})").rope_layout, RopeLayout::Interleaved);
    EXPECT_EQ(plain.rope_layout, RopeLayout::NeoX);
    // Command R+: per-head LayerNorms of q and k (layer_norm_eps, default 1e-5); Cohere2 has none.
    const CachedAttentionConfig plus = hf(R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true})");
    ASSERT_TRUE(plus.qk_norm.has_value());
    EXPECT_TRUE(plus.qk_norm->centred && plus.qk_norm->weights_per_head);
    EXPECT_EQ(plus.qk_norm->eps, 1e-5);
    EXPECT_EQ(config_error(R"({"model_type": "cohere", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true,
                               "layer_norm_eps": 0})"),
              "config.json: layer_norm_eps must be positive, got 0.000000");
    EXPECT_EQ(layer_error(R"({"model_type": "cohere2", "hidden_size": 64, "num_attention_heads": 4, "use_qk_norm": true})", 0),
              "c: use_qk_norm is not supported for cohere2 (its attention has no QK-norm)");
    // Cohere2 (Command R7B): every fourth layer full and without RoPE, the others sliding with it.
    const std::string cohere2 = R"({"model_type": "cohere2", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 50000.0})";
    const CachedAttentionConfig sliding_cohere = layer(cohere2, 2), full_cohere = layer(cohere2, 3);
    EXPECT_EQ(sliding_cohere.sliding_window.value_or(0), 4096);
    EXPECT_EQ(sliding_cohere.rope_base.value_or(0), 50000.0);
    EXPECT_EQ(sliding_cohere.rope_layout, RopeLayout::Interleaved);
    EXPECT_FALSE(full_cohere.sliding_window.has_value());
    EXPECT_FALSE(full_cohere.rope_base.has_value());
    // Gemma 1: Llama's math with a head_dim of 256 by default.
    EXPECT_EQ(hf(R"({"model_type": "gemma", "hidden_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 1})").head_dimension, 256);
    EXPECT_EQ(plain.rotary_dimension, 0);  // the whole head
    // Phi-3 may turn a fraction of each head; it must leave an even number of dims.
    EXPECT_EQ(hf(R"({"model_type": "phi3", "partial_rotary_factor": 0.75, )" + small + "}").rotary_dimension, 12);
    EXPECT_EQ(config_error(R"({"model_type": "phi3", "partial_rotary_factor": 0.6, )" + small + "}"),
              "config.json: partial_rotary_factor 0.600000 of head_dim 16 must turn an even number of dims, got 9");
    // LongRoPE as Phi-3 states it: one factor per rotated pair in each set, the original context at
    // the top level, the amplitude sqrt(1 + ln(131072 / 4096) / ln 4096).
    const std::string phi3 = R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4, "partial_rotary_factor": 0.75,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope", )";
    const RopeScaling long_rope = hf(phi3 + R"("short_factor": [1, 1, 1, 1, 2, 3], "long_factor": [1, 2, 4, 8, 16, 32]}})").rope_scaling;
    EXPECT_EQ(long_rope.type, RopeScaling::Type::LongRope);
    EXPECT_EQ(long_rope.short_factors, (std::vector<double>{1, 1, 1, 1, 2, 3}));
    EXPECT_EQ(long_rope.long_factors, (std::vector<double>{1, 2, 4, 8, 16, 32}));
    EXPECT_FALSE(long_rope.long_factors_used);
    EXPECT_EQ(long_rope.original_context, 4096.0);
    EXPECT_NEAR(long_rope.attention_factor, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)), 1e-12);
    EXPECT_EQ(config_error(phi3 + R"("short_factor": [1, 1], "long_factor": [1, 2]}})"),
              "config.json: longrope's short_factor and long_factor need one value per rotated pair (6), got 2");
    EXPECT_EQ(config_error(phi3 + R"("short_factor": [1, 1, 1, 1, 1, 1]}})"), "config.json (rope_scaling): missing key 'long_factor'");
    // transformers 4 reads max_position_embeddings / original where the config states its own
    // original context, 5 a stated factor: where they differ, refused (a stated amplitude settles it).
    EXPECT_EQ(config_error(phi3 + R"("factor": 4, "short_factor": [1, 1, 1, 1, 1, 1], "long_factor": [1, 1, 1, 1, 1, 1]}})"),
              "config.json (rope_scaling): factor 4.000000 differs from max_position_embeddings / "
              "original_max_position_embeddings (32.000000), which transformers 4 reads in its place; state attention_factor");
    EXPECT_EQ(hf(phi3 + R"("factor": 4, "attention_factor": 1.5, "short_factor": [1, 1, 1, 1, 1, 1], "long_factor": [1, 1, 1, 1, 1, 1]}})")
                  .rope_scaling.attention_factor, 1.5);
    // YaRN: Qwen's long-context form (factor as stated, 0.1 ln 4 + 1), DeepSeek's mscale ratio,
    // a stated attention_factor, and the original context from max_position_embeddings.
    const auto yarn = [&](const std::string &scaling) {
        return hf("{" + llama + R"(, "max_position_embeddings": 40960, "rope_scaling": {"rope_type": "yarn", )" + scaling +
                  "}}")
            .rope_scaling;
    };
    const RopeScaling qwen_yarn = yarn(R"("factor": 4.0, "original_max_position_embeddings": 32768)");
    EXPECT_EQ(qwen_yarn.type, RopeScaling::Type::Yarn);
    EXPECT_EQ(qwen_yarn.factor, 4.0);
    EXPECT_EQ(qwen_yarn.original_context, 32768.0);
    EXPECT_DOUBLE_EQ(qwen_yarn.attention_factor, 0.1 * std::log(4.0) + 1.0);
    EXPECT_TRUE(qwen_yarn.truncate);
    EXPECT_EQ(qwen_yarn.beta_fast, 32.0);
    EXPECT_EQ(qwen_yarn.beta_slow, 1.0);
    const RopeScaling deepseek = yarn(R"("factor": 40, "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": null, "truncate": false)");
    EXPECT_EQ(deepseek.original_context, 40960.0);
    EXPECT_DOUBLE_EQ(deepseek.attention_factor, (0.0707 * std::log(40.0) + 1.0) / (0.1 * std::log(40.0) + 1.0));
    EXPECT_EQ(deepseek.beta_fast, 32.0);
    EXPECT_FALSE(deepseek.truncate);
    EXPECT_EQ(yarn(R"("factor": 2, "attention_factor": 1.5, "beta_slow": 2)").attention_factor, 1.5);
    EXPECT_EQ(yarn(R"("factor": 0.5)").attention_factor, 1.0);  // no stretch, no scale
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})"),
              "config.json: missing key 'max_position_embeddings'");
    // transformers 5: the original context at the top level, and a null factor their ratio.
    const RopeScaling derived = hf("{" + llama + R"(, "max_position_embeddings": 8192, "original_max_position_embeddings": 2048,
                                   "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": null}})")
                                    .rope_scaling;
    EXPECT_EQ(derived.original_context, 2048.0);
    EXPECT_EQ(derived.factor, 4.0);
    // vLLM's attn_factor, which transformers ignores: the two disagree, so it is refused.
    EXPECT_EQ(config_error("{" + llama + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
                                                "attn_factor": 0.878}})"),
              "config.json (rope_scaling): attn_factor is read by vLLM and ignored by transformers; refused rather than "
              "guessed (state attention_factor instead)");
    EXPECT_EQ(yarn(R"("factor": 4.0, "original_max_position_embeddings": 32768, "attn_factor": 1.0)").attention_factor,
              qwen_yarn.attention_factor);  // vLLM's neutral value agrees
    const CachedAttentionConfig mistral = hf(R"({"model_type": "mistral", "attention_bias": true, )" + small + "}");
    EXPECT_FALSE(mistral.bias || mistral.output_bias);
    EXPECT_EQ(mistral.sliding_window.value_or(0), 16);
    const CachedAttentionConfig llama_window = hf(R"({"model_type": "llama", "attention_bias": true, )" + small + "}");
    EXPECT_TRUE(llama_window.bias && llama_window.output_bias);
    EXPECT_FALSE(llama_window.sliding_window.has_value());  // Llama attends to every key
    // Llama 3.1's scaling, as transformers 5 writes it.
    const CachedAttentionConfig llama31 = CachedAttentionConfig::from(ConfigReader::parse(
        "{" + llama + R"(, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})", "c"));
    EXPECT_EQ(llama31.rope_base.value_or(0), 500000.0);
    EXPECT_EQ(llama31.rope_scaling.type, RopeScaling::Type::Llama3);
    EXPECT_EQ(llama31.rope_scaling.original_context, 8192.0);
}

}  // namespace
}  // namespace hattn
