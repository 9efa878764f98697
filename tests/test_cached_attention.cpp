// hattn::CachedAttention and hattn::KVCache: the layer against a float64 reference, and decoding
// through the cache against whole-sequence runs. The Hugging Face layers' checks are in
// support/cached_checks.h (test_cached_attention_gpu.cpp runs them on each GPU), the readings of
// config.json files in test_hf_attention_config.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "reference/cached_attention.h"
#include "support/cached_checks.h"
#include "support/cached_layer.h"
#include "support/compare.h"
#include "support/config.h"
#include "support/config_changes.h"
#include "support/errors.h"
#include "support/stateful_layer.h"
#include "support/random.h"
#include "hattn/safetensors_writer.h"
#include "support/temp_dir.h"

namespace hattn {
namespace {

using testing::hugging_face_tensors;
using testing::KeyRule;
using testing::prefill_and_decode_difference;
using testing::Shape4;
using testing::test_mask;
using testing::TestLayer;
using testing::TestMask;

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
        testing::expect_contains(message, "cached_attention: the query projection overflowed float32 (element 0 is");
        testing::expect_contains(message, "from finite inputs and weights; the input's largest magnitude is 3e+38, the "
                                          "largest weight");
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
                             "cached_attention: the output overflowed float32 (element 64 is NaN) from finite inputs and "
                             "weights; it first appears after the projections; the input's largest magnitude is "
                             "0.996319, the largest weight 3e+38 (in the value projection)");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>(2, 0));
}

// A key that overflows where no query of the call sees it (the caller's mask hides it) would leave
// the output finite, and the cache would keep it for later calls: refused where it appears.
TEST(CachedAttentionDecode, AnOverflowingKeyNoQuerySeesIsRefused) {
    TestLayer t(Shape4{64, 4, 2, 16, true, 10000.0});
    std::map<std::string, Tensor> tensors = t.tensors;
    for (int64_t i = 0; i < 64; i++) tensors["key_projection.weight"].data()[i] = 3e38f;  // its first row
    testing::TempDir dir;
    write_safetensors(dir.file("w.safetensors"), tensors);
    const CachedAttention huge(t.layer->config(), Weights::open(dir.file("w.safetensors")));
    KVCache cache = huge.make_cache(1, 4);
    const Tensor x({1, 2, 64}, std::vector<float>(2 * 64, 1.0f));
    std::vector<uint8_t> every_key_hidden(2 * 2, 1);
    const MaskView mask{every_key_hidden.data(), {1, 1, 2, 2}};
    testing::expect_contains(testing::error_message([&] { huge.self_attention(x, &cache, &mask); }),
                             "cached_attention: the key projection overflowed float32 (element 0 is infinite)");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>{0});
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
            EXPECT_EQ(cache.keys().as_f32("keys").data[((1 * 2 + h) * 8) * 4 + i], longer.keys().as_f32("keys").data[((1 * 2 + h) * 16) * 4 + i]);
            EXPECT_EQ(cache.values().as_f32("values").data[((1 * 2 + h) * 8) * 4 + i], longer.values().as_f32("values").data[((1 * 2 + h) * 16) * 4 + i]);
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
    const ConstTensorView own(cache.keys().as_f32("keys").data, {1, 2, 2, 4});
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

// ---------------------------------------------------------------- Hugging Face Llama-family layers

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

// Mistral's window on the CPU: keys past it hidden as a mask would hide them (check_sliding_window).
TEST(CachedAttentionHuggingFace, ASlidingWindowHidesKeysPastIt) { testing::check_sliding_window(); }

// A layer that is not causal (an encoder's) sees later keys too, and takes no cache (check_bidirectional).
TEST(CachedAttention, ALayerThatIsNotCausalSeesLaterKeys) { testing::check_bidirectional(std::nullopt, 9); }
// Past 256 queries the windowed prompt takes several calls of the kernels.
TEST(CachedAttention, ABidirectionalWindowHidesKeysFartherThanItEitherWay) { testing::check_bidirectional(40, 264); }

// Command R+'s per-head LayerNorms of q and k, stacked or a module per head (StableLM).
TEST(CachedAttentionHuggingFace, PerHeadLayerNormsOfQueriesAndKeys) {
    testing::check_per_head_layer_norms(false);
    testing::check_per_head_layer_norms(true);
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

// Qwen3's RMSNorm of each head of q and k, before RoPE, against the reference (check_qk_norm).
TEST(CachedAttentionHuggingFace, Qwen3NormsEachHeadOfQueriesAndKeys) { testing::check_qk_norm("qwen3"); }

// Gemma 3's sliding and full layers, by their index (check_gemma3_layers); OLMo 2's RMSNorm of all of
// a token's heads of q and k at once (check_qk_norm).
TEST(CachedAttentionHuggingFace, Gemma3LayersRotateAndScaleAsTheirIndexSays) { testing::check_gemma3_layers(); }
TEST(CachedAttentionHuggingFace, Olmo2NormsAllHeadsOfQueriesAndKeys) { testing::check_qk_norm("olmo2"); }

// gpt-oss's sinks, on a sliding and a full layer (check_gpt_oss_layers).
TEST(CachedAttentionHuggingFace, GptOssLayersAddSinksAndAlternateWindows) { testing::check_gpt_oss_layers(); }

// Gemma 2's soft-capped scores, on a sliding and a full layer (check_gemma2_layers).
TEST(CachedAttentionHuggingFace, Gemma2LayersSoftCapScoresAndAlternateWindows) { testing::check_gemma2_layers(); }

// Llama 4's chunked layers with RoPE and QK-norm, and its layers without RoPE that scale their queries
// by position (check_llama4_layers).
TEST(CachedAttentionHuggingFace, Llama4LayersAttendInChunksOrScaleTheirQueries) { testing::check_llama4_layers(); }

// Ministral 3's query scaling, its positions counted from 0 (check_queries_scaled_from_position_0).
TEST(CachedAttention, QueriesScaledByPositionCountFromTheirOffset) { testing::check_queries_scaled_from_position_0(); }

// GLM-4's RoPE over half of each head, its pairs in place (check_glm_layer).
TEST(CachedAttentionHuggingFace, AGlmLayerTurnsHalfOfEachHeadInPlace) { testing::check_glm_layer(); }

// GPT-NeoX's query_key_value, q, k and v rows per head, and a quarter of each head rotated
// (check_gpt_neox_layer).
TEST(CachedAttentionHuggingFace, AGptNeoXLayerSplitsEachHeadsFusedRows) { testing::check_gpt_neox_layer(); }

// Falcon's three layouts of query_key_value (check_falcon_layers).
TEST(CachedAttentionHuggingFace, FalconLayersSplitTheirFusedRowsByKvHead) { testing::check_falcon_layers(); }

// GLM-4.5's RoPE over half of each head as halves, with QK-norm (check_glm4_moe_layer).
TEST(CachedAttentionHuggingFace, AGlm45LayerTurnsHalfOfEachHeadAsHalvesAndNormsQK) { testing::check_glm4_moe_layer(); }

// Hunyuan's QK-norm after RoPE and its alpha RoPE, within and past max_position_embeddings
// (check_hunyuan_layer).
TEST(CachedAttentionHuggingFace, AHunyuanLayerNormsRotatedQKWithAnAlphaRope) { testing::check_hunyuan_layer(); }

// OLMo 1's clip_qkv clamps q, k and v as projected (check_olmo_clip).
TEST(CachedAttentionHuggingFace, AnOlmoLayerClampsQKAndV) { testing::check_olmo_clip(); }

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

// A config.json's refusal message, or "" where it is read.
std::string config_error(const std::string &json) {
    try {
        CachedAttentionConfig::from(ConfigReader::parse(json, "config.json"));
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

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

}  // namespace
}  // namespace hattn
