#include "hattn/kernel_table.h"

#include "halide_call.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <atomic>
#include <utility>

namespace hattn {

namespace {

std::atomic<bool> dotprod_enabled{true};

// The one table of schedule names.
constexpr std::pair<ScheduleChoice, const char *> schedules[] = {
    {ScheduleChoice::Hand, "hand"},   {ScheduleChoice::Adams2019, "adams2019"}, {ScheduleChoice::Mullapudi2016, "mullapudi2016"},
    {ScheduleChoice::Tuned, "tuned"}, {ScheduleChoice::Rows, "rows"},           {ScheduleChoice::SmallTiles, "small_tiles"}};

}  // namespace

const char *schedule_name(ScheduleChoice schedule) {
    for (const auto &[choice, name] : schedules) {
        if (choice == schedule) return name;
    }
    return "?";
}

std::optional<ScheduleChoice> schedule_named(const std::string &name) {
    for (const auto &[choice, known] : schedules) {
        if (name == known) return choice;
    }
    return std::nullopt;
}

std::string schedule_names() {
    std::string names;
    for (const auto &[choice, name] : schedules) names += (names.empty() ? "" : ", ") + std::string(name);
    return names;
}

void set_arm_dotprod_enabled(bool enabled) { dotprod_enabled = enabled; }

bool arm_dotprod_allowed() {
#if defined(__aarch64__)
    return dotprod_enabled && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP);
#else
    return false;
#endif
}

bool can_use_target(const KernelTarget &target) {
    detail::prepare_halide_runtime();  // so that HATTN_MAX_ISA applies here too
#if defined(__aarch64__)
    // Halide 14's AArch64 runtime detects no CPU features and lets unknown ones through.
    for (int f : target.features) {
        if (f == halide_target_feature_arm_dot_prod && !arm_dotprod_allowed()) return false;
    }
#endif
    constexpr int words = (halide_target_feature_end + 63) / 64;
    uint64_t bits[words] = {};
    for (int f : target.features) bits[f / 64] |= uint64_t(1) << (f % 64);
    return halide_can_use_target_features(words, bits) != 0;
}

const KernelTarget &selected_target(const KernelVariant &variant) {
    for (const KernelTarget &t : variant.targets) {
        if (can_use_target(t)) return t;
    }
    return variant.targets.back();
}

}  // namespace hattn
