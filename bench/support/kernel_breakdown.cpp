#include "bench/support/kernel_breakdown.h"

#include <algorithm>

#include "bench/support/workloads.h"

namespace hattn::bench {

KernelBreakdown kernel_breakdown(const std::function<void()> &run, int reps) {
    warm_up(run);
    std::vector<KernelBreakdown> runs;
    for (int i = 0; i < std::max(reps, 1); i++) {
        const KernelTimes times;
        KernelBreakdown r;
        r.ms = wall_ms(run);
        r.per_run = times.totals();
        r.outside_kernels_ms = r.ms;
        for (const KernelTime &k : r.per_run) r.outside_kernels_ms -= k.device_ms;
        runs.push_back(std::move(r));
    }
    // The run of median wall time, whole, so that its parts add up.
    std::sort(runs.begin(), runs.end(), [](const KernelBreakdown &a, const KernelBreakdown &b) { return a.ms < b.ms; });
    KernelBreakdown median = runs[runs.size() / 2];
    median.runs = static_cast<int>(runs.size());
    return median;
}

}  // namespace hattn::bench
