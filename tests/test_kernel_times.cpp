// KernelTimes: a run's time kernel by kernel (`hattn bench --kernel-times`). What is checked is
// what it records (which kernels, how many calls, device time never below host time), never how
// long anything took.
#include <gtest/gtest.h>

#include <optional>

#include "hattn/error.h"
#include "hattn/kernel_times.h"
#include "hattn/kernels/norm.h"
#include "support/device.h"
#include "support/failing_kernel_call.h"
#include "support/random.h"

namespace hattn {
namespace {

void norm_calls(int rms, int layer) {
    const Tensor x = testing::random_tensor({16, 64}, 1), w = testing::random_tensor({64}, 2);
    const Tensor b = testing::random_tensor({64}, 3);
    Tensor y({16, 64});
    for (int i = 0; i < rms; i++) rms_norm(x.view(), w, 1e-6f, y.view());
    for (int i = 0; i < layer; i++) layer_norm(x.view(), w, b, 1e-6f, y.view());
}

void expect_norm_totals(const std::vector<KernelTime> &totals) {
    ASSERT_EQ(totals.size(), 2u);
    EXPECT_EQ(totals[0].kernel, "rms_norm");
    EXPECT_EQ(totals[0].calls, 3);
    EXPECT_EQ(totals[1].kernel, "layer_norm");
    EXPECT_EQ(totals[1].calls, 1);
    for (const KernelTime &t : totals) {
        EXPECT_GT(t.host_ms, 0.0) << t.kernel;
        EXPECT_GE(t.device_ms, t.host_ms) << t.kernel;
    }
}

TEST(KernelTimes, CountsEachKernelsCallsInTheOrderOfTheFirst) {
    const KernelTimes times;
    norm_calls(2, 1);
    norm_calls(1, 0);
    expect_norm_totals(times.totals());
}

TEST(KernelTimes, StartsEmpty) {
    {
        const KernelTimes earlier;
        norm_calls(1, 1);
    }
    norm_calls(1, 1);
    const KernelTimes times;
    EXPECT_TRUE(times.totals().empty()) << "calls made before it started were counted";
}

TEST(KernelTimes, DoesNotCountAFailedCall) {
    const KernelTimes times;
    EXPECT_THROW(testing::call_projection_with_bias_of(2), Error);
    norm_calls(1, 0);
    ASSERT_EQ(times.totals().size(), 1u);
    EXPECT_EQ(times.totals()[0].kernel, "rms_norm");
}

TEST(KernelTimes, OnlyOneRecordsAtATime) {
    std::optional<KernelTimes> first(std::in_place);
    EXPECT_THROW(KernelTimes(), Error);
    first.reset();
    EXPECT_NO_THROW(KernelTimes());
}

class KernelTimesOnGpu : public testing::OnEachGpu {};

TEST_P(KernelTimesOnGpu, CountsEachKernelsCalls) {
    const testing::OnDevice on(GetParam());
    norm_calls(1, 1);  // the kernels' first run compiles them
    const KernelTimes times;
    norm_calls(3, 1);
    expect_norm_totals(times.totals());
}

HATTN_INSTANTIATE_ON_EACH_GPU(KernelTimesOnGpu);

}  // namespace
}  // namespace hattn
