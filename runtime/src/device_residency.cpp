#include "device_residency.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "HalideRuntimeCuda.h"
#include "HalideRuntimeOpenCL.h"
#include "halide_call.h"
#include "hattn/error.h"

namespace hattn::detail {

namespace {

// Resident regions by host start address.
std::mutex regions_mutex;
std::map<const uint8_t *, ResidentRegion *> regions;
std::atomic<int64_t> uploaded{0};

// The region whose memory holds `p`, or nullptr. Caller holds regions_mutex.
std::pair<const uint8_t *, ResidentRegion *> region_holding(const uint8_t *p) {
    auto it = regions.upper_bound(p);
    if (it == regions.begin()) return {nullptr, nullptr};
    --it;
    if (p >= it->first + it->second->count() * static_cast<int64_t>(sizeof(float))) return {nullptr, nullptr};
    return {it->first, it->second};
}

}  // namespace

const halide_device_interface_t *device_interface(Device device) {
#if defined(__x86_64__)
    if (device == Device::CUDA) return halide_cuda_device_interface();
    if (device == Device::OpenCL) return halide_opencl_device_interface();
#endif
    (void)device;
    return nullptr;
}

void sync_device(Device device) {
    const halide_device_interface_t *iface = device_interface(device);
    if (!iface) return;
    // halide_device_sync needs a buffer of the API to name the device; a tiny allocation, made
    // once per API, serves.
    static std::mutex mutex;
    static std::map<Device, Halide::Runtime::Buffer<float>> probes;
    std::lock_guard<std::mutex> lock(mutex);
    Halide::Runtime::Buffer<float> &probe = probes[device];
    if (!probe.raw_buffer()->device) {
        probe = Halide::Runtime::Buffer<float>(1);
        check_halide_status(probe.device_malloc(iface), "device sync");
    }
    check_halide_status(halide_device_sync(nullptr, probe.raw_buffer()), "device sync");
}

ResidentRegion::ResidentRegion(float *host, int64_t count, Residency residency)
    : host_(host), count_(count), residency_(residency) {
    require(count <= std::numeric_limits<int32_t>::max(),
            "a resident tensor holds at most 2^31 - 1 floats, got " + std::to_string(count));
    mirror_ = Halide::Runtime::Buffer<float>(host, static_cast<int>(count));
    std::lock_guard<std::mutex> lock(regions_mutex);
    regions[reinterpret_cast<const uint8_t *>(host)] = this;
}

ResidentRegion::~ResidentRegion() {
    {
        std::lock_guard<std::mutex> lock(regions_mutex);
        regions.erase(reinterpret_cast<const uint8_t *>(host_));
    }
    mirror_.set_device_dirty(false);  // the host memory is going away with us
}

void ResidentRegion::host_changed(int64_t begin, int64_t end) {
    begin = std::max<int64_t>(begin, 0);
    end = std::min(end, count_);
    if (begin >= end || on_ == Device::CPU) return;  // nothing on a device yet: uploaded whole
    std::lock_guard<std::mutex> lock(regions_mutex);
    stale_.emplace_back(begin, end);
}

void ResidentRegion::fetch() {
    std::lock_guard<std::mutex> lock(regions_mutex);
    if (!device_newer_) return;
    mirror_.set_device_dirty(true);
    check_halide_status(mirror_.copy_to_host(), "fetch from device");
    device_newer_ = false;
}

void ResidentRegion::bind(halide_buffer_t *buf, Device device) {
    const halide_device_interface_t *iface = device_interface(device);
    if (on_ != device) {
        mirror_.set_device_dirty(false);
        mirror_.device_free();
        check_halide_status(mirror_.device_malloc(iface), "resident allocation");
        on_ = device;
        stale_.assign(1, {0, count_});
    }
    // Merging ranges first keeps one copy per run of rows.
    std::sort(stale_.begin(), stale_.end());
    for (size_t i = 0; i < stale_.size(); i++) {
        int64_t lo = stale_[i].first, hi = stale_[i].second;
        while (i + 1 < stale_.size() && stale_[i + 1].first <= hi) hi = std::max(hi, stale_[++i].second);
        Halide::Runtime::Buffer<float> part = mirror_.cropped(0, static_cast<int>(lo), static_cast<int>(hi - lo));
        part.set_host_dirty(true);
        check_halide_status(part.copy_to_device(iface), "upload to device");
        uploaded += (hi - lo) * static_cast<int64_t>(sizeof(float));
    }
    stale_.clear();
    buf->device = mirror_.raw_buffer()->device;
    buf->device_interface = iface;
    buf->set_host_dirty(false);
    buf->set_device_dirty(false);
}

void ResidentRegion::mark_device_written() { device_newer_ = true; }

DeviceCall::DeviceCall(Device device, std::initializer_list<halide_buffer_t *> buffers) : device_(device) {
    if (device == Device::CPU) return;
    std::lock_guard<std::mutex> lock(regions_mutex);
    for (halide_buffer_t *buf : buffers) {
        if (!buf) continue;  // a scalar argument
        auto [start, region] = region_holding(buf->begin());
        const bool whole_start = region && start == buf->host && buf->begin() == buf->host &&
                                 buf->end() <= start + region->count() * sizeof(float);
        if (whole_start) {
            region->bind(buf, device);
            buffers_.push_back({buf, region});
        } else {
            // Halide uploads an input only when its host side is marked newer than its device side.
            buf->set_host_dirty(true);
            buffers_.push_back({buf, nullptr});
        }
    }
}

void DeviceCall::finish() {
    if (device_ == Device::CPU) return;
    for (const Bound &b : buffers_) {
        if (!b.buf->device_dirty()) continue;
        if (b.region && b.region->residency() == Residency::DeviceOutput) {
            std::lock_guard<std::mutex> lock(regions_mutex);
            b.region->mark_device_written();
            continue;
        }
        check_halide_status(halide_copy_to_host(nullptr, b.buf), "copy to host");
        if (b.region) continue;  // host and device copy agree again
        // An output inside a resident region, not at its start: the region's copy is now stale.
        mark_written(b.buf);
    }
}

void DeviceCall::mark_written(const halide_buffer_t *buf) {
    ResidentRegion *region;
    const uint8_t *start;
    {
        std::lock_guard<std::mutex> lock(regions_mutex);
        std::tie(start, region) = region_holding(buf->begin());
    }
    if (!region) return;
    const int64_t offset = (buf->host - start) / static_cast<int64_t>(sizeof(float));
    // The runs of the innermost dimension (rows of a KV-cache slot, say): a strided view marks
    // the rows it wrote, not the span between them, unless that would take millions of runs.
    const int dims = buf->dimensions;
    const bool runs = dims > 0 && buf->dim[0].stride == 1;
    int64_t count = 1;
    for (int d = runs ? 1 : 0; d < dims; d++) count *= buf->dim[d].extent;
    if (!runs || count > (1 << 20)) {
        region->host_changed((buf->begin() - start) / static_cast<int64_t>(sizeof(float)),
                             (buf->end() - start + sizeof(float) - 1) / static_cast<int64_t>(sizeof(float)));
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t at = offset, rest = i;
        for (int d = 1; d < dims; d++) {
            at += (rest % buf->dim[d].extent) * buf->dim[d].stride;
            rest /= buf->dim[d].extent;
        }
        region->host_changed(at, at + buf->dim[0].extent);
    }
}

DeviceCall::~DeviceCall() {
    for (const Bound &b : buffers_) {
        if (b.region) {
            b.buf->device = 0;  // the region's allocation, not ours to free
            b.buf->device_interface = nullptr;
        } else if (b.buf->device) {
            b.buf->set_device_dirty(false);
            halide_device_free(nullptr, b.buf);
        }
        b.buf->set_device_dirty(false);
    }
}

int64_t resident_upload_bytes() { return uploaded; }

}  // namespace hattn::detail
