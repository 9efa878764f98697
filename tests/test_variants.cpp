// Every compiled variant and sub-target of every kernel runs and matches its reference. Without
// forcing, a multi-target library always takes the best sub-target of the build machine, and the
// AVX2, SSE4.1 and autoscheduled code would never run in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "hattn/device.h"
#include "hattn/kernel_table.h"
#include "support/device.h"
#include "support/forced_target.h"
#include "support/kernel_checks.h"
#include "support/variants.h"

namespace hattn {
namespace {

struct VariantTarget {
    const KernelVariant *variant;
    size_t index;  // into variant->targets
};

std::vector<VariantTarget> every_variant_target() {
    std::vector<VariantTarget> all;
    for (const KernelVariant &v : kernel_variants()) {
        for (size_t i = 0; i < v.targets.size(); i++) all.push_back({&v, i});
    }
    return all;
}

void PrintTo(const VariantTarget &t, std::ostream *os) {
    *os << t.variant->library << " " << t.variant->targets[t.index].name;
}

std::string test_name(const ::testing::TestParamInfo<VariantTarget> &info) {
    const KernelVariant &v = *info.param.variant;
    std::string name = v.kernel + "_" + v.family + "_" + std::to_string(info.param.index) + "_";
    // The sub-target's last ISA feature tells them apart: avx512_skylake, avx2, sse41.
    const std::string &t = v.targets[info.param.index].name;
    const std::string features = t.substr(0, t.rfind("-large_buffers"));
    const std::string last_word = features.substr(features.rfind('-') + 1);
    name += last_word == "linux" ? "base" : last_word;  // a target with no ISA feature
    for (char &c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
}

// The GPU API a platform is, or the CPU.
Device device_of(const std::string &platform) {
    if (platform == "cuda") return Device::CUDA;
    if (platform == "opencl") return Device::OpenCL;
    return Device::CPU;
}

// Forces `target`, runs the kernel's check, and returns why it failed ("" when the forced variant
// ran and matched).
std::string run_forced(const KernelVariant &v, size_t index, const testing::KernelCheck &check) {
    const KernelTarget &target = v.targets[index];
    // The autoscheduled variants are checked at their generators' estimates.
    const bool autoscheduled = v.schedule == ScheduleChoice::Adams2019 || v.schedule == ScheduleChoice::Mullapudi2016 ||
                               v.schedule == ScheduleChoice::Tuned;
    set_schedule_choice(v.schedule);
    set_device(device_of(v.platform));
    // AArch64 chooses in C++: the plain variant runs where dotprod is disabled.
    set_arm_dotprod_enabled(v.platform != "arm_plain");
    if (autoscheduled && !check.at_estimates) return "kernel " + v.kernel + " has no check at its estimates";
    double error;
    {
        testing::ForcedTarget forced(target);
        error = autoscheduled ? check.at_estimates() : check.relative_error();
    }
    set_schedule_choice(ScheduleChoice::Hand);
    set_arm_dotprod_enabled(true);
    set_device(Device::CPU);
    if (last_variant_run(v.kernel) != v.family) {
        return "variant " + last_variant_run(v.kernel) + " ran instead of " + v.family;
    }
    // Halide's wrapper may ask about the sub-targets in any order, then takes the first in list
    // order that was granted; the forced one must have been granted (the last, most general entry
    // runs without being asked about), and ForcedTarget refuses every entry listed before it.
    const auto &accepted = testing::ForcedTarget::accepted();
    const bool asked = std::any_of(accepted.begin(), accepted.end(), [&](const auto &request) {
        return testing::ForcedTarget::same_target(request, target);
    });
    const bool last = index + 1 == v.targets.size();
    if (v.targets.size() > 1 && !asked && !last) return "sub-target " + target.name + " was never granted";
    if (!(error <= check.tolerance)) {
        return "relative error " + std::to_string(error) + " exceeds " + std::to_string(check.tolerance);
    }
    return "";
}

// The same in a fresh process: exits 0 on success, else 1 after saying why on stderr.
[[noreturn]] void run_forced_and_exit(const KernelVariant &v, size_t index,
                                      const testing::KernelCheck &check) {
    const std::string failure = run_forced(v, index, check);
    if (!failure.empty()) std::fprintf(stderr, "%s\n", failure.c_str());
    std::exit(failure.empty() ? 0 : 1);
}

TEST(KernelVariantsSetup, EveryKernelHasACheck) {
    for (const KernelVariant &v : kernel_variants()) {
        EXPECT_TRUE(testing::kernel_checks().count(v.kernel))
            << "kernel " << v.kernel << " registers no check in tests/ (see support/kernel_checks.h)";
    }
}

// A schedule choice a kernel has no variant for (a tuned schedule exists for a few kernels only)
// runs the hand-written variant instead of failing.
TEST(KernelVariantsSetup, AChoiceTheKernelLacksRunsTheHandWrittenVariant) {
    for (const KernelVariant &v : kernel_variants()) {
        if (v.family != "x86_hand") continue;
        if (testing::has_variant(v.kernel, "x86_tuned")) continue;
        set_schedule_choice(ScheduleChoice::Tuned);
        const double error = testing::kernel_checks().at(v.kernel).relative_error();
        set_schedule_choice(ScheduleChoice::Hand);
        EXPECT_EQ(last_variant_run(v.kernel), "x86_hand");
        EXPECT_LE(error, testing::kernel_checks().at(v.kernel).tolerance);
        return;  // one kernel shows it
    }
    GTEST_SKIP() << "every x86 kernel has a tuned variant";
}

class KernelVariants : public ::testing::TestWithParam<VariantTarget> {};

TEST_P(KernelVariants, RunsTheForcedSubTargetAndMatchesReference) {
    const KernelVariant &v = *GetParam().variant;
    const KernelTarget &target = v.targets[GetParam().index];
    if (!can_use_target(target)) GTEST_SKIP() << "this CPU cannot run " << target.name;
    if (device_of(v.platform) != Device::CPU) HATTN_SKIP_WITHOUT_DEVICE(device_of(v.platform));
    auto check = testing::kernel_checks().find(v.kernel);
    ASSERT_NE(check, testing::kernel_checks().end()) << "kernel " << v.kernel << " has no check";

    if (v.targets.size() == 1) {
        EXPECT_EQ(run_forced(v, GetParam().index, check->second), "");
        return;
    }
    // A multi-target wrapper makes its choice on the first call and keeps it for the life of the
    // process, so every forced run gets a process of its own (gtest re-executes this test).
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(run_forced_and_exit(v, GetParam().index, check->second),
                ::testing::ExitedWithCode(0), "");
}

INSTANTIATE_TEST_SUITE_P(All, KernelVariants, ::testing::ValuesIn(every_variant_target()), test_name);

}  // namespace
}  // namespace hattn
