// Times one kernel call for hattn::KernelTimes (hattn/kernel_times.h): call_kernel starts a clock
// before it prepares the call's buffers and stops it once the call has returned. Without a
// KernelTimes recording, neither waits nor records anything.
#pragma once

#include <chrono>

namespace hattn::detail {

class KernelClock {
public:
    // While a KernelTimes records: waits for the device's earlier work, then starts.
    explicit KernelClock(const char *kernel);
    // Notes when the call returned, waits for the device, and adds the call to the totals. A call
    // that throws never gets here: failed calls are not counted.
    void stop();

private:
    const char *kernel_;
    bool started_ = false;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace hattn::detail
