#include "bench/support/kernel_breakdown.h"

#include <algorithm>
#include <chrono>

#include "hattn/device.h"

namespace hattn::bench {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

KernelBreakdown kernel_breakdown(const std::function<void()> &run, int reps) {
    run();  // warm-up, as median_ms's
    device_sync();
    struct Run {
        std::vector<KernelTime> kernels;
        double ms;
    };
    std::vector<Run> runs;
    for (int i = 0; i < std::max(reps, 1); i++) {
        const KernelTimes times;
        const auto t0 = std::chrono::steady_clock::now();
        run();
        device_sync();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        runs.push_back({times.totals(), ms});
    }
    KernelBreakdown b;
    b.runs = static_cast<int>(runs.size());
    std::vector<double> walls, outside;
    for (const Run &r : runs) {
        double in_kernels = 0;
        for (const KernelTime &k : r.kernels) in_kernels += k.ms;
        walls.push_back(r.ms);
        outside.push_back(r.ms - in_kernels);
    }
    b.ms = median(walls);
    b.outside_kernels_ms = median(outside);
    // The runs call the same kernels; a kernel missing from a run counts as 0 there.
    for (const KernelTime &first : runs.front().kernels) {
        std::vector<double> calls, host_ms, ms;
        for (const Run &r : runs) {
            const auto it = std::find_if(r.kernels.begin(), r.kernels.end(),
                                         [&](const KernelTime &k) { return k.kernel == first.kernel; });
            const bool called = it != r.kernels.end();
            calls.push_back(called ? static_cast<double>(it->calls) : 0.0);
            host_ms.push_back(called ? it->host_ms : 0.0);
            ms.push_back(called ? it->ms : 0.0);
        }
        b.per_run.push_back({first.kernel, static_cast<int64_t>(median(calls)), median(host_ms), median(ms)});
    }
    return b;
}

}  // namespace hattn::bench
