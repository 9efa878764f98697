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
std::atomic<int64_t> resident_uploaded{0}, call_uploaded{0}, downloaded{0};

// The region whose memory holds all of `buf`, or nullptr. Caller holds regions_mutex.
std::pair<const uint8_t *, ResidentRegion *> region_holding(const halide_buffer_t *buf) {
    const uint8_t *begin = buf->begin(), *end = buf->end();
    auto it = regions.upper_bound(begin);
    if (it == regions.begin()) return {nullptr, nullptr};
    --it;
    if (end > it->first + it->second->count() * static_cast<int64_t>(sizeof(float))) return {nullptr, nullptr};
    return {it->first, it->second};
}

// The bytes of a data buffer (activations, weights); int32 buffers carry lengths, positions and
// indices, not data.
int64_t data_bytes(const halide_buffer_t *buf) {
    if (buf->type == halide_type_of<int32_t>()) return 0;
    return static_cast<int64_t>(buf->number_of_elements()) * buf->type.bytes();
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

ResidentRegion::ResidentRegion(void *host, int64_t count, Residency residency)
    : host_(host), count_(count), residency_(residency) {
    require(count <= std::numeric_limits<int32_t>::max(),
            "a resident tensor holds at most 2^31 - 1 floats, got " + std::to_string(count));
    mirror_ = Halide::Runtime::Buffer<float>(static_cast<float *>(host), static_cast<int>(count));
    std::lock_guard<std::mutex> lock(regions_mutex);
    regions[static_cast<const uint8_t *>(host)] = this;
}

ResidentRegion::~ResidentRegion() {
    {
        std::lock_guard<std::mutex> lock(regions_mutex);
        regions.erase(static_cast<const uint8_t *>(host_));
    }
    mirror_.set_device_dirty(false);  // the host memory is going away with us
}

void ResidentRegion::host_changed(int64_t begin, int64_t end) {
    begin = std::max<int64_t>(begin, 0);
    end = std::min(end, count_);
    // A mirror with nothing on a device yet is uploaded whole at its first binding.
    if (begin >= end || !tracks_host_changes()) return;
    std::lock_guard<std::mutex> lock(regions_mutex);
    stale_.emplace_back(begin, end);
}

void ResidentRegion::fetch() {
    std::lock_guard<std::mutex> lock(regions_mutex);
    fetch_locked();
}

void ResidentRegion::fetch_locked() {
    if (!device_newer_) return;
    mirror_.set_device_dirty(true);
    check_halide_status(mirror_.copy_to_host(), "fetch from device");
    downloaded += count_ * static_cast<int64_t>(sizeof(float));
    device_newer_ = false;
}

bool ResidentRegion::bind(halide_buffer_t *buf, Device device, Halide::Runtime::Buffer<float> &crop) {
    const halide_device_interface_t *iface = device_interface(device);
    if (on_ != device) {
        // Moving from another GPU API: what only that device held comes to the host first.
        const bool moving = on_ != Device::CPU;
        if (moving) fetch_locked();
        mirror_.set_device_dirty(false);
        mirror_.device_free();
        check_halide_status(mirror_.device_malloc(iface), "resident allocation");
        on_ = device;
        // A mirror starts as the host's values; a new DeviceOutput region only with what the host
        // reported writing (kernels write the rest first).
        if (residency_ != Residency::DeviceOutput || moving) stale_.assign(1, {0, count_});
    }
    // Merging ranges first keeps one copy per run of rows.
    std::sort(stale_.begin(), stale_.end());
    for (size_t i = 0; i < stale_.size(); i++) {
        int64_t lo = stale_[i].first, hi = stale_[i].second;
        while (i + 1 < stale_.size() && stale_[i + 1].first <= hi) hi = std::max(hi, stale_[++i].second);
        Halide::Runtime::Buffer<float> part = mirror_.cropped(0, static_cast<int>(lo), static_cast<int>(hi - lo));
        if (!part.raw_buffer()->device) {  // no crop there: the whole region goes up instead
            part = mirror_;
            lo = 0;
            hi = count_;
            i = stale_.size();
        }
        part.set_host_dirty(true);
        check_halide_status(part.copy_to_device(iface), "upload to device");
        resident_uploaded += (hi - lo) * static_cast<int64_t>(sizeof(float));
    }
    stale_.clear();
    const int64_t offset_bytes = buf->host - static_cast<const uint8_t *>(host_);
    if (offset_bytes % static_cast<int64_t>(sizeof(float)) != 0) return false;
    const int64_t offset = offset_bytes / static_cast<int64_t>(sizeof(float));
    if (offset == 0) {
        buf->device = mirror_.raw_buffer()->device;
    } else {
        const int64_t align = device == Device::OpenCL ? opencl_sub_buffer_alignment.load() : 1;
        if (align == 0 || (offset * static_cast<int64_t>(sizeof(float))) % align != 0) return false;
        const int64_t span = (buf->end() - buf->host + sizeof(float) - 1) / static_cast<int64_t>(sizeof(float));
        crop = mirror_.cropped(0, static_cast<int>(offset), static_cast<int>(span));
        if (!crop.raw_buffer()->device) return false;
        buf->device = crop.raw_buffer()->device;
    }
    buf->device_interface = iface;
    buf->set_host_dirty(false);
    buf->set_device_dirty(false);
    return true;
}

void ResidentRegion::mark_device_written() { device_newer_ = true; }

DeviceCall::DeviceCall(Device device, std::initializer_list<halide_buffer_t *> buffers) : device_(device) {
    if (device == Device::CPU) {
        // CPU kernels read and write the host memory: a region's host values must be current
        // before, and its device copy is stale after.
        for (halide_buffer_t *buf : buffers) {
            if (!buf) continue;
            ResidentRegion *region;
            {
                std::lock_guard<std::mutex> lock(regions_mutex);
                region = region_holding(buf).second;
            }
            if (!region) continue;
            region->fetch();
            if (region->residency() != Residency::ReadOnly) host_wrote(buf);
        }
        return;
    }
    std::lock_guard<std::mutex> lock(regions_mutex);
    for (halide_buffer_t *buf : buffers) {
        if (!buf) continue;  // a scalar argument
        ResidentRegion *region = region_holding(buf).second;
        Bound bound{buf, nullptr, {}};
        if (region && buf->begin() == buf->host && region->bind(buf, device, bound.crop)) {
            bound.region = region;
        } else {
            // Unbound memory of a region is read from the host: make it current there.
            if (region) region->fetch_locked();
            // Halide uploads an input only when its host side is marked newer than its device side.
            buf->set_host_dirty(true);
        }
        buffers_.push_back(std::move(bound));
    }
}

void DeviceCall::finish() {
    if (device_ == Device::CPU) return;
    for (const Bound &b : buffers_) {
        if (!b.buf->device_dirty()) {
            if (!b.region) call_uploaded += data_bytes(b.buf);  // an input the call uploaded
            continue;
        }
        if (b.region && b.region->residency() == Residency::DeviceOutput) {
            std::lock_guard<std::mutex> lock(regions_mutex);
            b.region->mark_device_written();
            continue;
        }
        // Only the elements the kernel wrote come down; a mirror's device copy stays current.
        check_halide_status(halide_copy_to_host(nullptr, b.buf), "copy to host");
        downloaded += data_bytes(b.buf);
        if (!b.region) host_wrote(b.buf);  // written through the call's own allocation
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

void host_wrote(const halide_buffer_t *buf) {
    ResidentRegion *region;
    const uint8_t *start;
    {
        std::lock_guard<std::mutex> lock(regions_mutex);
        std::tie(start, region) = region_holding(buf);
    }
    if (!region || !region->tracks_host_changes()) return;  // (the CPU-only case: nothing to do)
    const int64_t word = sizeof(float), elem = buf->type.bytes();
    // Bytes [begin, end) changed: the words that hold them are stale.
    const auto changed = [&](int64_t begin, int64_t end) { region->host_changed(begin / word, (end + word - 1) / word); };
    // The runs of the innermost dimension (rows of a KV-cache slot, say): a strided view marks
    // the rows it wrote, not the span between them, unless that would take millions of runs.
    const int dims = buf->dimensions;
    const bool runs = dims > 0 && buf->dim[0].stride == 1;
    int64_t count = 1;
    for (int d = runs ? 1 : 0; d < dims; d++) count *= buf->dim[d].extent;
    if (!runs || count > (1 << 20)) {
        changed(buf->begin() - start, buf->end() - start);
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t at = buf->host - start, rest = i;
        for (int d = 1; d < dims; d++) {
            at += (rest % buf->dim[d].extent) * buf->dim[d].stride * elem;
            rest /= buf->dim[d].extent;
        }
        changed(at, at + buf->dim[0].extent * elem);
    }
}

bool copy_on_device(const TensorView &src, const TensorView &dst) {
    const Device device = current_device();
    if (device == Device::CPU) return false;
    Halide::Runtime::Buffer<float> from = src.halide_buffer(), to = dst.halide_buffer();
    {
        // On the device when src's values are only there, or when both sides have a device copy
        // there (the copy then costs no transfer, and leaves dst's device copy current).
        std::lock_guard<std::mutex> lock(regions_mutex);
        const ResidentRegion *source = region_holding(from.raw_buffer()).second;
        if (!source || source->on_ != device) return false;
        const bool only_there = source->residency() == Residency::DeviceOutput && source->device_newer();
        if (!only_there && !region_holding(to.raw_buffer()).second) return false;
    }
    DeviceCall call(device, {from.raw_buffer(), to.raw_buffer()});
    check_halide_status(halide_buffer_copy(nullptr, from.raw_buffer(), device_interface(device), to.raw_buffer()),
                        "copy on device");
    call.finish();
    return true;
}

ScopedRegion::ScopedRegion(const void *host, int64_t bytes, Residency residency) {
    if (current_device() == Device::CPU || bytes == 0) return;
    require(bytes % static_cast<int64_t>(sizeof(float)) == 0, "a device region spans whole 4-byte words");
    {
        // Regions never overlap: the last one starting before the end must end before the start.
        std::lock_guard<std::mutex> lock(regions_mutex);
        const auto *begin = static_cast<const uint8_t *>(host);
        auto it = regions.lower_bound(begin + bytes);
        if (it != regions.begin() && (--it)->first + it->second->count() * static_cast<int64_t>(sizeof(float)) > begin)
            return;
    }
    region_ = std::make_unique<ResidentRegion>(const_cast<void *>(host), bytes / static_cast<int64_t>(sizeof(float)),
                                               residency);
}

TensorView resident_zeros(int64_t n) {
    static std::mutex mutex;
    // Outgrown buffers stay alive: a call on another thread may still be reading one.
    static std::vector<std::unique_ptr<Tensor>> buffers;
    std::lock_guard<std::mutex> lock(mutex);
    if (buffers.empty() || buffers.back()->size() < n) {
        const int64_t size = std::max<int64_t>(n, buffers.empty() ? 1024 : 2 * buffers.back()->size());
        buffers.push_back(std::make_unique<Tensor>(Shape{size}));
        buffers.back()->keep_on_device(Residency::ReadOnly);
    }
    return TensorView(buffers.back()->data(), {n});
}

Tensor scratch_tensor(Shape shape) {
    Tensor t(std::move(shape));
    if (current_device() != Device::CPU) t.keep_on_device(Residency::DeviceOutput);
    return t;
}

Transfers data_transfers() { return {resident_uploaded + call_uploaded, downloaded}; }
int64_t resident_upload_bytes() { return resident_uploaded; }

}  // namespace hattn::detail
