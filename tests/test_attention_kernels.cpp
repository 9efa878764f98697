// The RoPE, prefill and decode attention kernels against float64 references.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/half.h"
#include "hattn/int8_group.h"
#include "hattn/kernels/attention.h"
#include "hattn/kernels/rope.h"
#include "kernel_contract.h"
#include "kernel_variants.h"
#include "reference/attention.h"
#include "support/dot_forms.h"
#include "support/kernels_ran.h"
#include "support/compare.h"
#include "support/device.h"
#include "support/errors.h"
#include "support/kernel_checks.h"
#include "support/random.h"
#include "support/rows.h"

namespace hattn {
namespace {

// ---------------------------------------------------------------- RoPE

double rope_error(Shape shape, int64_t rotary_dim, std::vector<int32_t> start, uint32_t seed,
                  RopeLayout layout = RopeLayout::NeoX) {
    const Tensor x = testing::random_tensor(shape, seed);
    Tensor y(shape);
    int32_t last = 0;
    for (int32_t s : start) last = std::max<int32_t>(last, s + static_cast<int32_t>(shape[1]));
    const RopeTable table(rotary_dim, 10000.0, last);
    apply_rope(x.view(), table, start, y.view(), layout);
    return testing::relative_l2(y, reference::rope(x, rotary_dim, 10000.0, start, layout == RopeLayout::Interleaved));
}

TEST(Rope, FullHeadMatchesReference) { EXPECT_LE(rope_error({2, 9, 3, 64}, 64, {0, 5}, 1), 1e-6); }
TEST(Rope, PartialRotaryLeavesTheRest) { EXPECT_LE(rope_error({1, 7, 2, 32}, 16, {3}, 2), 1e-6); }
TEST(Rope, InterleavedFullAndPartial) {
    EXPECT_LE(rope_error({2, 5, 3, 16}, 16, {0, 7}, 5, RopeLayout::Interleaved), 1e-6);
    EXPECT_LE(rope_error({1, 6, 2, 24}, 8, {2}, 6, RopeLayout::Interleaved), 1e-6);
}
TEST(Rope, LargePositionsStayPrecise) { EXPECT_LE(rope_error({1, 4, 2, 128}, 128, {32760}, 3), 1e-6); }

TEST(Rope, ATableOfBadFrequenciesIsRefused) {
    EXPECT_THROW(RopeTable({1.0, std::nan("")}, 4), Error);
    EXPECT_THROW(RopeTable({-1.0}, 4), Error);
    EXPECT_THROW(RopeTable(std::vector<double>{}, 4), Error);
    EXPECT_EQ(RopeTable({1.0, 0.0}, 4).rotary_dim(), 4);
    EXPECT_EQ(testing::error_message([] { RopeTable({1.0}, 4, RopeAmplitude{}); }),
              "RoPE: a table's amplitude function is empty");
}

// Scaling parameters that are not finite would give zero or NaN frequencies.
TEST(Rope, ScalingThatIsNotFiniteIsRefused) {
    RopeScaling linear;
    linear.type = RopeScaling::Type::Linear;
    linear.factor = INFINITY;
    EXPECT_EQ(testing::error_message([&] { rope_frequencies(8, 100.0, linear); }),
              "RoPE: scaling factor must be positive and finite, got inf");
    EXPECT_EQ(testing::error_message([&] { rope_frequencies(8, INFINITY); }), "RoPE: base must be positive, got inf");
    RopeScaling dynamic;
    dynamic.type = RopeScaling::Type::Dynamic;
    dynamic.factor = 2.0;
    dynamic.length = std::nan("");
    EXPECT_EQ(testing::error_message([&] { rope_frequencies(8, 100.0, dynamic); }),
              "RoPE: dynamic scaling needs a finite length and original context");
}

// LongRoPE divides each pair's frequency by its own factor, the short set or (past the original
// context) the long one, and scales the table by attention_factor.
TEST(Rope, LongRopeDividesEachPairByItsFactor) {
    RopeScaling longrope;
    longrope.type = RopeScaling::Type::LongRope;
    longrope.short_factors = {1.0, 2.0, 4.0, 8.0};
    longrope.long_factors = {1.0, 3.0, 9.0, 27.0};
    longrope.attention_factor = 1.25;
    const std::vector<double> plain = rope_frequencies(8, 10000.0), short_set = rope_frequencies(8, 10000.0, longrope),
                              long_set = rope_frequencies(8, 10000.0, long_factor_scaling(longrope));
    for (size_t i = 0; i < plain.size(); i++) {
        EXPECT_DOUBLE_EQ(short_set[i], plain[i] / longrope.short_factors[i]) << i;
        EXPECT_DOUBLE_EQ(long_set[i], plain[i] / longrope.long_factors[i]) << i;
    }
    EXPECT_EQ(rope_amplitude(longrope), 1.25);
    EXPECT_EQ(testing::error_message([&] { rope_frequencies(12, 10000.0, longrope); }),
              "RoPE: longrope has 4 factors for the 6 pairs of rotary dim 12");
}

// YaRN at D = 32, theta 10000, over an original context of 2048: pairs 0-4 turn more than 32 times
// (kept), pairs 11-15 fewer than once (divided by the factor); in between the weight of the divided
// one rises by 1/7 a pair, rounded outwards from 4.03 and 10.05.
TEST(Rope, YarnKeepsFastPairsStretchesSlowOnesAndRampsBetween) {
    RopeScaling yarn;
    yarn.type = RopeScaling::Type::Yarn;
    yarn.factor = 4.0;
    yarn.original_context = 2048.0;
    const std::vector<double> f = rope_frequencies(32, 10000.0, yarn), plain = rope_frequencies(32, 10000.0);
    for (size_t i = 0; i < 16; i++) {
        const double stretched = std::clamp((double(i) - 4.0) / 7.0, 0.0, 1.0);
        EXPECT_NEAR(f[i], plain[i] * (1.0 - stretched + stretched / 4.0), 1e-15) << "pair " << i;
    }
    yarn.truncate = false;  // the ramp runs from 4.03 to 10.05
    EXPECT_NEAR(rope_frequencies(32, 10000.0, yarn)[7] / plain[7], 1.0 - 0.75 * (7.0 - 4.0313) / (10.0525 - 4.0313), 1e-4);
}

TEST(Rope, ATableScaledByItsAmplitude) {
    const RopeTable unit({0.5, 0.25}, 3), scaled({0.5, 0.25}, 3, 1.25);
    for (int64_t i = 0; i < 6; i++) {
        EXPECT_FLOAT_EQ(scaled.cos().data[i], 1.25f * unit.cos().data[i]);
        EXPECT_FLOAT_EQ(scaled.sin().data[i], 1.25f * unit.sin().data[i]);
    }
    EXPECT_FLOAT_EQ(scaled.extended(5).cos().data[9], 1.25f * float(std::cos(4 * 0.25)));  // growth keeps it
    EXPECT_THROW(RopeTable(std::vector<double>{1.0}, 2, 0.0), Error);
}

// Dynamic NTK: up to the original context the plain frequencies; past it, those of base
// base * (factor L / L0 - (factor - 1))^(d / (d - 2)) for the call's length L.
TEST(Rope, DynamicNtkRaisesTheBaseForLongerCalls) {
    RopeScaling dynamic;
    dynamic.type = RopeScaling::Type::Dynamic;
    dynamic.factor = 2.0;
    dynamic.original_context = 16;
    EXPECT_EQ(rope_frequencies(8, 100.0, dynamic_ntk_scaling(dynamic, 16)), rope_frequencies(8, 100.0));
    const double base = 100.0 * std::pow(2.0 * 40 / 16 - 1.0, 8.0 / 6.0);
    const std::vector<double> longer = rope_frequencies(8, 100.0, dynamic_ntk_scaling(dynamic, 40));
    for (int i = 0; i < 4; i++) EXPECT_DOUBLE_EQ(longer[i], std::pow(base, -2.0 * i / 8.0)) << i;
}

// A table of rows [first, end) is indexed by position, as a whole one.
TEST(Rope, ATableOfRowsFromAPositionOn) {
    const Tensor x = testing::random_tensor({2, 3, 2, 8}, 6);
    Tensor whole({2, 3, 2, 8}), part({2, 3, 2, 8});
    const std::vector<double> f = rope_frequencies(8, 10000.0);
    apply_rope(x.view(), RopeTable(f, 12), {5, 9}, whole.view());
    apply_rope(x.view(), RopeTable::rows(f, 5, 12), {5, 9}, part.view());
    EXPECT_EQ(part.values(), whole.values());
    EXPECT_EQ(testing::error_message([&] { apply_rope(x.view(), RopeTable::rows(f, 6, 12), {5, 9}, part.view()); }),
              "RoPE: positions 5 to 8 are outside the table's 6 to 12");
    EXPECT_THROW(RopeTable::rows(f, 6, 12).extended(20), Error);
}

// An amplitude per position over zero frequencies (Llama 4's query temperature): the kernel scales
// every dim of token p by it, and keeps doing so as the table grows.
TEST(Rope, ATableOfZeroFrequenciesScalesEachPosition) {
    const GrowingRopeTable by_position(std::vector<double>(4, 0.0), [](int64_t p) { return 1.0 + 0.5 * double(p); });
    const Tensor x = testing::random_tensor({2, 3, 2, 8}, 5);
    Tensor y({2, 3, 2, 8});
    by_position.covering(1);
    apply_rope(x.view(), *by_position.covering(7), {0, 4}, y.view());
    for (int64_t i = 0; i < x.size(); i++) {
        const int64_t b = i / 48, s = (i / 16) % 3, position = (b == 0 ? 0 : 4) + s;
        EXPECT_FLOAT_EQ(y.data()[i], x.data()[i] * float(1.0 + 0.5 * double(position))) << i;
    }
    EXPECT_EQ(testing::error_message([] { RopeTable({0.0}, 3, [](int64_t p) { return p < 2 ? 1.0 : -1.0; }); }),
              "RoPE: the amplitude at position 2 must be positive, got -1.000000");
}

TEST(Rope, WritesIntoAStridedView) {
    // Keys [1, S=3, Hkv=2, D=4] written into cache storage [1, Hkv=2, capacity=5, 4] at position 1.
    const Tensor x = testing::random_tensor({1, 3, 2, 4}, 4);
    Tensor cache({1, 2, 5, 4});
    const RopeTable table(4, 10000.0, 8);
    const TensorView into(cache.data() + 4, {1, 3, 2, 4}, {40, 4, 20, 1});
    apply_rope(x.view(), table, {1}, into);
    const std::vector<double> ref = reference::rope(x, 4, 10000.0, {1});
    for (int64_t s = 0; s < 3; s++)
        for (int64_t h = 0; h < 2; h++)
            for (int64_t d = 0; d < 4; d++) {
                EXPECT_NEAR(cache.data()[(h * 5 + 1 + s) * 4 + d], ref[(s * 2 + h) * 4 + d], 1e-6);
            }
    EXPECT_EQ(cache.data()[0], 0.0f);  // position 0 untouched
}

TEST(Rope, RejectsTablesTooShort) {
    Tensor x({1, 4, 1, 8}), y({1, 4, 1, 8});
    const RopeTable table(8, 10000.0, 2);
    const std::vector<int32_t> past_the_end{static_cast<int32_t>(table.positions())};
    EXPECT_THROW(apply_rope(x.view(), table, past_the_end, y.view()), Error);
}

// What a call holds is never changed or freed by growth (the old table grew in place, so a kernel
// running on one thread read memory another thread's call had just replaced).
TEST(Rope, AHeldTableOutlivesGrowth) {
    const GrowingRopeTable shared(8, 10000.0);
    const std::shared_ptr<const RopeTable> held = shared.covering(10);
    const float *cos = held->cos().data;
    const std::vector<float> before(cos, cos + 10 * 4);
    EXPECT_GE(shared.covering(5000)->positions(), 5000);
    EXPECT_EQ(held->positions(), 10);
    EXPECT_EQ(held->cos().data, cos);
    EXPECT_EQ(std::vector<float>(cos, cos + 10 * 4), before);
    EXPECT_EQ(shared.covering(7).get(), shared.covering(5000).get());  // no shrinking, no rebuild
}

// Threads asking a shared table for ever more positions all get tables whose values are those of a
// table built at once (growth copies and extends; it never changes a row another thread holds).
TEST(Rope, GrowingTableServesThreadsAtOnce) {
    const GrowingRopeTable shared(16, 10000.0);
    const RopeTable whole(16, 10000.0, 4096);
    constexpr int threads = 4;
    std::vector<int64_t> mismatches(threads, 0);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; i++) {
        pool.emplace_back([&, i] {
            for (int64_t n = 1 + i; n <= 4096; n = n * 3 / 2 + 1) {
                const std::shared_ptr<const RopeTable> table = shared.covering(n);
                if (table->positions() < n) mismatches[i]++;
                for (int64_t j = 0; j < n * 8; j++) {
                    mismatches[i] += table->cos().data[j] != whole.cos().data[j];
                    mismatches[i] += table->sin().data[j] != whole.sin().data[j];
                }
            }
        });
    }
    for (std::thread &th : pool) th.join();
    for (int i = 0; i < threads; i++) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

// ---------------------------------------------------------------- prefill

struct PrefillCase {
    std::string name;
    int64_t B, Sq, H, Hkv, D;
    std::vector<int32_t> kv_len;
    bool causal, masked;
    int64_t sampled_rows = 64;  // per sequence; long cases check a sample
    bool sinks = false;
    // Small in most cases: random q and k (uniform in -1..1) give scores of about +-1 at the
    // default scale. Gemma 2's 50 is checked with a scale that spreads them to about +-30.
    float softcap = 0.0f;
    float scale = 0.0f;  // 0: 1 / sqrt(D)
    bool bf16_queries = false;  // queries of bf16 values (a bf16 layer's), which bf16 pairs take
};

std::ostream &operator<<(std::ostream &os, const PrefillCase &c) { return os << c.name; }

// Runs the kernel on seeded data and returns its error against the reference.
// gpt-oss-like sinks for H heads: most near the scores' scale, so that they share the weight; one
// far above every score (the outputs all but vanish) and one far below (no effect).
std::vector<float> test_sinks(int64_t H, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> near(-2.0f, 3.0f);
    std::vector<float> sinks(H);
    for (float &s : sinks) s = near(rng);
    if (H > 2) sinks[H - 1] = 40.0f;
    if (H > 3) sinks[1] = -60.0f;
    return sinks;
}

// Sets the cache rows [B, Hkv, capacity, D] from each sequence's kv_len on to `value`.
void poison_rows_past(Tensor &k, Tensor &v, const std::vector<int32_t> &kv_len, float value) {
    const int64_t Hkv = k.shape()[1], capacity = k.shape()[2], D = k.shape()[3];
    for (size_t b = 0; b < kv_len.size(); b++)
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t j = kv_len[b]; j < capacity; j++)
                for (int64_t d = 0; d < D; d++) {
                    k.data()[((int64_t(b) * Hkv + h) * capacity + j) * D + d] = value;
                    v.data()[((int64_t(b) * Hkv + h) * capacity + j) * D + d] = value;
                }
}

// A cache's storage in `type`: k's values rounded to it in place (so that the reference sees the
// values the kernel reads) and, for 16-bit types, their bits; for int8, codes and a scale per row.
struct StoredCache {
    std::vector<uint16_t> bits;
    std::vector<int8_t> codes;
    std::vector<float> scales;
    StoredView view;

    StoredCache(Tensor &k, DType type) {
        if (type == DType::F32) {
            view = std::as_const(k).view();
            return;
        }
        if (type == DType::Int8) {
            const int64_t D = k.shape().back(), rows = k.size() / D;
            codes.resize(k.size());
            scales.resize(rows);
            for (int64_t r = 0; r < rows; r++) {
                float *row = k.data() + r * D;
                scales[r] = quantize_group(row, codes.data() + r * D, D);
                for (int64_t d = 0; d < D; d++) row[d] = float(codes[r * D + d]) * scales[r];
            }
            view = StoredView(codes.data(), type, k.shape(), {});
            view.scales = ConstTensorView(scales.data(), Shape(k.shape().begin(), k.shape().end() - 1));
            return;
        }
        round_to(type, k.data(), k.size());
        bits.resize(k.size());
        to_bits(type, k.data(), bits.data(), k.size());
        view = StoredView(bits.data(), type, k.shape(), {});
    }
};

// The kernel caps at kernel_softcap where given (else as the case says); the reference at the case's.
// The cache holds `cache` values.
double prefill_error(const PrefillCase &c, uint32_t seed, std::optional<float> kernel_softcap = std::nullopt,
                     DType cache = DType::F32) {
    int64_t capacity = 0;
    for (int32_t len : c.kv_len) capacity = std::max<int64_t>(capacity, len);
    capacity += 3;  // storage past the visible keys must never be read
    Tensor q = testing::random_tensor({c.B, c.Sq, c.H, c.D}, seed);
    if (c.bf16_queries) round_to(DType::BF16, q.data(), q.size());
    Tensor k = testing::random_tensor({c.B, c.Hkv, capacity, c.D}, seed + 1);
    Tensor v = testing::random_tensor({c.B, c.Hkv, capacity, c.D}, seed + 2);
    // Poison the unused tail: any read of it would show in the output.
    poison_rows_past(k, v, c.kv_len, 1e4f);
    const StoredCache k_stored(k, cache), v_stored(v, cache);
    const int64_t mask_keys = capacity;
    std::vector<uint8_t> mask_bytes;
    std::vector<reference::QueryRow> must;
    if (c.masked) {
        std::mt19937 rng(seed + 3);
        mask_bytes.resize(c.B * c.Sq * mask_keys);
        for (auto &m : mask_bytes) m = rng() % 3 == 0;
        // Row (0, Sq/2) fully masked: it must come out as zeros.
        std::fill_n(mask_bytes.begin() + (c.Sq / 2) * mask_keys, mask_keys, 1);
        must.push_back({0, c.Sq / 2});
    }
    const MaskView mask{mask_bytes.data(), {c.B, 1, c.Sq, mask_keys}};
    const float scale = c.scale > 0 ? c.scale : 1.0f / std::sqrt(float(c.D));
    Tensor out({c.B, c.Sq, c.H, c.D});
    const std::vector<float> sinks = test_sinks(c.H, seed + 4);
    const ConstTensorView sinks_view(sinks.data(), {c.H});
    attention_prefill(q.view(), k_stored.view, v_stored.view, c.kv_len, scale, c.causal,
                      c.masked ? &mask : nullptr, out.view(), c.sinks ? &sinks_view : nullptr,
                      kernel_softcap.value_or(c.softcap));

    const auto rows = testing::sample_rows(c.B, c.Sq, c.sampled_rows, seed, must);
    const auto ref = reference::attention(q, k, v, c.kv_len, scale, c.causal,
                                          c.masked ? &mask_bytes : nullptr, mask_keys, rows,
                                          c.sinks ? &sinks : nullptr, c.softcap);
    return testing::relative_l2(testing::gather_rows(out, rows), ref);
}

// Soft-capped prefill (Gemma 2), also checked to differ from the uncapped output below.
const std::vector<PrefillCase> &softcap_prefill_cases() {
    static const std::vector<PrefillCase> cases{
        PrefillCase{"softcap_gqa_d256_causal", 2, 21, 8, 4, 256, {21, 50}, true, false, 64, false, 0.5f},
        PrefillCase{"softcap_masked_sinks", 2, 11, 4, 2, 16, {23, 23}, false, true, 64, true, 0.4f},
        PrefillCase{"softcap_long_keys", 1, 40, 4, 2, 64, {2100}, true, false, 64, false, 0.6f},
        PrefillCase{"softcap_50_wide_scores", 2, 33, 4, 2, 64, {33, 90}, true, false, 64, false, 50.0f, 10.0f},
    };
    return cases;
}

class AttentionPrefill : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(AttentionPrefill, MatchesFloat64Reference) { EXPECT_LE(prefill_error(GetParam(), 7), 1e-5); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionPrefill,
    ::testing::Values(
        PrefillCase{"mha_d64_causal", 1, 37, 4, 4, 64, {37}, true, false},
        PrefillCase{"gqa_d32_causal_offset", 2, 13, 8, 2, 32, {29, 40}, true, false},
        PrefillCase{"mqa_d8_causal", 1, 17, 6, 1, 8, {17}, true, false},
        PrefillCase{"d1", 1, 9, 2, 2, 1, {9}, true, false},
        PrefillCase{"d80_full", 1, 33, 2, 1, 80, {70}, false, false},
        PrefillCase{"d128_causal", 1, 65, 2, 2, 128, {65}, true, false},
        PrefillCase{"one_query", 2, 1, 4, 2, 64, {300, 5}, true, false},
        PrefillCase{"ragged_batch", 3, 5, 4, 4, 16, {5, 17, 9}, true, false},
        PrefillCase{"masked_full", 2, 11, 4, 2, 16, {23, 23}, false, true},
        PrefillCase{"masked_causal", 1, 20, 2, 2, 32, {20}, true, true},
        PrefillCase{"sk4096_few_queries", 1, 64, 2, 1, 64, {4096}, true, false},
        PrefillCase{"s4096_causal_sampled", 1, 4096, 2, 1, 64, {4096}, true, false, 12},
        PrefillCase{"sinks_gqa_causal", 2, 21, 8, 2, 64, {21, 50}, true, false, 64, true},
        PrefillCase{"sinks_masked", 2, 11, 4, 2, 16, {23, 23}, false, true, 64, true},
        PrefillCase{"sinks_long_keys", 1, 40, 6, 3, 32, {2100}, true, false, 64, true}),
    [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Softcap, AttentionPrefill, ::testing::ValuesIn(softcap_prefill_cases()),
                         [](const auto &info) { return info.param.name; });

TEST(AttentionPrefillErrors, CausalNeedsTheQueriesInTheCache) {
    Tensor q({1, 4, 2, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8}), out({1, 4, 2, 8});
    EXPECT_THROW(attention_prefill(q.view(), k.view(), v.view(), {3}, 1.0f, true, nullptr, out.view()),
                 Error);
}

TEST(AttentionPrefillErrors, LengthBeyondCapacityIsRejected) {
    Tensor q({1, 1, 2, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8}), out({1, 1, 2, 8});
    EXPECT_THROW(attention_prefill(q.view(), k.view(), v.view(), {9}, 1.0f, false, nullptr, out.view()),
                 Error);
}

TEST(AttentionPrefillErrors, HeadsMustDivide) {
    Tensor q({1, 1, 3, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8}), out({1, 1, 3, 8});
    EXPECT_THROW(attention_prefill(q.view(), k.view(), v.view(), {4}, 1.0f, false, nullptr, out.view()),
                 Error);
}

// A mask's entries are counted in int32 by the kernel: a larger one (never read here: the check
// comes first) is named, not read with wrapped strides.
TEST(AttentionPrefillErrors, AMaskPastInt32EntriesIsRefused) {
    Tensor q({1, 2, 2, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8}), out({1, 2, 2, 8});
    const uint8_t byte = 0;
    const MaskView huge{&byte, {1, 1, 2, (int64_t{1} << 32) + 8}};
    EXPECT_EQ(testing::error_message(
                  [&] { attention_prefill(q.view(), k.view(), v.view(), {4}, 1.0f, false, &huge, out.view()); }),
              "attention mask [1, 1, 2, 4294967304] has more than 2^31 - 1 entries");
}

// ---------------------------------------------------------------- decode

struct DecodeCase {
    int64_t H, Hkv, D;
    std::vector<int32_t> kv_len;
    bool sinks = false;
    // Sequence b's query sees its keys first_key[b] .. kv_len[b] - 1 (a sliding window); empty:
    // every key.
    std::vector<int32_t> first_key = {};
    float softcap = 0.0f;  // as PrefillCase's
    float scale = 0.0f;    // 0: 1 / sqrt(D)
    bool bf16_queries = false;  // as PrefillCase's
    // Queries rounded per head to int8 codes times a scale (quantize_group), as the int8-dot
    // kernel rounds them: its QK is then exact, so the reference checks the rest of it.
    bool int8_queries = false;
};

// Runs the decode kernel on seeded data and returns its error against the reference. The kernel
// caps at kernel_softcap where given (else as the case says); the reference at the case's.
double decode_error(const DecodeCase &c, uint32_t seed, std::optional<float> kernel_softcap = std::nullopt,
                    DType cache = DType::F32) {
    const int64_t B = c.kv_len.size();
    int64_t capacity = 1;
    for (int32_t len : c.kv_len) capacity = std::max<int64_t>(capacity, len + 2);
    Tensor q = testing::random_tensor({B, 1, c.H, c.D}, seed);
    if (c.bf16_queries) round_to(DType::BF16, q.data(), q.size());
    std::vector<int8_t> codes(c.D);
    for (int64_t row = 0; c.int8_queries && row < B * c.H; row++) {
        float *values = q.data() + row * c.D;
        const float step = quantize_group(values, codes.data(), c.D);
        for (int64_t d = 0; d < c.D; d++) values[d] = float(codes[d]) * step;
    }
    Tensor k = testing::random_tensor({B, c.Hkv, capacity, c.D}, seed + 1);
    Tensor v = testing::random_tensor({B, c.Hkv, capacity, c.D}, seed + 2);
    // Rows past each sequence are unwritten cache (a NaN-filled allocation, say): no output may
    // depend on them, also where a sequence sees no key at all.
    poison_rows_past(k, v, c.kv_len, std::nanf(""));
    const StoredCache k_stored(k, cache), v_stored(v, cache);
    const float scale = c.scale > 0 ? c.scale : 1.0f / std::sqrt(float(c.D));
    Tensor out({B, 1, c.H, c.D});
    const std::vector<float> sinks = test_sinks(c.H, seed + 3);
    const ConstTensorView sinks_view(sinks.data(), {c.H});
    const bool windowed = !c.first_key.empty();
    attention_decode(ConstTensorView(q.data(), {B, c.H, c.D}), k_stored.view, v_stored.view, c.kv_len, scale,
                     TensorView(out.data(), {B, c.H, c.D}), c.sinks ? &sinks_view : nullptr,
                     windowed ? &c.first_key : nullptr, kernel_softcap.value_or(c.softcap));
    std::vector<reference::QueryRow> rows;
    for (int64_t b = 0; b < B; b++) rows.push_back({b, 0});
    // The keys before each first key are masked in the reference.
    std::vector<uint8_t> hidden(B * capacity, 0);
    for (int64_t b = 0; windowed && b < B; b++) std::fill_n(hidden.begin() + b * capacity, c.first_key[b], 1);
    // A decode query is the newest token: causal against kv_len keys equals seeing them all.
    return testing::relative_l2(out, reference::attention(q, k, v, c.kv_len, scale, false, windowed ? &hidden : nullptr,
                                                          capacity, rows, c.sinks ? &sinks : nullptr, c.softcap));
}

TEST(AttentionDecode, GqaRaggedBatch) { EXPECT_LE(decode_error({8, 2, 64, {1, 700, 1500}}, 11), 1e-5); }
TEST(AttentionDecode, MhaLongCache) { EXPECT_LE(decode_error({4, 4, 128, {4096}}, 12), 1e-5); }
// From D = 128 the x86 QK takes one key row per step (its own specialisation per group size).
TEST(AttentionDecode, GqaWideHeadDimGroupsOf4And2) {
    EXPECT_LE(decode_error({16, 4, 128, {600, 1100}}, 15), 1e-5);
    EXPECT_LE(decode_error({8, 4, 128, {513}}, 16), 1e-5);
    EXPECT_LE(decode_error({3, 1, 256, {300}}, 17), 1e-5);
}
// One key past a chunk of 512 (ARM) and of 1024 (x86): the last chunk holds a single key.
TEST(AttentionDecode, MqaOddHeadDim) { EXPECT_LE(decode_error({6, 1, 24, {33, 513, 1025}}, 13), 1e-5); }
TEST(AttentionDecode, EmptyCacheGivesZeros) { EXPECT_LE(decode_error({2, 2, 8, {0}}, 14), 1e-12); }
TEST(AttentionDecode, SinksTakeWeightFromTheKeys) {
    EXPECT_LE(decode_error({8, 2, 64, {1, 700, 1500}, true}, 18), 1e-5);
    EXPECT_LE(decode_error({4, 4, 128, {2100}, true}, 19), 1e-5);
    EXPECT_LE(decode_error({4, 1, 24, {0, 33}, true}, 20), 1e-5);  // an empty cache still gives zeros
}

// Each sequence's own window in one call: starts inside the first chunk, past it, at the last key
// and at the end (no key: zeros, or the sink alone, which also gives zeros).
TEST(AttentionDecode, EachSequenceFromItsFirstKey) {
    const std::vector<int32_t> kv_len{130, 1500, 700, 1500, 40}, first{3, 1100, 699, 1500, 0};
    EXPECT_LE(decode_error({8, 2, 64, kv_len, false, first}, 21), 1e-5);
    EXPECT_LE(decode_error({8, 2, 64, kv_len, true, first}, 22), 1e-5);
    EXPECT_LE(decode_error({4, 4, 128, kv_len, false, first}, 23), 1e-5);
}

TEST(AttentionDecode, AFirstKeyOutsideTheSequenceIsRefused) {
    Tensor q({2, 2, 8}), k({2, 2, 8, 8}), v({2, 2, 8, 8});
    Tensor out({2, 2, 8}, std::vector<float>(32, 7.0f));
    const auto error = [&](std::vector<int32_t> first_key) {
        return testing::error_message(
            [&] { attention_decode(q.view(), k.view(), v.view(), {4, 4}, 1.0f, out.view(), nullptr, &first_key); });
    };
    EXPECT_EQ(error({0, 5}), "attention decode: first key 5 of sequence 1 outside 0..4");
    EXPECT_EQ(error({-1, 0}), "attention decode: first key -1 of sequence 0 outside 0..4");
    EXPECT_EQ(error({0}), "attention decode: one first key per sequence, got 1 for 2 sequences");
    EXPECT_EQ(out.values(), std::vector<float>(32, 7.0f));  // the output is untouched
}

// Soft-capped decode (Gemma 2), each with its seed; also checked to differ from the uncapped output.
const std::vector<std::pair<DecodeCase, uint32_t>> &softcap_decode_cases() {
    static const std::vector<std::pair<DecodeCase, uint32_t>> cases{
        {{8, 4, 256, {1, 700, 1500}, false, {}, 0.5f}, 47},
        {{4, 4, 128, {2100}, true, {}, 0.6f}, 48},
        {{8, 2, 64, {130, 1500, 40}, false, {3, 1100, 40}, 0.4f}, 49},
        {{8, 4, 64, {700, 33}, false, {}, 50.0f, 10.0f}, 56},  // Gemma 2's cap
    };
    return cases;
}

TEST(AttentionDecode, SoftcapBoundsTheScores) {
    for (const auto &[c, seed] : softcap_decode_cases()) EXPECT_LE(decode_error(c, seed), 1e-5) << seed;
}

// Soft-capping's effect is large enough for the comparisons above to see: the kernel without the
// cap misses the capped reference by far more than their tolerance, case by case.
TEST(AttentionSoftcap, LeavingItOutIsSeen) {
    for (const auto &[c, seed] : softcap_decode_cases()) EXPECT_GT(decode_error(c, seed, 0.0f), 1e-3) << seed;
    for (const PrefillCase &c : softcap_prefill_cases()) EXPECT_GT(prefill_error(c, 7, 0.0f), 1e-3) << c.name;
}

TEST(AttentionSoftcap, ZeroOrPositiveAndFinite) {
    Tensor q({1, 2, 4, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8});
    Tensor out({1, 2, 4, 8}, std::vector<float>(64, 7.0f));
    EXPECT_EQ(testing::error_message([&] {
                  attention_prefill(q.view(), k.view(), v.view(), {4}, 1.0f, true, nullptr, out.view(), nullptr, -1.0f);
              }),
              "attention: softcap must be 0 (none) or positive and finite, got -1.000000");
    Tensor q1({1, 4, 8}), out1({1, 4, 8});
    EXPECT_EQ(testing::error_message([&] {
                  attention_decode(q1.view(), k.view(), v.view(), {4}, 1.0f, out1.view(), nullptr, nullptr, INFINITY);
              }),
              "attention decode: softcap must be 0 (none) or positive and finite, got inf");
    EXPECT_EQ(out.values(), std::vector<float>(64, 7.0f));
}

// The sinks' effect is large enough for the comparison above to see: without them the same
// outputs miss the reference that has them by far more than the tolerance.
TEST(AttentionSinks, LeavingThemOutIsSeen) {
    const Tensor q = testing::random_tensor({1, 1, 4, 32}, 40);
    const Tensor k = testing::random_tensor({1, 2, 64, 32}, 41), v = testing::random_tensor({1, 2, 64, 32}, 42);
    const std::vector<float> sinks = test_sinks(4, 43);
    Tensor out({1, 1, 4, 32});
    attention_decode(ConstTensorView(q.data(), {1, 4, 32}), k.view(), v.view(), {64}, 0.2f,
                     TensorView(out.data(), {1, 4, 32}));
    const auto with_sinks = reference::attention(q, k, v, {64}, 0.2, false, nullptr, 0, {{0, 0}}, &sinks);
    EXPECT_GT(testing::relative_l2(out, with_sinks), 0.1);
}

TEST(AttentionSinks, OneFiniteSinkPerQueryHead) {
    Tensor q({1, 2, 4, 8}), k({1, 2, 8, 8}), v({1, 2, 8, 8}), out({1, 2, 4, 8});
    const std::vector<float> two(2), infinite{0.0f, 1.0f, INFINITY, 0.0f};
    const ConstTensorView wrong(two.data(), {2}), not_finite(infinite.data(), {4});
    EXPECT_EQ(testing::error_message([&] {
                  attention_prefill(q.view(), k.view(), v.view(), {4}, 1.0f, true, nullptr, out.view(), &wrong);
              }),
              "attention: sinks must be [H] = [4] (one per query head), got [2]");
    Tensor q1({1, 4, 8}), out1({1, 4, 8});
    EXPECT_EQ(testing::error_message([&] {
                  attention_decode(q1.view(), k.view(), v.view(), {4}, 1.0f, out1.view(), &not_finite);
              }),
              "attention decode: sink 2 is not finite");
}

// ---------------------------------------------------------------- shapes past a GPU block

// Prefill with a head dim the block tiles lack (Gemma's 256, say) runs the rows schedule. Decode
// takes a large head group (MQA) in blocks of up to 8 heads and refuses head dims past its K
// tile's, saying so. PoCL has room for any of these, so the CUDA run
// (HATTN_REQUIRE_CUDA, scripts/device-check) is what shows they launch.
class AttentionOnGpu : public testing::OnEachGpu {};
TEST_P(AttentionOnGpu, WideHeadsRunTheRowsSchedule) {
    const testing::OnDevice on(GetParam());
    const std::string api = device_name(GetParam());
    EXPECT_LE(prefill_error({"wide", 2, 21, 4, 2, 256, {21, 40}, true, false}, 60), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill"), api + "_rows");
    EXPECT_LE(prefill_error({"wide masked", 1, 15, 2, 1, 192, {21}, false, true}, 61), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill_masked"), api + "_rows");
    EXPECT_LE(prefill_error({"block tiles", 1, 21, 4, 2, 128, {40}, true, false}, 62), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill"), api + "_hand");
}
// A device that allows a block less shared memory (pretended here: the probe's figure replaced)
// runs the small tiles, or at 99 KB and D = 128 the rows schedule.
TEST_P(AttentionOnGpu, LessSharedMemoryRunsTheSmallTilesOrRows) {
    const testing::OnDevice on(GetParam());
    const std::string api = device_name(GetParam());
    std::atomic<int64_t> &allowed =
        GetParam() == Device::CUDA ? detail::cuda_shared_bytes_per_block : detail::opencl_local_bytes_per_block;
    struct Restore {
        std::atomic<int64_t> &allowed;
        const int64_t probed;
        ~Restore() { allowed = probed; }
    } restore{allowed, allowed.exchange(163 * 1024)};  // an A100's
    EXPECT_LE(prefill_error({"small tiles", 1, 70, 4, 2, 128, {70}, true, false}, 69), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill"), api + "_small_tiles");
    EXPECT_LE(prefill_error({"small tiles masked", 1, 40, 2, 1, 96, {75}, false, true}, 70), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill_masked"), api + "_small_tiles");
    allowed = 99 * 1024;
    EXPECT_LE(prefill_error({"too little for either", 1, 21, 2, 1, 128, {21}, true, false}, 71), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill"), api + "_rows");
    EXPECT_LE(prefill_error({"small tiles at 99 KB", 1, 21, 2, 1, 64, {21}, true, false}, 72), 1e-5);
    EXPECT_EQ(last_variant_run("attention_prefill"), api + "_small_tiles");
}
TEST_P(AttentionOnGpu, LargeHeadGroupsAndWideHeadsDecode) {
    const testing::OnDevice on(GetParam());
    EXPECT_LE(decode_error({71, 1, 64, {300, 1030}}, 63), 1e-5);    // Falcon 7B's MQA
    EXPECT_LE(decode_error({32, 2, 128, {1030}, true}, 64), 1e-5);  // 16 heads a KV head, sinks
    EXPECT_LE(decode_error({12, 2, 256, {77, 700}}, 65), 1e-5);     // 6 heads a KV head, D = 256
    const Tensor q = testing::random_tensor({1, 1, 2, 512}, 66);
    const Tensor k = testing::random_tensor({1, 1, 8, 512}, 67), v = testing::random_tensor({1, 1, 8, 512}, 68);
    Tensor out({1, 1, 2, 512});
    testing::expect_contains(testing::error_message([&] {
                                 attention_decode(ConstTensorView(q.data(), {1, 2, 512}), k.view(), v.view(), {8},
                                                  0.1f, TensorView(out.data(), {1, 2, 512}));
                             }),
                             "head dim 512 is past the GPU kernel's 256");
}

HATTN_INSTANTIATE_ON_EACH_GPU(AttentionOnGpu);

// The prefill's block tiles run where the device allows their shared memory (an H200 227 KB a
// block), the small tiles where it allows theirs (an A100's 163 KB at D = 128; many GPUs allow
// 99 KB), the rows schedule elsewhere, each saying why.
TEST(AttentionPrefillOnGpus, BlockTilesRunWhereTheirSharedMemoryFits) {
    using detail::gpu_prefill_fit;
    auto fits = [](const detail::GpuPrefillFit &f) { return f.tiles_refused.empty() && f.small_tiles_refused.empty(); };
    EXPECT_TRUE(fits(gpu_prefill_fit(128, 227 * 1024)));
    EXPECT_TRUE(fits(gpu_prefill_fit(128, 0)));  // unknown: taken as enough
    EXPECT_TRUE(fits(gpu_prefill_fit(64, 163 * 1024)));

    const detail::GpuPrefillFit a100 = gpu_prefill_fit(128, 163 * 1024);
    EXPECT_EQ(a100.tiles_refused,
              "head dim 128 (its block tiles take up to 212 KB of shared memory a block; the device allows 163 KB)");
    EXPECT_EQ(a100.small_tiles_refused, "");

    const detail::GpuPrefillFit small = gpu_prefill_fit(128, 99 * 1024);
    EXPECT_NE(small.tiles_refused, "");
    EXPECT_EQ(small.small_tiles_refused, "head dim 128 (its small block tiles take up to 140 KB of shared memory a "
                                         "block; the device allows 99 KB)");
    EXPECT_EQ(gpu_prefill_fit(80, 99 * 1024).small_tiles_refused, "");

    const detail::GpuPrefillFit wide = gpu_prefill_fit(256, 227 * 1024);
    EXPECT_EQ(wide.tiles_refused, "head dim 256 (the block tiles take 16, 32, 64, 80, 96, 128)");
    EXPECT_EQ(wide.small_tiles_refused, wide.tiles_refused);
}

// ---------------------------------------------------------------- forced-variant checks

// The kernels over caches of 16-bit values or int8 codes: the f32 checks' shapes (generic and
// specialised head dims, ragged lengths, sinks, soft-capping, windows) on caches holding values of
// the type (the reference reads the values the codes and scales stand for).
bool register_16_bit_cache_checks(DType type, const std::string &suffix) {
    testing::register_kernel_check(
        "attention_prefill_" + suffix,
        {[type] {
             return std::max({prefill_error({"check", 2, 19, 4, 2, 32, {19, 30}, true, false}, 122, std::nullopt, type),
                              prefill_error({"query tiles", 1, 70, 2, 1, 128, {70}, true, false}, 173, std::nullopt, type),
                              prefill_error({"sinks", 2, 19, 4, 2, 32, {19, 30}, true, false, 64, true}, 136, std::nullopt, type)});
         },
         1e-5, [type] { return prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, true, false, 8}, 126, std::nullopt, type); }});
    testing::register_kernel_check(
        "attention_prefill_masked_" + suffix,
        {[type] {
             return std::max(prefill_error({"check", 1, 15, 2, 1, 16, {21}, false, true}, 123, std::nullopt, type),
                             prefill_error({"softcap", 1, 15, 4, 1, 16, {21}, false, true, 64, false, 0.4f}, 154, std::nullopt, type));
         },
         1e-5, [type] { return prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, false, true, 8}, 127, std::nullopt, type); }});
    testing::register_kernel_check(
        "attention_decode_" + suffix,
        {[type] {
             return std::max({decode_error({4, 2, 40, {77, 1030}}, 124, std::nullopt, type),
                              decode_error({8, 4, 128, {300}}, 132, std::nullopt, type),
                              decode_error({2, 2, 256, {200}}, 135, std::nullopt, type),
                              decode_error({8, 2, 64, {0, 1030}, true}, 144, std::nullopt, type),
                              decode_error({8, 4, 64, {300, 1030}, false, {}, 0.5f}, 155, std::nullopt, type),
                              decode_error({8, 2, 64, {1030, 9, 1}, true, {700, 2, 1}}, 145, std::nullopt, type)});
         },
         1e-5, [type] { return decode_error({32, 8, 128, {4096}}, 128, std::nullopt, type); }});
    return true;
}

// Every finite half an f16 cache holds widens to its value: zeros, subnormals and 65504 too (the
// kernels' integer widening, schedules::widen_to_f32, with its rebias applied to the probability
// on CPUs). One key per sequence, so each output row is its value row (the probability is 1, up to
// the exp's rounding): in decode and in prefill.
TEST(AttentionF16Cache, EveryFiniteHalfWidensToItsValue) {
    std::vector<uint16_t> halves;
    for (uint32_t bits = 0; bits < 0x10000; bits++) {
        if ((bits & 0x7c00) != 0x7c00) halves.push_back(static_cast<uint16_t>(bits));  // not inf or NaN
    }
    const int64_t D = 128, B = static_cast<int64_t>(halves.size()) / D;
    ASSERT_EQ(B * D, static_cast<int64_t>(halves.size()));
    const std::vector<uint16_t> keys(halves.size(), 0);
    const StoredView k(keys.data(), DType::F16, {B, 1, 1, D}, {D, D, D, 1});
    const StoredView v(halves.data(), DType::F16, {B, 1, 1, D}, {D, D, D, 1});
    const auto expect_values = [&](const Tensor &out, const char *kernel) {
        int wrong = 0;
        for (size_t i = 0; i < halves.size(); i++) {
            const float want = from_f16_bits(halves[i]);
            if (!(std::fabs(out.data()[i] - want) <= 1e-6f * std::fabs(want)) && wrong++ < 5) {
                ADD_FAILURE() << kernel << ": half 0x" << std::hex << halves[i] << std::dec << ": " << out.data()[i]
                              << ", not " << want;
            }
        }
        EXPECT_EQ(wrong, 0) << kernel;
    };
    const Tensor q({B, 1, D});
    Tensor out({B, 1, D});
    attention_decode(q.view(), k, v, std::vector<int32_t>(B, 1), 1.0f, out.view());
    expect_values(out, "decode");
    const Tensor prefill_q({B, 1, 1, D});
    Tensor prefill_out({B, 1, 1, D});
    attention_prefill(prefill_q.view(), k, v, std::vector<int32_t>(B, 1), 1.0f, false, nullptr, prefill_out.view());
    expect_values(prefill_out, "prefill");
}

// bf16 pairs round the queries to bf16, so a bf16 cache's kernels take them only for queries of
// bf16 values and an even head dim (and decode only for groups); float32 queries are multiplied as
// they are. Pairs are forced, so that any x86 CPU checks the choice (one without AVX512-BF16 runs
// the pairs kernels' fallback sub-target).
TEST(AttentionBf16Pairs, TakenOnlyForBf16QueriesOfEvenHeadDims) {
    set_bf16_dot_form(Bf16DotForm::Pairs);
    const bool pairs_here = current_device() == Device::CPU && detail::bf16_pairs_chosen();
    set_bf16_dot_form(Bf16DotForm::Auto);
    if (!pairs_here) GTEST_SKIP() << "no bf16 pairs kernels here";
    // The one kernel a call ran, its error checked against float64.
    const auto kernel_run = [](const std::function<double()> &error) {
        return testing::only_kernel_ran([&] { EXPECT_LE(testing::with_bf16_form(Bf16DotForm::Pairs, error), 1e-5); });
    };
    const auto prefill_run = [&](PrefillCase c, bool bf16_queries) {
        c.bf16_queries = bf16_queries;
        return kernel_run([&] { return prefill_error(c, 301, std::nullopt, DType::BF16); });
    };
    const auto decode_run = [&](DecodeCase c, bool bf16_queries) {
        c.bf16_queries = bf16_queries;
        return kernel_run([&] { return decode_error(c, 302, std::nullopt, DType::BF16); });
    };
    const PrefillCase even{"even", 1, 20, 4, 2, 64, {20}, true, false}, odd{"odd", 1, 20, 4, 2, 33, {20}, true, false};
    EXPECT_EQ(prefill_run(even, true), "attention_prefill_bf16_pairs");
    EXPECT_EQ(prefill_run(even, false), "attention_prefill_bf16");
    EXPECT_EQ(prefill_run(odd, true), "attention_prefill_bf16");
    EXPECT_EQ(decode_run({8, 2, 64, {300}}, true), "attention_decode_bf16_pairs");
    EXPECT_EQ(decode_run({8, 2, 64, {300}}, false), "attention_decode_bf16");
    EXPECT_EQ(decode_run({8, 2, 33, {300}}, true), "attention_decode_bf16");
    EXPECT_EQ(decode_run({4, 4, 64, {300}}, true), "attention_decode_bf16");  // no group
}

// An int8 cache's decode QK in integer dot products (VNNI) where the contract's head dims and the
// form allow; any other call widens the codes. The form is forced, so that any x86 CPU checks the
// choice (one without VNNI runs the kernel's fallback sub-target).
TEST(AttentionInt8Dots, TakenForTheContractsHeadDims) {
    const bool dots_here = testing::with_integer_form(IntegerDotForm::U8S8, [] {
        return current_device() == Device::CPU && detail::int8_dots_chosen() ? 1.0 : 0.0;
    }) > 0;
    if (!dots_here) GTEST_SKIP() << "no int8 dot-product kernel here";
    const auto decode_run = [](IntegerDotForm form, DecodeCase c) {
        c.int8_queries = true;
        return testing::only_kernel_ran([&] {
            EXPECT_LE(testing::with_integer_form(form, [&] { return decode_error(c, 402, std::nullopt, DType::Int8); }),
                      1e-5);
        });
    };
    for (int64_t D : kernel_contract::int8_dots_head_dims) {
        EXPECT_EQ(decode_run(IntegerDotForm::U8S8, {8, 2, D, {300}}), "attention_decode_int8_dots") << D;
        EXPECT_EQ(decode_run(IntegerDotForm::S8S8, {8, 2, D, {300}}), "attention_decode_int8") << D;
    }
    EXPECT_EQ(decode_run(IntegerDotForm::U8S8, {8, 2, 96, {300}}), "attention_decode_int8");
    EXPECT_EQ(decode_run(IntegerDotForm::U8S8, {4, 4, 32, {300}}), "attention_decode_int8");
}

// Rounding the queries to int8 costs accuracy the widened codes do not: over queries of any values
// the error against float64 (over the cache's stored values) is that rounding's, at most about
// what an int8 cache's own rounding costs a layer's output (README: about 6e-3), and not 0.
TEST(AttentionInt8Dots, QueryCodesCostLittleAccuracy) {
    if (!testing::with_integer_form(IntegerDotForm::U8S8, [] { return detail::int8_dots_chosen() ? 1.0 : 0.0; })) {
        GTEST_SKIP() << "no int8 dot-product kernel here";
    }
    for (int64_t D : kernel_contract::int8_dots_head_dims) {
        const double error = testing::with_integer_form(
            IntegerDotForm::U8S8, [&] { return decode_error({8, 2, D, {2000}}, 460 + uint32_t(D), std::nullopt, DType::Int8); });
        EXPECT_GT(error, 1e-5) << D;
        EXPECT_LE(error, 6e-3) << D;
    }
}

// QK in bf16 pairs, prefill and decode: bf16 queries, even head dims (the specialised ones and 40,
// 16), sinks, soft-capping, groups, ragged lengths, query tiles and key chunks past one.
bool register_bf16_pairs_checks() {
    const auto pairs = [](PrefillCase c, uint32_t seed) {
        c.bf16_queries = true;
        return testing::with_bf16_form(Bf16DotForm::Pairs,
                                       [&] { return prefill_error(c, seed, std::nullopt, DType::BF16); });
    };
    testing::register_kernel_check(
        "attention_prefill_bf16_pairs",
        {[pairs] {
             return std::max({pairs({"check", 2, 19, 4, 2, 32, {19, 30}, true, false}, 222),
                              pairs({"query tiles", 1, 70, 2, 1, 128, {70}, true, false}, 273),
                              pairs({"key chunks", 1, 130, 4, 2, 64, {600}, true, false}, 275),
                              pairs({"generic head dim", 1, 21, 4, 4, 40, {50}, false, false}, 274),
                              pairs({"sinks", 2, 19, 4, 2, 32, {19, 30}, true, false, 64, true}, 236),
                              pairs({"softcap", 2, 19, 4, 2, 64, {19, 30}, true, false, 64, false, 0.5f}, 253)});
         },
         1e-5, [pairs] { return pairs({"estimates", 1, 2048, 16, 16, 64, {2048}, true, false, 8}, 226); }});
    testing::register_kernel_check(
        "attention_prefill_masked_bf16_pairs",
        {[pairs] {
             return std::max(pairs({"check", 1, 15, 2, 1, 16, {21}, false, true}, 223),
                             pairs({"softcap", 1, 15, 4, 1, 16, {21}, false, true, 64, false, 0.4f}, 254));
         },
         1e-5, [pairs] { return pairs({"estimates", 1, 2048, 16, 16, 64, {2048}, false, true, 8}, 227); }});
    const auto decode_pairs = [](DecodeCase c, uint32_t seed) {
        c.bf16_queries = true;
        return testing::with_bf16_form(Bf16DotForm::Pairs, [&] { return decode_error(c, seed, std::nullopt, DType::BF16); });
    };
    // The decode checks' shapes with even head dims and groups (which alone take the pairs): groups
    // of 2, 3 and 4, generic and specialised head dims, sinks, windows and soft-capping.
    testing::register_kernel_check(
        "attention_decode_bf16_pairs",
        {[decode_pairs] {
             return std::max({decode_pairs({4, 2, 40, {77, 1030}}, 224), decode_pairs({6, 3, 64, {300}}, 231),
                              decode_pairs({8, 4, 128, {300}}, 232), decode_pairs({8, 2, 96, {130}}, 234),
                              decode_pairs({4, 2, 256, {200}}, 235), decode_pairs({8, 2, 64, {0, 1030}, true}, 244),
                              decode_pairs({8, 4, 64, {300, 1030}, false, {}, 0.5f}, 255),
                              decode_pairs({8, 2, 64, {1030, 9, 1}, true, {700, 2, 1}}, 245)});
         },
         1e-5, [decode_pairs] { return decode_pairs({32, 8, 128, {4096}}, 228); }});
    return true;
}

// int8 dots over queries of int8 codes (DecodeCase::int8_queries): the contract's head dims, groups
// of 1 to 4, sinks, windows, ragged lengths and soft-capping.
bool register_int8_dots_checks() {
    const auto dots = [](DecodeCase c, uint32_t seed) {
        c.int8_queries = true;
        return testing::with_integer_form(IntegerDotForm::U8S8,
                                          [&] { return decode_error(c, seed, std::nullopt, DType::Int8); });
    };
    testing::register_kernel_check(
        "attention_decode_int8_dots",
        {[dots] {
             return std::max({dots({4, 4, 64, {77, 1030}}, 424), dots({6, 3, 64, {300}}, 431),
                              dots({8, 4, 128, {300}}, 432), dots({4, 2, 256, {200}}, 435),
                              dots({8, 2, 64, {0, 1030}, true}, 444), dots({8, 4, 64, {300, 1030}, false, {}, 0.5f}, 455),
                              dots({8, 2, 128, {1030, 9, 1}, true, {700, 2, 1}}, 445)});
         },
         1e-5, [dots] { return dots({32, 8, 128, {4096}}, 428); }});
    return true;
}

const bool checks_registered =
    testing::register_kernel_check(
        "rope", {[] { return rope_error({2, 5, 3, 40}, 32, {0, 9}, 21); }, 1e-6,
                 [] { return rope_error({1, 2048, 32, 128}, 128, {0}, 25); }}) &&
    testing::register_kernel_check(
        "rope_interleaved",
        {[] { return rope_error({2, 5, 3, 40}, 32, {0, 9}, 29, RopeLayout::Interleaved); }, 1e-6,
         [] { return rope_error({1, 2048, 32, 128}, 128, {0}, 30, RopeLayout::Interleaved); }}) &&
    // Prefill with and without sinks (their own start of each row's softmax state), and capped.
    testing::register_kernel_check(
        "attention_prefill",
        {[] {
             return std::max({prefill_error({"check", 2, 19, 4, 2, 32, {19, 30}, true, false}, 22),
                              prefill_error({"query tiles", 1, 70, 2, 1, 128, {70}, true, false}, 73),
                              prefill_error({"sinks", 2, 19, 4, 2, 32, {19, 30}, true, false, 64, true}, 36),
                              prefill_error({"softcap", 2, 19, 4, 2, 64, {19, 30}, true, false, 64, false, 0.5f}, 53)});
         },
         1e-5,
         [] {
             return std::max(prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, true, false, 8}, 26),
                             prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, true, false, 8, true}, 37));
         }}) &&
    testing::register_kernel_check(
        "attention_prefill_masked",
        {[] {
             return std::max({prefill_error({"check", 1, 15, 2, 1, 16, {21}, false, true}, 23),
                              prefill_error({"sinks", 1, 15, 4, 1, 16, {21}, false, true, 64, true}, 38),
                              prefill_error({"softcap", 1, 15, 4, 1, 16, {21}, false, true, 64, false, 0.4f}, 54)});
         },
         1e-5,
         [] {
             return std::max(prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, false, true, 8}, 27),
                             prefill_error({"estimates", 1, 2048, 16, 16, 64, {2048}, false, true, 8, true}, 39));
         }}) &&
    // D = 40 runs the generic head dim; 64 and 128 the one-key-row QK of the x86 sub-targets; 96
    // and 256 (Phi-3, Gemma) their PV tiles, a KV head serving one query head and four; then sinks
    // and soft-capping.
    testing::register_kernel_check("attention_decode",
                                   {[] {
                                        return std::max({decode_error({4, 2, 40, {77, 1030}}, 24),
                                                         decode_error({4, 2, 64, {300}}, 31),
                                                         decode_error({8, 4, 128, {300}}, 32),
                                                         decode_error({4, 4, 96, {300}}, 33),
                                                         decode_error({8, 2, 96, {130}}, 34),
                                                         decode_error({2, 2, 256, {200}}, 35),
                                                         decode_error({8, 2, 64, {0, 1030}, true}, 44),
                                                         decode_error({4, 2, 32, {0, 0}, true}, 46),  // no keys at all
                                                         decode_error({8, 4, 64, {300, 1030}, false, {}, 0.5f}, 55),
                                                         decode_error({8, 2, 64, {1030, 9, 1}, true, {700, 2, 1}}, 45)});
                                    },
                                    1e-5,
                                    [] { return decode_error({32, 8, 128, {4096}}, 28); }}) &&
    register_16_bit_cache_checks(DType::BF16, "bf16") && register_16_bit_cache_checks(DType::F16, "f16") &&
    register_16_bit_cache_checks(DType::Int8, "int8") && register_bf16_pairs_checks() &&
    register_int8_dots_checks();

}  // namespace
}  // namespace hattn
