// A run's time kernel by kernel (hattn/kernel_times.h), for `hattn bench ... --kernel-times`.
#pragma once

#include <functional>
#include <vector>

#include "hattn/kernel_times.h"

namespace hattn::bench {

// One run of a benchmark, kernel by kernel: of `runs` such runs, the one of median wall time.
struct KernelBreakdown {
    int runs = 0;
    std::vector<KernelTime> per_run;  // each kernel's calls, host and device ms, in order of first call
    double ms = 0;                    // the run's wall time, every call waited for
    double outside_kernels_ms = 0;    // of it, the time outside any kernel call (host code)
};

// One warm-up run, then `reps` runs recorded with a KernelTimes each (odd reps: a true median).
KernelBreakdown kernel_breakdown(const std::function<void()> &run, int reps);

}  // namespace hattn::bench
