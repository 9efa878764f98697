// A Halide runtime error reaches the caller as one hattn::Error; the process does not abort.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/kernels/attention.h"
#include "hattn/tensor.h"
#include "support/failing_kernel_call.h"

namespace hattn {
namespace {

TEST(HalideErrors, BecomeOneHattnError) {
    try {
        testing::call_projection_with_bias_of(2);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), Error::Kind::Internal);
        const std::string message = e.what();
        EXPECT_NE(message.find("projection kernel failed"), std::string::npos) << message;
        EXPECT_NE(message.find("bias"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

// The autoschedulers' schedules assume the extents they were searched at: run on a smaller shape,
// Halide's bounds check fails, and that is the caller's choice of schedule, not a fault of hattn's.
TEST(HalideErrors, AnAutoscheduleGivenASmallerShapeRefusesIt) {
    struct Restore {
        ~Restore() { set_schedule_choice(ScheduleChoice::Hand); }
    } restore;
    set_schedule_choice(ScheduleChoice::Adams2019);
    const Tensor q({1, 16, 4, 16}), k({1, 4, 16, 16}), v({1, 4, 16, 16});
    Tensor out({1, 16, 4, 16});
    const std::vector<int32_t> lengths{16};
    try {
        attention_prefill(q.view(), k.view(), v.view(), lengths, 0.25f, true, nullptr, out.view());
        // Where the autoscheduled variant cannot run (a capped ISA, ARM), the hand-written one did.
        EXPECT_NE(last_variant_run("attention_prefill"), "x86_adams2019");
    } catch (const Error &e) {
        EXPECT_EQ(last_variant_run("attention_prefill"), "x86_adams2019");
        EXPECT_TRUE(e.is_invalid_input()) << e.what();
        EXPECT_NE(std::string(e.what()).find("attention_prefill: its autoscheduled variant (x86_adams2019) does not cover "
                                             "this shape"),
                  std::string::npos)
            << e.what();
    }
}

// The message of a projection whose bias holds `bias_size` of the weight's 3 outputs.
std::string projection_error(int64_t bias_size) {
    try {
        testing::call_projection_with_bias_of(bias_size);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

// Threads whose calls fail at once each get their own call's message (a process-wide last message
// could hand one thread another's).
TEST(HalideErrors, ConcurrentFailuresKeepTheirOwnMessages) {
    const std::string alone_1 = projection_error(1), alone_2 = projection_error(2);
    ASSERT_NE(alone_1, alone_2);
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> pool;
    for (int i = 0; i < 4; i++) {
        pool.emplace_back([&, i] {
            const int64_t size = 1 + i % 2;
            for (int n = 0; n < 5000; n++) mismatches[i] += projection_error(size) != (size == 1 ? alone_1 : alone_2);
        });
    }
    for (std::thread &t : pool) t.join();
    for (int i = 0; i < 4; i++) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

}  // namespace
}  // namespace hattn
