// The per-sequence length rules every preallocated state shares (hattn/sequence_lengths.h): each
// failing change names its owner and leaves every length as it was.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "hattn/kv_cache.h"
#include "hattn/sequence_lengths.h"
#include "support/errors.h"

namespace hattn {
namespace {

using Lengths = std::vector<int32_t>;

TEST(SequenceLengths, CommitIsAllOrNothing) {
    SequenceLengths lengths("test state", 3, 8);
    lengths.commit(5);
    lengths.truncate_to(2, 1);
    EXPECT_EQ(lengths.values(), Lengths({5, 2, 5}));
    EXPECT_EQ(testing::error_message([&] { lengths.commit(4); }),
              "test state full: sequence 0 holds 5 of 8 tokens, cannot append 4");
    EXPECT_EQ(lengths.values(), Lengths({5, 2, 5}));  // sequence 1 had room, and still got nothing
    EXPECT_EQ(testing::error_message([&] { lengths.commit(-1); }), "test state: cannot append -1 tokens");
    lengths.commit(3);
    EXPECT_EQ(lengths.values(), Lengths({8, 5, 8}));
    // A count whose sum with a length would overflow is as full as any other.
    const int64_t huge = std::numeric_limits<int64_t>::max();
    EXPECT_EQ(testing::error_message([&] { lengths.commit(huge); }),
              "test state full: sequence 0 holds 8 of 8 tokens, cannot append " + std::to_string(huge));
    EXPECT_EQ(lengths.values(), Lengths({8, 5, 8}));
}

// The same for a cache's own checks (its rows, its slots).
TEST(SequenceLengths, ACacheRefusesCountsThatWouldOverflow) {
    const int64_t huge = std::numeric_limits<int64_t>::max();
    KVCache cache(1, 1, 1, 8);
    cache.commit(3);
    EXPECT_THROW(cache.commit(huge - 1), Error);
    EXPECT_THROW(cache.check_room(huge), Error);
    EXPECT_THROW(cache.key_slot(0, huge), Error);
    EXPECT_FALSE(cache.fits_in_rows(huge));
    EXPECT_EQ(cache.lengths(), Lengths({3}));
}

TEST(SequenceLengths, TruncateAndResetOnlyShorten) {
    SequenceLengths lengths("test state", 2, 8);
    lengths.commit(6);
    lengths.truncate_to(7);  // longer than every sequence: nothing to cut
    EXPECT_EQ(lengths.values(), Lengths({6, 6}));
    lengths.truncate_to(4, 0);
    lengths.reset(1);
    EXPECT_EQ(lengths.values(), Lengths({4, 0}));
    EXPECT_EQ(testing::error_message([&] { lengths.truncate_to(9); }), "test state: cannot truncate to 9 tokens (capacity 8)");
    EXPECT_EQ(testing::error_message([&] { lengths.truncate_to(-1, 0); }), "test state: cannot truncate to -1 tokens (capacity 8)");
    EXPECT_EQ(testing::error_message([&] { lengths.reset(2); }), "test state: sequence 2 outside batch 2");
    EXPECT_EQ(lengths.values(), Lengths({4, 0}));
    lengths.reset();
    EXPECT_EQ(lengths.values(), Lengths({0, 0}));
}

TEST(SequenceLengths, AssignChecksBothSidesInTheTargetsName) {
    SequenceLengths target("small state", 2, 4), source("large state", 3, 16);
    source.commit(6);
    source.truncate_to(3, 2);
    EXPECT_EQ(testing::error_message([&] { target.check_assign(0, source, 1); }),
              "small state: source sequence 1 holds 6 tokens, more than the capacity 4");
    EXPECT_EQ(testing::error_message([&] { target.check_assign(0, source, 3); }),
              "small state: source sequence 3 outside batch 3");
    EXPECT_EQ(testing::error_message([&] { target.check_assign(2, source, 2); }), "small state: sequence 2 outside batch 2");
    EXPECT_EQ(target.check_assign(1, source, 2), 3);
    EXPECT_EQ(target.values(), Lengths({0, 0}));  // checking assigns nothing
    target.assign(1, 3);
    EXPECT_EQ(target.values(), Lengths({0, 3}));
}

TEST(SequenceLengths, ImpossibleShapesAreRefused) {
    EXPECT_EQ(testing::error_message([] { SequenceLengths("test state", 0, 8); }),
              "test state: batch and capacity must be positive, got batch 0, capacity 8");
    EXPECT_EQ(testing::error_message([] { SequenceLengths("test state", 1, int64_t{1} << 31); }),
              "test state: capacity 2147483648 too large");
    EXPECT_EQ(testing::error_message([] { SequenceLengths("test state", int64_t{1} << 40, 8); }),
              "test state: batch 1099511627776 too large");
}

TEST(SequenceLengths, ANamedCacheSaysWhichItIs) {
    KVCache cache(1, 2, 4, 2, "layer 7 KV cache");
    cache.commit(2);
    EXPECT_EQ(testing::error_message([&] { cache.check_room(1); }),
              "layer 7 KV cache full: sequence 0 holds 2 of 2 tokens, cannot append 1");
    EXPECT_EQ(testing::error_message([&] { cache.reset(1); }), "layer 7 KV cache: sequence 1 outside batch 1");
}

}  // namespace
}  // namespace hattn
