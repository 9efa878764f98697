// Device copies that outlive a kernel call, and the binding of them to a call's buffers.
//
// On a GPU, a Halide pipeline copies each input that has no device allocation to the device and
// leaves its outputs there. hattn's API is host-side, so every call (DeviceCall) copies outputs
// back and frees what the pipeline allocated. Resident regions avoid the copies for memory that
// persists across calls: the region keeps a device copy of its host memory, and a call's buffer
// that lies inside the region is bound to that copy (through a device crop when it starts past the
// region's start).
// - Mirror regions (KV caches, layer state) and ReadOnly ones (weights, tables): the host values
//   are the truth. Only the ranges the host changed since the last call are uploaded; what a
//   kernel writes into the region on the device is copied to the host (just the written
//   elements), and so never uploaded again. CPU kernels give no sign of what they wrote: each
//   Mirror region they touched is taken as changed there, a ReadOnly one is not.
// - DeviceOutput regions (the intermediate results of a layer, a benchmark's output): the device
//   copy is the truth. Kernel results stay there, and the next kernel reads them in place; the
//   host values are neither uploaded nor current until fetch().
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "HalideBuffer.h"
#include "hattn/device.h"
#include "hattn/tensor.h"

namespace hattn::detail {

const halide_device_interface_t *device_interface(Device device);  // nullptr for the CPU
void sync_device(Device device);

// OpenCL binds memory inside a resident region through sub-buffers, whose start every device
// wants aligned (CL_DEVICE_MEM_BASE_ADDR_ALIGN): the largest such alignment in bytes, set when
// OpenCL is probed. CUDA crops anywhere.
inline std::atomic<int64_t> opencl_sub_buffer_alignment{0};

// What copy_on_device() did.
enum DeviceCopy {
    NotDone,             // nothing done: the caller copies on the host
    Done,
    DoneMirrorFromHost,  // dst's device copy is done; the caller copies src to dst's host memory
                         // (src's region is fetched first), which stays current that way
};

// Memory [host, host + 4 count) with a device copy kept on the current GPU, counted in 4-byte
// words (floats, or packed integers). Registered in a process-wide table while it lives; the owner
// reports host writes with host_changed().
class ResidentRegion {
public:
    ResidentRegion(void *host, int64_t count, Residency residency);
    ~ResidentRegion();
    ResidentRegion(const ResidentRegion &) = delete;
    ResidentRegion &operator=(const ResidentRegion &) = delete;

    Residency residency() const { return residency_; }
    int64_t count() const { return count_; }
    const void *host() const { return host_; }
    // Elements [begin, end) now differ on the host: uploaded before the next call that binds them.
    void host_changed(int64_t begin, int64_t end);
    // Whether host_changed() records anything: not before a mirror has a device copy.
    bool tracks_host_changes() const { return on_ != Device::CPU || residency_ == Residency::DeviceOutput; }
    // Copies what kernels left only on the device (DeviceOutput) into the host memory, keeping
    // host writes not uploaded yet.
    void fetch();

private:
    friend class DeviceCall;
    friend DeviceCopy copy_on_device(const ConstTensorView &src, const TensorView &dst);
    // Gives `buf` (which lies inside the region) this region's device copy, uploading stale
    // ranges first. The copy starts where `buf` starts: a crop of the allocation, kept in `crop`
    // while `buf` uses it. False where the device API cannot crop there (buf is left unbound).
    bool bind(halide_buffer_t *buf, Device device, Halide::Runtime::Buffer<float> &crop);
    void mark_device_written();
    void fetch_locked();  // fetch(), the caller holding the region table's lock
    bool device_newer() const { return device_newer_; }

    void *host_;
    int64_t count_;
    Residency residency_;
    Halide::Runtime::Buffer<float> mirror_;  // the host memory, with the device allocation
    std::atomic<Device> on_{Device::CPU};    // where mirror_ is allocated
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
    void release();  // unbinds the region memory and frees the call's own allocations
    struct Bound {
        halide_buffer_t *buf;
        ResidentRegion *region;  // nullptr: the pipeline's own allocation
        Halide::Runtime::Buffer<float> crop;  // the region's device copy from buf's start
    };
    Device device_;
    std::vector<Bound> buffers_;
    bool finished_ = false;
};

// Copies src into dst on the current GPU when src holds kernel results that live only there (a
// DeviceOutput region), or when src and dst both lie in resident regions and src's has a copy on
// the device; the result lands where dst's memory lives (its region, or the host). See DeviceCopy.
DeviceCopy copy_on_device(const ConstTensorView &src, const TensorView &dst);

// The host wrote `buf`'s elements: where they lie in a region with a device copy, it goes stale.
void host_wrote(const halide_buffer_t *buf);
void host_wrote(const ConstTensorView &t);
// Host code is about to read t: where it lies in a region whose device copy holds newer kernel
// results, they come to the host first.
void host_reads(const ConstTensorView &t);

// A region for the duration of one layer or kernel call, over memory the caller owns: on a GPU
// it lives on the device while this lives. Nothing on the CPU, or where the memory is resident
// already. `bytes` is a multiple of 4. Calls on several threads may pass the same memory (one
// input to two layers): they share one region, which lives until the last of them ends.
class ScopedRegion {
public:
    ScopedRegion(const void *host, int64_t bytes, Residency residency);
    ~ScopedRegion();
    ScopedRegion(const ScopedRegion &) = delete;
    ScopedRegion &operator=(const ScopedRegion &) = delete;

private:
    std::shared_ptr<ResidentRegion> region_;
};

// The input of a layer call, which several of its kernels read: uploaded once.
inline ScopedRegion upload_once(const Tensor &x) {
    return ScopedRegion(x.data(), x.size() * static_cast<int64_t>(sizeof(float)), Residency::Mirror);
}

// n zeros, resident (a kernel's absent bias): one process-wide buffer, grown on demand, so that
// no call uploads zeros.
ConstTensorView resident_zeros(int64_t n);

// An intermediate result between kernels, whose values are unspecified until a kernel writes them.
// On a GPU it is a DeviceOutput region: it lives on the device, and its host values are not kept.
// On the CPU, a plain tensor (Tensor::unset: no zero fill).
Tensor scratch_tensor(Shape shape);

// Data bytes moved between host and device so far in this process: resident uploads and fetches,
// and each call's unbound inputs and outputs. Data is floats and 8-bit values (activations,
// weights); int32 buffers (lengths, positions, indices) are not counted. For tests that a step
// moves only what it must.
struct Transfers {
    int64_t uploaded = 0, downloaded = 0;
};
Transfers data_transfers();
int64_t resident_upload_bytes();  // the resident part of data_transfers().uploaded

}  // namespace hattn::detail
