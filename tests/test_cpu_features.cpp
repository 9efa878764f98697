// The CPU features hattn detects, checked against the machine a CI step says it runs on. Under
// qemu-aarch64 CI runs the suite with QEMU_CPU=max (dotprod) and QEMU_CPU=cortex-a53 (none), setting
// HATTN_EXPECT_ARM_DOTPROD to match, so the getauxval() selection is tested both ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "hattn/cpu_features.h"

namespace hattn {
namespace {

TEST(CpuFeatures, ArmDotProdDetectionMatchesTheMachine) {
    const char *expect = std::getenv("HATTN_EXPECT_ARM_DOTPROD");
    if (!expect) GTEST_SKIP() << "HATTN_EXPECT_ARM_DOTPROD (0|1) is not set";
    const std::vector<std::string> features = host_cpu_features();
    const bool has = std::find(features.begin(), features.end(), "arm_dot_prod") != features.end();
    EXPECT_EQ(has, std::string(expect) == "1");
}

TEST(CpuFeatures, ListsTheBaselineOfThisArchitecture) {
    const std::vector<std::string> features = host_cpu_features();
#if defined(__x86_64__)
    EXPECT_NE(std::find(features.begin(), features.end(), "sse41"), features.end());
#elif defined(__aarch64__)
    EXPECT_NE(std::find(features.begin(), features.end(), "neon"), features.end());
#endif
}

}  // namespace
}  // namespace hattn
