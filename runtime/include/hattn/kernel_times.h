// Where a call's time goes, kernel by kernel: for benchmarks (`hattn bench ... --kernel-times`).
//
// While a KernelTimes lives, every kernel call waits for the device before it starts and after it
// ends, so that each call's time is its own. A GPU's device copies between tensors are listed too,
// as `strided_copy` (one kernel launch) or `buffer_copy` (Halide's copy: a memcpy per contiguous run). A call's host part runs from its start until it
// returns: binding and uploading its buffers and launching its kernels on a GPU (whose work goes
// on asynchronously), the whole computation on the CPU. Its device part runs until the device
// has finished the call's work. The waits serialise what a GPU would overlap (the host preparing
// the next call while the device runs this one), so a run timed this way takes longer than one
// timed without: time the run without a KernelTimes, then break it down with one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hattn {

struct KernelTime {
    std::string kernel;  // as errors name it: attention_decode, projection, ...
    int64_t calls = 0;
    double host_ms = 0;    // from each call's start until it returned, summed over the calls
    double device_ms = 0;  // from each call's start until the device had finished it, summed
};

class KernelTimes {
public:
    // Starts recording. Only one may live at a time in a process: a second throws Error.
    KernelTimes();
    ~KernelTimes();
    KernelTimes(const KernelTimes &) = delete;
    KernelTimes &operator=(const KernelTimes &) = delete;

    // Each kernel called since the start, in the order of its first call. Calls that failed are
    // not counted.
    std::vector<KernelTime> totals() const;
};

}  // namespace hattn
