// detail::top_k_indices against a full sort by the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "hattn/error.h"
#include "top_k.h"

namespace hattn {
namespace {

// The reference: every index sorted best first, the first n taken, then put in index order.
std::vector<int32_t> best_by_sorting(const std::vector<float> &score, int64_t n) {
    std::vector<int32_t> order(score.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return score[a] != score[b] ? score[a] > score[b] : a > b; });
    order.resize(n);
    std::sort(order.begin(), order.end());
    return order;
}

// The n taken, checked to write nothing past them.
std::vector<int32_t> best(const std::vector<float> &score, int64_t n) {
    std::vector<int32_t> out(n + 1, -7);
    detail::top_k_indices(score.data(), static_cast<int64_t>(score.size()), n, out.data());
    EXPECT_EQ(out.back(), -7) << "wrote past the " << n << " taken";
    out.pop_back();
    return out;
}

TEST(TopK, MatchesASortOfSpreadScores) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int64_t count : {1, 2, 7, 100, 5000}) {
        std::vector<float> score(count);
        for (float &s : score) s = normal(rng);
        for (int64_t n : {int64_t(0), int64_t(1), count / 3, count - 1, count})
            EXPECT_EQ(best(score, n), best_by_sorting(score, n)) << "count " << count << ", n " << n;
    }
}

// The indexer's scores tie often: a query whose every head ReLU cuts to 0 scores exactly 0, and
// +0 and -0 are one score. Ties go to the more recent (larger) index.
TEST(TopK, BreaksTiesTowardsTheLargerIndex) {
    std::mt19937 rng(12);
    std::uniform_int_distribution<int> level(-3, 3);
    std::vector<float> score(3000);
    for (size_t t = 0; t < score.size(); t++) {
        const int l = level(rng);
        score[t] = l == 0 ? (t % 2 ? -0.0f : 0.0f) : 0.25f * l;
    }
    for (int64_t n : {1, 400, 1500, 2047, 2999}) EXPECT_EQ(best(score, n), best_by_sorting(score, n)) << "n " << n;
    std::vector<float> zeros(100, 0.0f);
    zeros[95] = -0.0f;  // as good as +0, so taken
    std::vector<int32_t> last_ten(10);
    std::iota(last_ten.begin(), last_ten.end(), 90);
    EXPECT_EQ(best(zeros, 10), last_ten);
}

// Scores far apart and close together: a histogram bin that holds nearly all of them, and bins
// of one score each.
TEST(TopK, MatchesASortAcrossMagnitudes) {
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> unit(1.0f, 1.0001f);
    std::vector<float> score(4000);
    for (size_t t = 0; t < score.size(); t++) score[t] = t % 500 == 0 ? -1e30f + float(t) : unit(rng);
    score[17] = 3e38f;
    score[18] = -3e38f;
    score[19] = 1e-40f;  // a denormal
    for (int64_t n : {1, 2, 10, 3990, 3999}) EXPECT_EQ(best(score, n), best_by_sorting(score, n)) << "n " << n;
}

TEST(TopK, RefusesToTakeMoreThanThereAre) {
    const std::vector<float> score(4, 1.0f);
    std::vector<int32_t> out(5);
    EXPECT_THROW(detail::top_k_indices(score.data(), 4, 5, out.data()), Error);
    EXPECT_THROW(detail::top_k_indices(score.data(), 4, -1, out.data()), Error);
}

}  // namespace
}  // namespace hattn
