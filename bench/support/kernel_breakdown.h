// A run's time kernel by kernel (hattn/kernel_times.h), for `hattn bench ... --kernel-times`.
#pragma once

#include <functional>
#include <vector>

#include "hattn/kernel_times.h"

namespace hattn::bench {

struct KernelBreakdown {
    int runs = 0;
    // Medians over the runs: each kernel's calls, host and device ms in one run, in the order of
    // their first call.
    std::vector<KernelTime> per_run;
    double ms = 0;                  // a run's wall time with every call waited for
    double outside_kernels_ms = 0;  // of it, the time outside any kernel call (host code, copies)
};

// One warm-up run, then `reps` runs recorded with a KernelTimes each.
KernelBreakdown kernel_breakdown(const std::function<void()> &run, int reps);

}  // namespace hattn::bench
