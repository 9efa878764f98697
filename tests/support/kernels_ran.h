// The kernels a call ran, by name, from a KernelTimes record around it: for tests of which
// variant a call chooses.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hattn/kernel_times.h"

namespace hattn::testing {

// Each kernel `call` ran, in the order of its first call.
inline std::vector<std::string> kernels_ran(const std::function<void()> &call) {
    const KernelTimes times;
    call();
    std::vector<std::string> names;
    for (const KernelTime &k : times.totals()) names.push_back(k.kernel);
    return names;
}

// The one kernel `call` ran, or "several kernels" (or "no kernel").
inline std::string only_kernel_ran(const std::function<void()> &call) {
    const std::vector<std::string> names = kernels_ran(call);
    if (names.empty()) return "no kernel";
    return names.size() == 1 ? names[0] : std::string("several kernels");
}

}  // namespace hattn::testing
