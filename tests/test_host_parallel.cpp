// detail::parallel_for: host work on the kernels' thread pool.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "hattn/error.h"
#include "host_parallel.h"

namespace hattn {
namespace {

TEST(HostParallel, RunsEveryIndexOnce) {
    std::vector<std::atomic<int>> runs(1000);
    detail::parallel_for(1000, [&](int i) { runs[i]++; });
    for (size_t i = 0; i < runs.size(); i++) EXPECT_EQ(runs[i].load(), 1) << "index " << i;
    detail::parallel_for(0, [&](int) { ADD_FAILURE() << "no index to run"; });
}

// Halide's pool skips the calls not yet begun once one fails, so the count has only bounds.
TEST(HostParallel, RethrowsACallsError) {
    std::atomic<int> calls{0};
    try {
        detail::parallel_for(64, [&](int i) {
            calls++;
            if (i == 7) throw Error("call 7 failed");
        });
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_STREQ(e.what(), "call 7 failed");
    }
    EXPECT_GE(calls.load(), 1);
    EXPECT_LE(calls.load(), 64);
}

}  // namespace
}  // namespace hattn
