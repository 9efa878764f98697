// GPU tests skip, saying why, where the device is unavailable, except where the environment
// requires the device (HATTN_REQUIRE_CUDA=1, HATTN_REQUIRE_OPENCL=1): then the skip is a failure,
// so that a run on a GPU machine can never pass by skipping.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hattn/device.h"

namespace hattn::testing {

inline bool device_required(Device device) {
#if !defined(__x86_64__)
    return false;  // no GPU variants in this build: nothing to require
#endif
    const char *name = device == Device::CUDA ? "HATTN_REQUIRE_CUDA" : "HATTN_REQUIRE_OPENCL";
    const char *value = std::getenv(name);
    return device != Device::CPU && value && std::string(value) == "1";
}

// Runs the kernels on `device` while it lives, then on the CPU again.
struct OnDevice {
    explicit OnDevice(Device device) { set_device(device); }
    ~OnDevice() { set_device(Device::CPU); }
    OnDevice(const OnDevice &) = delete;
    OnDevice &operator=(const OnDevice &) = delete;
};

}  // namespace hattn::testing

// In a test body: returns from the test, skipped or failed, when `device` cannot run kernels here.
#define HATTN_SKIP_WITHOUT_DEVICE(device)                                                          \
    do {                                                                                           \
        const std::string hattn_reason = ::hattn::device_unavailable_reason(device);               \
        if (!hattn_reason.empty()) {                                                               \
            if (::hattn::testing::device_required(device)) {                                       \
                FAIL() << ::hattn::device_name(device) << " is required but " << hattn_reason;     \
            }                                                                                      \
            GTEST_SKIP() << ::hattn::device_name(device) << " unavailable: " << hattn_reason;      \
        }                                                                                          \
    } while (0)
