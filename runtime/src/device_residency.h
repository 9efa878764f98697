// Device copies that outlive a kernel call, and the binding of them to a call's buffers.
//
// On a GPU, a Halide pipeline copies each input that has no device allocation to the device and
// leaves its outputs there. hattn's API is host-side, so every call (DeviceCall) copies outputs
// back and frees what the pipeline allocated. Resident regions avoid the upload for memory that
// persists across calls (weights, KV caches): the region keeps a device copy of its host memory, a
// call's buffer that starts where the region starts is bound to that copy, and only the ranges the
// host changed since the last call are uploaded.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "HalideBuffer.h"
#include "hattn/device.h"
#include "hattn/tensor.h"

namespace hattn::detail {

const halide_device_interface_t *device_interface(Device device);  // nullptr for the CPU
void sync_device(Device device);

// Float memory [host, host + count) with a device copy kept on the current GPU. Registered in a
// process-wide table while it lives; the owner reports host writes with host_changed().
class ResidentRegion {
public:
    ResidentRegion(float *host, int64_t count, Residency residency);
    ~ResidentRegion();
    ResidentRegion(const ResidentRegion &) = delete;
    ResidentRegion &operator=(const ResidentRegion &) = delete;

    Residency residency() const { return residency_; }
    int64_t count() const { return count_; }
    // Elements [begin, end) now differ on the host: uploaded before the next call that binds them.
    void host_changed(int64_t begin, int64_t end);
    // DeviceOutput: copies what kernels left on the device into the host memory.
    void fetch();

private:
    friend class DeviceCall;
    // Gives `buf` (which starts at host_) this region's device copy, uploading stale ranges.
    void bind(halide_buffer_t *buf, Device device);
    void mark_device_written();

    float *host_;
    int64_t count_;
    Residency residency_;
    Halide::Runtime::Buffer<float> mirror_;  // the host memory, with the device allocation
    Device on_ = Device::CPU;                // where mirror_ is allocated
    std::vector<std::pair<int64_t, int64_t>> stale_;
    bool device_newer_ = false;  // DeviceOutput: kernels wrote it since the last fetch
};

// One kernel call's buffers on a GPU: binds resident memory before the call, and after it copies
// outputs to the host and frees the per-call device allocations. Does nothing on the CPU.
class DeviceCall {
public:
    DeviceCall(Device device, std::initializer_list<halide_buffer_t *> buffers);
    ~DeviceCall();  // unbinds and frees, also when the call failed
    DeviceCall(const DeviceCall &) = delete;
    DeviceCall &operator=(const DeviceCall &) = delete;

    void finish();  // after a successful call: outputs to the host

private:
    static void mark_written(const halide_buffer_t *buf);  // an output inside a resident region

    struct Bound {
        halide_buffer_t *buf;
        ResidentRegion *region;  // nullptr: the pipeline's own allocation
    };
    Device device_;
    std::vector<Bound> buffers_;
};

// Bytes uploaded to resident regions so far in this process (for tests of the upload accounting).
int64_t resident_upload_bytes();

}  // namespace hattn::detail
