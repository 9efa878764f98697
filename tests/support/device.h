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

// Test names for suites run on each GPU API: "opencl", "cuda".
inline std::string gpu_api_name(const ::testing::TestParamInfo<Device> &info) { return device_name(info.param); }

// A suite parameterised by GPU API that skips (or fails, where required) without the device.
class OnEachGpu : public ::testing::TestWithParam<Device> {
protected:
    void SetUp() override;
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

inline void hattn::testing::OnEachGpu::SetUp() { HATTN_SKIP_WITHOUT_DEVICE(GetParam()); }

// Instantiates a suite derived from OnEachGpu for OpenCL and CUDA.
#define HATTN_INSTANTIATE_ON_EACH_GPU(suite)                                                        \
    INSTANTIATE_TEST_SUITE_P(Gpu, suite, ::testing::Values(::hattn::Device::OpenCL, ::hattn::Device::CUDA), \
                             ::hattn::testing::gpu_api_name)
