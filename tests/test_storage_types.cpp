// A cached attention layer in bf16 and f16 (spec/attention.md section 5): against the float64
// reference within each type's cost, through caches of each type, and what it holds.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "hattn/half.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/stored_tensor.h"
#include "reference/cached_attention.h"
#include "support/cached_layer.h"
#include "support/compare.h"
#include "support/device.h"
#include "support/errors.h"
#include "support/random.h"
#include "support/temp_dir.h"
#include "hattn/safetensors_writer.h"

namespace hattn {
namespace {

using testing::Shape4;
using testing::TestLayer;

// What storing in a type may cost a layer's output, relative L2: the golden cases' tolerances
// (../shared/golden, mha_self_rope_bf16, _f16 and _kvint8), which bound what the spec's rounding costs.
double tolerance(DType dtype) {
    return dtype == DType::BF16 ? 2e-2 : dtype == DType::F16 ? 3e-3 : dtype == DType::Int8 ? 4e-2 : 1e-5;
}

CachedAttention in_types(const TestLayer &t, StorageTypes types, std::optional<int64_t> window = std::nullopt) {
    CachedAttentionConfig config = t.layer->config();
    config.storage = types;
    config.sliding_window = window;
    return t.with_config(config);
}

// The first `prefill` tokens as one call through a cache, then a decode step per token.
Tensor through_cache(const CachedAttention &layer, const Tensor &x, int64_t prefill) {
    KVCache cache = layer.make_cache(x.dim(0), x.dim(1));
    Tensor out({x.dim(0), x.dim(1), x.dim(2)});
    const auto place = [&](const Tensor &part, int64_t begin) {
        for (int64_t b = 0; b < x.dim(0); b++) {
            std::copy_n(part.data() + b * part.dim(1) * x.dim(2), part.dim(1) * x.dim(2),
                        out.data() + (b * x.dim(1) + begin) * x.dim(2));
        }
    };
    place(layer.self_attention(x.tokens(0, prefill), &cache), 0);
    for (int64_t s = prefill; s < x.dim(1); s++) place(layer.decode_step(x.tokens(s, s + 1), cache), s);
    return out;
}

double difference(const Tensor &a, const Tensor &b) { return testing::relative_l2(a, {b.values().begin(), b.values().end()}); }

class StorageTypesOfALayer : public ::testing::TestWithParam<std::tuple<Shape4, DType, DType>> {};

TEST_P(StorageTypesOfALayer, MatchTheReferenceWithinTheirCostAndRoundForReal) {
    const auto [shape, dtype, kv_dtype] = GetParam();
    const TestLayer t(shape);
    const CachedAttention layer = in_types(t, {dtype, kv_dtype});
    // Inputs the dtype represents exactly, as the golden cases take them.
    Tensor x = testing::random_tensor({2, 11, shape.E}, 70);
    round_to(dtype, x.data(), x.size());
    const std::vector<double> expected = reference::cached_attention(t.ref, x, {}, {}, 0);
    const Tensor once = layer.self_attention(x);
    const double cost = std::max(tolerance(dtype), tolerance(kv_dtype));
    EXPECT_LE(testing::relative_l2(once, expected), cost);
    // Prefill and decode give the one pass's output within the same cost (an int8 cache's codes are
    // read by the calls after the one that stored them).
    for (int64_t prefill : {0, 1, 6}) EXPECT_LE(testing::relative_l2(through_cache(layer, x, prefill), expected), cost) << prefill;
    // The values are really rounded: the output is not the float32 layer's (through a cache, for a
    // layer whose cache alone has another type).
    EXPECT_GT(difference(through_cache(layer, x, 6), through_cache(*t.layer, x, 6)), 1e-4);
}

TEST_P(StorageTypesOfALayer, HoldTheirWeightsAndCachesInTheirTypes) {
    const auto [shape, dtype, kv_dtype] = GetParam();
    const TestLayer t(shape);
    const CachedAttention layer = in_types(t, {dtype, kv_dtype});
    EXPECT_EQ(layer.storage_types().dtype, dtype);
    EXPECT_EQ(layer.make_cache(1, 4).dtype(), kv_dtype);
    const int64_t weights = (2 * shape.H * shape.D + 2 * shape.Hkv * shape.D) * shape.E;
    const int64_t biases = shape.bias ? shape.H * shape.D + 2 * shape.Hkv * shape.D + shape.E : 0;
    // 16-bit weights; biases are a few values, held in float32.
    EXPECT_EQ(layer.weight_bytes(), weights * int64_t(dtype_size(dtype)) + biases * 4);
    // An int8 row: D codes and a float32 scale.
    const int64_t row = shape.D * int64_t(dtype_size(kv_dtype)) + (kv_dtype == DType::Int8 ? 4 : 0);
    EXPECT_EQ(layer.cache_bytes_per_token(), 2 * shape.Hkv * row);
}

INSTANTIATE_TEST_SUITE_P(
    Types, StorageTypesOfALayer,
    ::testing::Values(std::tuple{Shape4{64, 4, 4, 16, true, 10000.0}, DType::BF16, DType::BF16},
                      std::tuple{Shape4{64, 4, 4, 16, true, 10000.0}, DType::F16, DType::F16},
                      std::tuple{Shape4{96, 6, 2, 16, false, 10000.0}, DType::BF16, DType::BF16},  // GQA
                      std::tuple{Shape4{96, 6, 2, 16, false, 10000.0}, DType::F16, DType::F16},
                      std::tuple{Shape4{128, 2, 1, 256, false, 10000.0}, DType::BF16, DType::BF16},  // Gemma's D
                      std::tuple{Shape4{64, 4, 1, 32, true, 500.0}, DType::F32, DType::BF16},  // f32 with a bf16 cache
                      std::tuple{Shape4{64, 4, 1, 32, true, 500.0}, DType::BF16, DType::F32},
                      std::tuple{Shape4{64, 4, 1, 32, true, 500.0}, DType::BF16, DType::F16},
                      std::tuple{Shape4{64, 4, 4, 16, true, 10000.0}, DType::F32, DType::Int8},
                      std::tuple{Shape4{96, 6, 2, 16, false, 10000.0}, DType::BF16, DType::Int8},
                      std::tuple{Shape4{128, 2, 1, 256, false, 10000.0}, DType::F16, DType::Int8}),
    [](const auto &info) {
        return std::string(type_name(std::get<1>(info.param))) + "_kv_" + type_name(std::get<2>(info.param)) + "_" +
               std::to_string(info.index);
    });

// Against the float64 reference rounded where the spec stores values (x, weights, each step's
// result): a one-pass layer in bf16 or f16 differs only where a value near a rounding boundary
// rounds the other way in float32, far within the types' cost, which the reference that does not
// round sees.
TEST(StorageTypes, OnePassMatchesTheReferenceRoundedWhereTheSpecStores) {
    for (const auto &[shape, dtype] : {std::pair{Shape4{64, 4, 4, 16, true, 10000.0}, DType::BF16},
                                       std::pair{Shape4{96, 6, 2, 16, false, 10000.0}, DType::BF16},
                                       std::pair{Shape4{64, 4, 4, 16, true, 10000.0}, DType::F16},
                                       std::pair{Shape4{96, 6, 2, 16, false, 10000.0}, DType::F16}}) {
        SCOPED_TRACE(type_name(dtype));
        const TestLayer t(shape);
        const CachedAttention layer = in_types(t, {dtype, dtype});
        const Tensor x = testing::random_tensor({2, 11, shape.E}, 75);
        reference::CachedAttentionWeights rounded = t.ref;
        rounded.dtype = dtype;
        const Tensor y = layer.self_attention(x);
        const double to_rounded = testing::relative_l2(y, reference::cached_attention(rounded, x, {}, {}, 0));
        const double to_plain = testing::relative_l2(y, reference::cached_attention(t.ref, x, {}, {}, 0));
        // 5e-4: a few values a unit in the last place apart (bf16's unit is 2^-8 of a value).
        EXPECT_LE(to_rounded, 5e-4);
        EXPECT_GT(to_plain, 4 * to_rounded);
    }
}

// The same layers on each GPU API: the typed kernels read the caches and weights where they are
// resident, and what the host rounds (activations, stored rows) reaches the device.
class StorageTypesOnGpu : public testing::OnEachGpu {};

TEST_P(StorageTypesOnGpu, MatchTheReferenceThroughCaches) {
    const testing::OnDevice on(GetParam());
    const std::pair<DType, DType> types[] = {{DType::BF16, DType::BF16}, {DType::F16, DType::F16},
                                             {DType::F32, DType::Int8}, {DType::BF16, DType::Int8}};
    for (const auto &[dtype, kv_dtype] : types) {
        SCOPED_TRACE(std::string(type_name(dtype)) + " kv " + type_name(kv_dtype));
        const TestLayer t({96, 6, 2, 16, true, 10000.0});
        const CachedAttention layer = in_types(t, {dtype, kv_dtype});
        Tensor x = testing::random_tensor({2, 11, 96}, 74);
        round_to(dtype, x.data(), x.size());
        const std::vector<double> expected = reference::cached_attention(t.ref, x, {}, {}, 0);
        const double cost = std::max(tolerance(dtype), tolerance(kv_dtype));
        EXPECT_LE(testing::relative_l2(layer.self_attention(x), expected), cost);
        for (int64_t prefill : {1, 6}) {
            EXPECT_LE(testing::relative_l2(through_cache(layer, x, prefill), expected), cost) << prefill;
        }
        EXPECT_GT(difference(through_cache(layer, x, 6), through_cache(*t.layer, x, 6)), 1e-4);
    }
}

HATTN_INSTANTIATE_ON_EACH_GPU(StorageTypesOnGpu);

// A sliding window's cache keeps, forgets and moves 16-bit rows as it does float32 ones.
TEST(StorageTypes, ASlidingCacheOfBf16RowsDecodesAsTheOnePass) {
    const TestLayer t({64, 4, 2, 16, true, 10000.0});
    const CachedAttention layer = in_types(t, {DType::BF16, DType::BF16}, 5);
    Tensor x = testing::random_tensor({2, 40, 64}, 71);
    round_to(DType::BF16, x.data(), x.size());
    const Tensor once = layer.self_attention(x);
    // Every row is rounded once, where it is stored: decoding reads the same values.
    EXPECT_LE(difference(through_cache(layer, x, 3), once), 1e-5);
}

// Truncating, forking and assigning sequences move codes only: the result is a fresh run's.
TEST(StorageTypes, TruncateAndForkOfAnF16CacheEqualFreshRuns) {
    const TestLayer t({64, 4, 2, 16, true, 10000.0});
    const CachedAttention layer = in_types(t, {DType::F16, DType::F16});
    const Tensor x = testing::random_tensor({2, 12, 64}, 72);
    const Tensor next = testing::random_tensor({2, 1, 64}, 73);
    KVCache cache = layer.make_cache(2, 16);
    layer.self_attention(x, &cache);
    cache.truncate_to(7);
    cache.fork(1, 0);
    KVCache fresh = layer.make_cache(2, 16);
    layer.self_attention(x.tokens(0, 7), &fresh);
    fresh.fork(1, 0);
    EXPECT_EQ(difference(layer.decode_step(next, cache), layer.decode_step(next, fresh)), 0.0);
    KVCache f32_cache = t.layer->make_cache(2, 16);
    EXPECT_NE(testing::error_message([&] { f32_cache.assign_sequence(0, cache, 0); }).find("f16"), std::string::npos);
}

// An f16 value past its range is stored as 65504, never as inf: a layer whose projections
// overflow f16 still gives finite output.
TEST(StorageTypes, F16ActivationsPastTheRangeStayFinite) {
    const TestLayer t({64, 4, 4, 16, false, std::nullopt});
    const CachedAttention layer = in_types(t, {DType::F16, DType::F16});
    Tensor x = testing::random_tensor({1, 5, 64}, 74);
    for (int64_t i = 0; i < x.size(); i++) x.data()[i] *= 30000.0f;  // projections of about 1e5
    round_to(DType::F16, x.data(), x.size());
    KVCache cache = layer.make_cache(1, 5);
    const Tensor y = layer.self_attention(x, &cache);
    for (float v : y.values()) ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({5}));
}

// The calls over typed activations take a caller's 16-bit memory in place (a strided crop of it
// too) and return the output in the layer's dtype: bit for bit what the float32 calls give for the
// same values, at 2 bytes a value. An input in another type is converted once, as a float32 one is.
TEST(StorageTypes, TypedCallsTakeTheCallersMemoryAndReturnTheDtype) {
    const TestLayer t({64, 4, 2, 16, true, 10000.0});
    const int64_t B = 2, S = 9, P = 4, E = 64;
    for (const auto &[dtype, input_type] : {std::pair{DType::BF16, DType::BF16}, {DType::F16, DType::BF16},
                                             {DType::BF16, DType::F32}, {DType::F32, DType::F16}}) {
        SCOPED_TRACE(std::string(type_name(dtype)) + " layer, " + type_name(input_type) + " input");
        const CachedAttention layer = in_types(t, {dtype, dtype});
        const StoredTensor x = StoredTensor::rounded(input_type, testing::random_tensor({B, S, E}, 75).view());
        const Tensor x32 = x.widened();
        KVCache cache = layer.make_cache(B, S);
        Tensor out({B, S, E});
        const auto place = [&](const StoredTensor &part, int64_t begin) {
            EXPECT_EQ(part.dtype(), dtype);
            EXPECT_EQ(part.bytes(), part.size() * int64_t(dtype_size(dtype)));
            const Tensor values = part.widened();
            for (int64_t b = 0; b < B; b++) {
                std::copy_n(values.data() + b * part.dim(1) * E, part.dim(1) * E, out.data() + (b * S + begin) * E);
            }
        };
        place(layer.self_attention(x.view().crop(1, 0, P), &cache), 0);
        for (int64_t s = P; s < S; s++) place(layer.decode_step(x.view().crop(1, s, s + 1), cache), s);
        EXPECT_EQ(difference(out, through_cache(layer, x32, P)), 0.0);

        const StoredTensor context = StoredTensor::rounded(input_type, testing::random_tensor({B, 5, E}, 76).view());
        const StoredTensor crossed = layer.cross_attention(x.view(), layer.conditioning_cache(context.view(), context.view()));
        const Tensor context32 = context.widened();
        EXPECT_EQ(crossed.dtype(), dtype);
        EXPECT_EQ(difference(crossed.widened(), layer.cross_attention(x32, layer.conditioning_cache(context32, context32))),
                  0.0);
    }
}

// A typed call refuses int8 codes and shapes the layer does not take, in one line, and the cache
// stays as it was.
TEST(StorageTypes, TypedCallsRefuseBadInputAndKeepTheCache) {
    const TestLayer t({64, 4, 2, 16, true, 10000.0});
    const CachedAttention layer = in_types(t, {DType::BF16, DType::BF16});
    KVCache cache = layer.make_cache(1, 8);
    layer.self_attention(StoredTensor::rounded(DType::BF16, testing::random_tensor({1, 3, 64}, 77).view()).view(), &cache);
    const std::vector<int8_t> codes(64);
    const StoredView int8_input(codes.data(), DType::Int8, {1, 1, 64}, {});
    testing::expect_contains(testing::error_message([&] { layer.decode_step(int8_input, cache); }), "int8");
    const StoredTensor narrow(DType::BF16, {1, 1, 32});
    testing::expect_contains(testing::error_message([&] { layer.decode_step(narrow.view(), cache); }), "[1, 1, 32]");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({3}));
}

}  // namespace
}  // namespace hattn

namespace hattn {
namespace {

// A BF16 checkpoint's layer in bf16 keeps its weights as stored: the bytes it holds are those of
// the checkpoint's tensors, biases (held in float32) aside.
TEST(StorageTypes, ALayerOfABf16CheckpointHoldsItsBytes) {
    const testing::TestLayer t({128, 4, 2, 32, false, 10000.0});
    testing::TempDir dir;
    write_safetensors(dir.file("bf16.safetensors"), t.tensors, DType::BF16);
    CachedAttentionConfig config = t.layer->config();
    config.storage = {DType::BF16, DType::BF16};
    const Weights weights = Weights::open(dir.file("bf16.safetensors"));
    int64_t checkpoint_bytes = 0;
    for (const auto &[name, tensor] : t.tensors) checkpoint_bytes += tensor.size() * 2;
    const CachedAttention layer(config, weights);
    EXPECT_LE(layer.weight_bytes(), checkpoint_bytes * 105 / 100);
    EXPECT_EQ(layer.weight_bytes(), checkpoint_bytes);  // no biases here
    // The same values as a bf16 layer of the float32 file, which rounds them when it is built.
    const CachedAttention from_f32 = t.with_config(config);
    const Tensor x = testing::random_tensor({1, 5, 128}, 75);
    EXPECT_EQ(testing::relative_l2(layer.self_attention(x), [&] {
                  const Tensor y = from_f32.self_attention(x);
                  return std::vector<double>(y.values().begin(), y.values().end());
              }()),
              0.0);
}

// An int8 group is one token's values of one KV head: one outlier (100 times the others) costs
// only its own group precision; every other group keeps its own scale.
TEST(StorageTypes, AnOutlierCostsOnlyItsOwnInt8Group) {
    KVCache cache(1, 2, 8, 4, "KV cache", DType::Int8);
    Tensor k = testing::random_tensor({1, 4, 2, 8}, 76);
    k.data()[(2 * 2 + 1) * 8 + 3] = 100.0f;  // token 2, head 1
    cache.append(k.view(), k.view());
    Tensor back({1, 2, 4, 8});
    widen_into(cache.keys(), back.view());
    for (int64_t t = 0; t < 4; t++) {
        for (int64_t h = 0; h < 2; h++) {
            float largest = 0.0f, error = 0.0f;
            for (int64_t d = 0; d < 8; d++) {
                const float x = k.data()[(t * 2 + h) * 8 + d];
                largest = std::max(largest, std::fabs(x));
                error = std::max(error, std::fabs(back.data()[(h * 4 + t) * 8 + d] - x));
            }
            // Half a code step of the group's own scale (largest / 127), and a float32 ulp or two.
            EXPECT_LE(error, largest / 254.0f * 1.0001f) << t << " " << h;
            if (t != 2 || h != 1) {  // the inputs are within 1
                EXPECT_LE(error, 1.0f / 254.0f * 1.0001f) << t << " " << h;
            }
        }
    }
    EXPECT_EQ(cache.keys().scales.shape, Shape({1, 2, 4}));
}

}  // namespace
}  // namespace hattn
