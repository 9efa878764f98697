// KVCache::sliding, the cache of a sliding-window (or chunked) layer that keeps only the tokens
// its windows still reach: which rows hold which positions as it forgets, what it refuses, and a layer that
// attends through one exactly as through a cache of every token.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "hattn/error.h"
#include "hattn/kv_cache.h"
#include "hattn/layers/cached_attention.h"
#include "support/cached_layer.h"
#include "support/compare.h"
#include "support/device.h"
#include "support/errors.h"
#include "support/random.h"
#include "support/stateful_layer.h"

namespace hattn {
namespace {

// Keys [B, S, 1, 2] whose values name their sequence and position: 100 b + p (and p + 0.5 in the
// second dim); values their negatives.
struct NamedTokens {
    Tensor keys, values;
};
NamedTokens named_tokens(const std::vector<int32_t> &lengths, int64_t S) {
    const int64_t B = static_cast<int64_t>(lengths.size());
    NamedTokens t{Tensor({B, S, 1, 2}), Tensor({B, S, 1, 2})};
    for (int64_t b = 0; b < B; b++) {
        for (int64_t s = 0; s < S; s++) {
            for (int64_t d = 0; d < 2; d++) {
                const float name = float(100 * b + lengths[b] + s) + 0.5f * float(d);
                t.keys.data()[(b * S + s) * 2 + d] = name;
                t.values.data()[(b * S + s) * 2 + d] = -name;
            }
        }
    }
    return t;
}

void append_named(KVCache &cache, int64_t S) {
    const NamedTokens t = named_tokens(cache.lengths(), S);
    cache.append(t.keys.view(), t.values.view());
}

// Every sequence holds at least its last `at_least` tokens (all, if fewer) in rows from row 0, each
// row the position first_positions()[b] + r; returns how many sequences forgot tokens. After an
// append a sliding cache holds its kept() tokens; after truncate_to, its window's.
int check_rows(const KVCache &cache, int64_t at_least) {
    int forgetting = 0;
    for (int64_t b = 0; b < cache.batch(); b++) {
        const int64_t len = cache.lengths()[b], first = cache.first_positions()[b];
        EXPECT_LE(first, std::max<int64_t>(0, len - at_least)) << b;
        EXPECT_LE(len - first, cache.rows()) << b;
        for (int64_t r = 0; r < len - first; r++) {
            const float name = float(100 * b + first + r);
            EXPECT_EQ(cache.keys().as_f32("keys").data[(b * cache.rows() + r) * 2], name) << b << " row " << r;
            EXPECT_EQ(cache.values().as_f32("values").data[(b * cache.rows() + r) * 2 + 1], -name - 0.5f) << b << " row " << r;
        }
        forgetting += first > 0;
    }
    return forgetting;
}

TEST(SlidingKVCache, KeepsItsLastTokensFromRowZeroAsItForgets) {
    KVCache cache = KVCache::sliding(2, 1, 2, 100, {3, 5, 1});  // keeps 2 + 1
    EXPECT_EQ(cache.rows(), 5);
    EXPECT_EQ(cache.capacity(), 100);
    int forgot = 0;
    // Appends within the rows, past them by one (the kept tokens move to row 0), and longer than
    // the rows (only the last 3 stay); then ragged sequences.
    for (const int64_t S : {2, 2, 1, 1, 1, 2, 7, 1, 1}) {
        append_named(cache, S);
        forgot += check_rows(cache, 3);
    }
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({18, 18}));
    EXPECT_EQ(cache.first_positions(), std::vector<int32_t>({13, 13}));  // 13 .. 15 after the 7, then 2 more
    cache.reset(1);
    EXPECT_EQ(cache.first_positions(), std::vector<int32_t>({13, 0}));
    for (const int64_t S : {1, 3, 1, 6}) {
        append_named(cache, S);
        forgot += check_rows(cache, 3);
    }
    EXPECT_GT(forgot, 4);  // the checks saw rows that had moved
}

// Cross-attention reads every sequence from row 0 as position 0: a cache that has forgotten its
// first tokens cannot be a context, while one that has not yet can.
TEST(SlidingKVCache, OnlyOneThatForgotNothingIsAConditioningCache) {
    KVCache cache = KVCache::sliding(1, 1, 2, 100, {3, 5, 1}, "context cache");
    append_named(cache, 4);
    const ConditioningCache whole(cache);
    EXPECT_EQ(whole.kv().lengths(), std::vector<int32_t>({4}));
    append_named(cache, 3);
    EXPECT_EQ(testing::error_message([&] { ConditioningCache{cache}; }),
              "context cache: a conditioning cache holds its sequences from position 0; this one has forgotten "
              "tokens (a sliding cache)");
}

TEST(SlidingKVCache, TruncatesAsFarAsItHoldsTheWindowBefore) {
    KVCache cache = KVCache::sliding(1, 1, 2, 100, {3, 6, 1});  // a window of 3 needs 2 tokens before the end
    append_named(cache, 9);  // keeps 6, 7 and 8
    append_named(cache, 2);  // 6 .. 10 in rows 0 .. 4
    EXPECT_EQ(cache.first_positions()[0], 6);
    const std::string refused = testing::error_message([&] { cache.truncate_to(7); });
    EXPECT_EQ(refused, "KV cache: cannot truncate sequence 0 to 7 tokens: it holds them from position 6 on, and its "
                       "window needs the 2 before the end");
    EXPECT_EQ(cache.lengths()[0], 11);
    cache.truncate_to(8);  // 6 and 7 are held
    check_rows(cache, 2);
    EXPECT_EQ(cache.lengths()[0], 8);
    append_named(cache, 1);
    check_rows(cache, 2);
    EXPECT_EQ(testing::error_message([&] { cache.truncate_to(-1); }), "KV cache: cannot truncate to -1 tokens (capacity 100)");
    cache.truncate_to(0);  // empty: forgets where it was
    EXPECT_EQ(cache.first_positions()[0], 0);
}

// Only append forgets tokens and moves rows: writing past the end (a layer that attends first)
// and commit take only what the rows hold after a sequence's own tokens.
TEST(SlidingKVCache, WritesPastItsEndAndCommitsOnlyWithinItsRows) {
    KVCache cache = KVCache::sliding(2, 1, 2, 100, {3, 6, 1});
    append_named(cache, 4);
    EXPECT_TRUE(cache.fits_in_rows(2));
    EXPECT_FALSE(cache.fits_in_rows(3));
    EXPECT_FALSE(cache.fits_in_rows(-1));
    const NamedTokens three = named_tokens(cache.lengths(), 3);
    EXPECT_EQ(testing::error_message([&] { cache.write_past_end(three.keys.view(), three.values.view()); }),
              "KV cache: sequence 0 cannot take 3 tokens in place: it holds 4 of its 6 rows (append moves the kept "
              "ones to row 0)");
    const NamedTokens two = named_tokens(cache.lengths(), 2);
    cache.write_past_end(two.keys.view(), two.values.view());
    cache.commit(2);
    check_rows(cache, 3);
    EXPECT_EQ(testing::error_message([&] { cache.commit(1); }),
              "KV cache: sequence 0 cannot take 1 tokens in place: it holds 6 of its 6 rows (append moves the kept "
              "ones to row 0)");
    EXPECT_EQ(cache.lengths(), std::vector<int32_t>({6, 6}));
    EXPECT_EQ(cache.first_positions(), std::vector<int32_t>({0, 0}));
    append_named(cache, 1);  // keeps 4, 5 and 6
    EXPECT_EQ(cache.first_positions(), std::vector<int32_t>({4, 4}));
    check_rows(cache, 3);
    // A full cache always fits within its capacity.
    EXPECT_TRUE(KVCache(1, 1, 2, 8).fits_in_rows(8));
}

TEST(SlidingKVCache, SequencesMoveBetweenCachesThatHoldWhatTheTargetKeeps) {
    KVCache full(1, 1, 2, 100), sliding = KVCache::sliding(2, 1, 2, 100, {4, 6});
    append_named(full, 10);
    sliding.assign_sequence(1, full, 0);  // the last 6 of its 10, under sequence 0's names
    EXPECT_EQ(sliding.lengths(), std::vector<int32_t>({0, 10}));
    EXPECT_EQ(sliding.first_positions(), std::vector<int32_t>({0, 4}));
    for (int64_t r = 0; r < 6; r++) EXPECT_EQ(sliding.keys().as_f32("keys").data[(6 + r) * 2], float(4 + r));
    append_named(sliding, 4);  // sequence 1 keeps 11, 12 and 13
    EXPECT_EQ(sliding.first_positions(), std::vector<int32_t>({0, 11}));
    KVCache back(1, 1, 2, 100);
    EXPECT_EQ(testing::error_message([&] { back.assign_sequence(0, sliding, 1); }),
              "KV cache: source sequence 1 holds its 14 tokens from position 11 on; this cache needs them from 0 on");
    EXPECT_EQ(back.lengths()[0], 0);
    KVCache wider = KVCache::sliding(1, 1, 2, 100, {5, 8});
    EXPECT_EQ(testing::error_message([&] { wider.assign_sequence(0, sliding, 1); }),
              "KV cache: source sequence 1 holds its 14 tokens from position 11 on; this cache needs them from 10 on");
    KVCache narrower = KVCache::sliding(1, 1, 2, 100, {2, 4});
    narrower.assign_sequence(0, sliding, 1);  // the last 4 it holds are enough for a window of 2
    EXPECT_EQ(narrower.first_positions()[0], 11);
    EXPECT_EQ(narrower.keys().as_f32("keys").data[0], 111.0f);
    sliding.fork(1, 0);
    EXPECT_EQ(sliding.first_positions(), std::vector<int32_t>({11, 11}));
    EXPECT_EQ(sliding.keys().as_f32("keys").data[0], 111.0f);
}

TEST(SlidingKVCache, ImpossibleSizesAreRefused) {
    EXPECT_EQ(testing::error_message([] { KVCache::sliding(1, 1, 2, 100, {5, 6, 2}); }),
              "KV cache: a sliding cache must keep fewer tokens than its rows, got 6 kept (window 5 - 1 + rollback 2) in 6 rows");
    const auto refusal = [](KVCache::Sliding s) {
        return testing::error_message([&] { KVCache::sliding(1, 1, 2, 100, s); });
    };
    EXPECT_EQ(refusal({0, 6}),
              "KV cache: a sliding cache's window must be positive and its rollback not negative, got 0 and 0");
    // Tokens kept that would overflow (kept() wrapped negative, and a later append left the cache half changed).
    EXPECT_EQ(refusal({std::numeric_limits<int64_t>::max(), 5, 5}),
              "KV cache: a sliding cache's window 9223372036854775807 - 1 + rollback 5 overflows");
    // A window past every 32-bit position is one that never forgets.
    EXPECT_EQ(KVCache::sliding(1, 1, 2, 50, {int64_t(1) << 40, 60}).rows(), 50);
    // Rows past the capacity would stay unused: such a cache has the capacity's rows and never forgets.
    const KVCache small = KVCache::sliding(1, 1, 2, 10, {20, 40});
    EXPECT_EQ(small.rows(), 10);
}

// A layer of window 7 (Mistral's 4096), or of chunks of 7 (Llama 4's 8192). (A bidirectional layer
// takes no cache.)
enum class Reach { Window, Chunks };
struct WindowedLayer {
    testing::TestLayer seed{{64, 4, 2, 16, false, 10000.0}};
    CachedAttention layer;
    explicit WindowedLayer(Reach reach = Reach::Window) : layer(seed.with_config(bounded(seed, reach))) {}
    static CachedAttentionConfig bounded(const testing::TestLayer &seed, Reach reach) {
        CachedAttentionConfig config = seed.layer->config();
        (reach == Reach::Chunks ? config.attention_chunk : config.sliding_window) = 7;
        return config;
    }
};

// Calls of these many new tokens (1: a decode step), masked where negative, through a sliding cache
// that keeps 6 + 2 tokens in 13 rows and a full one; returns the worst relative L2 difference of
// their outputs. Sequence 1 goes back 2 tokens halfway, so the batch is ragged from there.
double sliding_against_full(const CachedAttention &layer, const std::vector<int64_t> &calls, int &forgot) {
    KVCache sliding = KVCache::sliding(2, 2, 16, 400, {7, 13, 2}), full(2, 2, 16, 400);
    double worst = 0;
    uint32_t seed = 500;
    for (size_t i = 0; i < calls.size(); i++) {
        if (i == calls.size() / 2) {
            for (KVCache *cache : {&sliding, &full}) cache->truncate_to(cache->lengths()[1] - 2, 1);
        }
        const int64_t S = std::abs(calls[i]);
        const Tensor x = testing::random_tensor({2, S, 64}, seed++);
        // The caller's mask (for positive calls none): key j hidden from new query s where (j + s + b) % 4 == 0,
        // but never the query's own key.
        const int64_t widest = *std::max_element(full.lengths().begin(), full.lengths().end()) + S;
        std::vector<uint8_t> hidden(2 * S * widest);
        for (int64_t b = 0; b < 2; b++) {
            for (int64_t s = 0; s < S; s++) {
                for (int64_t j = 0; j < widest; j++) {
                    hidden[(b * S + s) * widest + j] = (j + s + b) % 4 == 0 && j != full.lengths()[b] + s;
                }
            }
        }
        const MaskView mask{hidden.data(), {2, 1, S, widest}};
        const MaskView *m = calls[i] < 0 ? &mask : nullptr;
        const Tensor ours = layer.self_attention(x, &sliding, m), expected = layer.self_attention(x, &full, m);
        worst = std::max(worst, testing::relative_l2(ours, expected));
        EXPECT_EQ(sliding.lengths(), full.lengths());
        for (int32_t first : sliding.first_positions()) forgot += first > 0;
    }
    return worst;
}

// Prompts longer than the rows (the call attends over a copy of the kept and new tokens), decode
// steps past many moves, short calls that fit beside the kept tokens, masked calls of each kind.
const std::vector<int64_t> sliding_calls{20, 1, 1, 1, 1, 1, 1, 1, 3, -1, 1, 1, 9, 1, -4, 1, 1, 1, 1, -12, 1, 2, 1};

TEST(SlidingCache, ALayerAttendsThroughItAsThroughAFullCache) {
    const WindowedLayer w;
    int forgot = 0;
    EXPECT_LE(sliding_against_full(w.layer, sliding_calls, forgot), 1e-6);
    EXPECT_GT(forgot, 10);  // the sliding cache did forget
}

// A query of a chunked layer sees its chunk's keys up to itself: at most the 6 before it.
TEST(SlidingCache, AChunkedLayerToo) {
    const WindowedLayer w(Reach::Chunks);
    int forgot = 0;
    EXPECT_LE(sliding_against_full(w.layer, sliding_calls, forgot), 1e-6);
    EXPECT_GT(forgot, 10);
    EXPECT_EQ(w.layer.make_cache(1, 1 << 20).sliding_params()->window, 7);
}

// A window or chunk past every 32-bit position (a config's way of saying none) hides no key: a
// decode step's first key was computed in 32 bits, where such a window wrapped.
TEST(SlidingCache, AWindowPastEveryPositionHidesNothing) {
    const testing::TestLayer seed{{64, 4, 2, 16, false, 10000.0}};
    const Tensor prompt = testing::random_tensor({1, 5, 64}, 600), token = testing::random_tensor({1, 1, 64}, 601);
    KVCache cache = seed.layer->make_cache(1, 8);
    seed.layer->self_attention(prompt, &cache);
    const Tensor expected = seed.layer->decode_step(token, cache);
    for (bool chunks : {false, true}) {
        CachedAttentionConfig config = seed.layer->config();
        (chunks ? config.attention_chunk : config.sliding_window) = int64_t(1) << 40;
        const CachedAttention layer = seed.with_config(config);
        KVCache own = layer.make_cache(1, 8);
        layer.self_attention(prompt, &own);
        EXPECT_LE(testing::relative_l2(layer.decode_step(token, own), expected), 1e-6) << (chunks ? "chunk" : "window");
    }
}

TEST(SlidingCache, SlidingLayersMakeOneThatKeepsTheirWindowAndARollback) {
    const WindowedLayer w;
    const KVCache cache = w.layer.make_cache(2, 1 << 20);
    ASSERT_TRUE(cache.sliding_params().has_value());
    EXPECT_EQ(cache.sliding_params()->window, 7);
    EXPECT_EQ(cache.sliding_params()->rollback, CachedAttention::sliding_cache_rollback);
    EXPECT_EQ(cache.rows(), 6 + CachedAttention::sliding_cache_rollback + 256);
    EXPECT_EQ(cache.capacity(), 1 << 20);
    EXPECT_EQ(w.layer.make_cache(2, 100).rows(), 100);
    const KVCache full = w.seed.layer->make_cache(2, 1 << 12);
    EXPECT_FALSE(full.sliding_params().has_value());
    EXPECT_EQ(full.rows(), 1 << 12);
}

TEST(SlidingCache, ACacheThatKeepsTooFewIsRefused) {
    const WindowedLayer w;
    KVCache few = KVCache::sliding(1, 2, 16, 100, {6, 12, 3});
    const Tensor x = testing::random_tensor({1, 3, 64}, 7);
    EXPECT_EQ(testing::error_message([&] { w.layer.self_attention(x, &few); }),
              "cached_attention: a sliding cache for windows of up to 6 tokens cannot serve this layer (window 7)");
    EXPECT_EQ(testing::error_message([&] { w.seed.layer->self_attention(x, &few); }),
              "cached_attention: a sliding cache for windows of up to 6 tokens cannot serve this layer (no window)");
    EXPECT_EQ(testing::error_message([&] { WindowedLayer(Reach::Chunks).layer.self_attention(x, &few); }),
              "cached_attention: a sliding cache for windows of up to 6 tokens cannot serve this layer (chunks of 7)");
    EXPECT_EQ(few.lengths()[0], 0);
}

// Continuous batching where the batch's caches slide (a new sequence prefilled in one of its own,
// then moved into a finished one's slot) and each sequence alone has a full cache.
TEST(SlidingCache, ASequencePrefilledElsewhereTakesAFinishedOnesSlot) {
    const WindowedLayer w;
    const testing::StatefulLayer<KVCache> layer{
        [](int64_t batch, int64_t capacity) {
            return batch == 1 ? KVCache(1, 2, 16, capacity) : KVCache::sliding(batch, 2, 16, capacity, {7, 7});
        },
        [&](const Tensor &x, KVCache &cache) { return w.layer.self_attention(x, &cache); },
        [&](const Tensor &x, KVCache &cache) { return w.layer.decode_step(x, cache); }};
    EXPECT_LE(testing::continuous_batching_error(layer, 64, 40), 1e-6);
}

// On a GPU the kept rows move through the host, and a long prompt's copy of them is made there.
class SlidingCacheOnGpu : public testing::OnEachGpu {};
TEST_P(SlidingCacheOnGpu, LayersAttendThroughItAsThroughAFullCache) {
    const testing::OnDevice on(GetParam());
    for (const Reach reach : {Reach::Window, Reach::Chunks}) {
        const WindowedLayer w(reach);
        int forgot = 0;
        EXPECT_LE(sliding_against_full(w.layer, sliding_calls, forgot), 1e-5);
        EXPECT_GT(forgot, 10);
    }
}
HATTN_INSTANTIATE_ON_EACH_GPU(SlidingCacheOnGpu);

}  // namespace
}  // namespace hattn
