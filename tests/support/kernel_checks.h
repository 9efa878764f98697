// Each kernel registers one check: run it on seeded inputs and return its relative error against the
// float64 reference. The forced-variant tests run every registered check under every variant and
// sub-target listed in the kernel table, so a new kernel is covered once it registers here.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace hattn::testing {

struct KernelCheck {
    std::function<double()> relative_error;  // on small shapes off every tile size
    double tolerance;
    // The same at the generator's estimate sizes. Adams2019 (Halide 14) tiles outputs with
    // ShiftInwards splits sized for the estimates, so autoscheduled variants need extents at
    // least that large; they are checked here.
    std::function<double()> at_estimates;
};

inline std::map<std::string, KernelCheck> &kernel_checks() {
    static std::map<std::string, KernelCheck> checks;
    return checks;
}

inline bool register_kernel_check(const std::string &kernel, KernelCheck check) {
    kernel_checks()[kernel] = std::move(check);
    return true;
}

}  // namespace hattn::testing
