#include "hattn/kernel_times.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "device_residency.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "kernel_clock.h"

namespace hattn {

namespace {

std::atomic<bool> recording{false};
std::mutex mutex;
std::vector<KernelTime> recorded;  // guarded by mutex

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

KernelTimes::KernelTimes() {
    std::lock_guard<std::mutex> lock(mutex);
    require(!recording.load(), "KernelTimes: another one is recording already");
    recorded.clear();
    recording.store(true);
}

KernelTimes::~KernelTimes() {
    std::lock_guard<std::mutex> lock(mutex);
    recording.store(false);
}

std::vector<KernelTime> KernelTimes::totals() const {
    std::lock_guard<std::mutex> lock(mutex);
    return recorded;
}

namespace detail {

KernelClock::KernelClock(const char *kernel) : kernel_(kernel) {
    if (!recording.load(std::memory_order_relaxed)) return;
    sync_device(current_device());  // earlier calls' work is theirs
    started_ = true;
    start_ = Clock::now();
}

void KernelClock::stop() {
    if (!started_) return;
    const Clock::time_point returned = Clock::now();
    sync_device(current_device());
    const Clock::time_point finished = Clock::now();
    std::lock_guard<std::mutex> lock(mutex);
    if (!recording.load()) return;  // the KernelTimes ended during the call
    KernelTime *entry = nullptr;
    for (KernelTime &t : recorded) {
        if (t.kernel == kernel_) entry = &t;
    }
    if (!entry) entry = &recorded.emplace_back(KernelTime{kernel_});
    entry->calls++;
    entry->host_ms += ms_between(start_, returned);
    entry->device_ms += ms_between(start_, finished);
}

}  // namespace detail

}  // namespace hattn
