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
#include "kernel_variants.h"
#include "strided_copy.h"

namespace hattn::detail {

namespace {

// Resident regions by host start address.
std::mutex regions_mutex;
std::map<const uint8_t *, ResidentRegion *> regions;
std::atomic<int64_t> resident_uploaded{0}, call_uploaded{0}, downloaded{0};

// The region whose memory holds all of [begin, end), or nullptr. Caller holds regions_mutex.
std::pair<const uint8_t *, ResidentRegion *> region_holding(const uint8_t *begin, const uint8_t *end) {
    auto it = regions.upper_bound(begin);
    if (it == regions.begin()) return {nullptr, nullptr};
    --it;
    if (end > it->first + it->second->count() * static_cast<int64_t>(sizeof(float))) return {nullptr, nullptr};
    return {it->first, it->second};
}

std::pair<const uint8_t *, ResidentRegion *> region_holding(const halide_buffer_t *buf) {
    return region_holding(buf->begin(), buf->end());
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
    std::lock_guard<std::mutex> lock(regions_mutex);
    const bool added = regions.emplace(static_cast<const uint8_t *>(host), this).second;
    require(added, "internal: memory made resident twice");
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
    // Rows marked in order join the previous range; past a few thousand ranges (a CPU kernel that
    // touched a whole cache row by row) the region is simply stale as a whole.
    if (!stale_.empty() && begin <= stale_.back().second && end >= stale_.back().first) {
        stale_.back() = {std::min(begin, stale_.back().first), std::max(end, stale_.back().second)};
    } else if (stale_.size() >= 4096) {
        stale_.assign(1, {0, count_});
    } else {
        stale_.emplace_back(begin, end);
    }
}

void ResidentRegion::fetch() {
    std::lock_guard<std::mutex> lock(regions_mutex);
    fetch_locked();
}

void ResidentRegion::fetch_locked() {
    if (!device_newer_) return;
    // Host writes not uploaded yet are newer than the device copy: they survive the download.
    float *host = static_cast<float *>(host_);
    std::vector<std::vector<float>> kept;
    for (const auto &[lo, hi] : stale_) kept.emplace_back(host + lo, host + hi);
    mirror_.set_device_dirty(true);
    check_halide_status(mirror_.copy_to_host(), "fetch from device");
    for (size_t i = 0; i < stale_.size(); i++) std::copy(kept[i].begin(), kept[i].end(), host + stale_[i].first);
    downloaded += count_ * static_cast<int64_t>(sizeof(float));
    device_newer_ = false;
}

bool ResidentRegion::bind(halide_buffer_t *buf, Device device, Halide::Runtime::Buffer<float> &crop) {
    const halide_device_interface_t *iface = device_interface(device);
    if (on_ != device) {
        // Moving from another GPU API: what only that device held comes to the host first.
        const bool moving = on_ != Device::CPU;
        if (moving) fetch_locked();
        // The mirror (a Halide buffer, 32-bit extents) is made at the first binding, so that the
        // CPU never meets its limit.
        require(count_ <= std::numeric_limits<int32_t>::max(),
                [&] { return "a tensor kept on a GPU holds at most 2^31 - 1 floats, got " + std::to_string(count_); });
        if (!moving) mirror_ = Halide::Runtime::Buffer<float>(static_cast<float *>(host_), static_cast<int>(count_));
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
        if (!part.raw_buffer()->device) {
            // No crop there (an OpenCL offset the device cannot align): the whole region goes up,
            // after what only the device held has come down.
            fetch_locked();
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
    try {
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
    } catch (...) {
        release();  // the buffers bound so far must not free the regions' allocations
        throw;
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
    finished_ = true;
}

DeviceCall::~DeviceCall() { release(); }

void DeviceCall::release() {
    for (const Bound &b : buffers_) {
        // A call that failed may have written part of a mirror's device copy: the host's values,
        // unchanged, go up again before the next use.
        if (!finished_ && b.region && b.region->residency() == Residency::Mirror) host_wrote(b.buf);
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

namespace {

// Memory an array view covers: its first element, element size, and (extent, stride in elements)
// per dimension, innermost first. Strides are non-negative.
struct Footprint {
    const uint8_t *host;
    int64_t elem;
    std::vector<std::pair<int64_t, int64_t>> dims;

    int64_t span_bytes() const {
        int64_t last = 0;
        for (const auto &[extent, stride] : dims) {
            if (extent == 0) return 0;
            last += (extent - 1) * stride;
        }
        return (last + 1) * elem;
    }
};

Footprint footprint_of(const halide_buffer_t *buf) {
    Footprint f{buf->host, buf->type.bytes(), {}};
    for (int d = 0; d < buf->dimensions; d++) f.dims.emplace_back(buf->dim[d].extent, buf->dim[d].stride);
    return f;
}

Footprint footprint_of(const ConstTensorView &t) {
    Footprint f{reinterpret_cast<const uint8_t *>(t.data), static_cast<int64_t>(sizeof(float)), {}};
    int64_t dense = 1;  // the stride of a contiguous view's dimension
    for (int d = t.rank() - 1; d >= 0; d--) {
        f.dims.emplace_back(t.shape[d], t.strides.empty() ? dense : t.strides[d]);
        dense *= t.shape[d];
    }
    return f;
}

// The region holding all of f's memory, or nullptr; `start` receives the region's start.
ResidentRegion *region_of(const Footprint &f, const uint8_t **start = nullptr) {
    const int64_t span = f.span_bytes();
    if (span == 0) return nullptr;
    std::lock_guard<std::mutex> lock(regions_mutex);
    auto [at, region] = region_holding(f.host, f.host + span);
    if (start) *start = at;
    return region;
}

void mark_host_writes(const Footprint &f) {
    const uint8_t *start = nullptr;
    ResidentRegion *region = region_of(f, &start);
    if (!region || !region->tracks_host_changes()) return;  // (the CPU-only case: nothing to do)
    const int64_t word = sizeof(float);
    // Bytes [begin, end) changed: the words that hold them are stale.
    const auto changed = [&](int64_t begin, int64_t end) { region->host_changed(begin / word, (end + word - 1) / word); };
    // Runs of contiguous memory (the rows of a KV-cache slot, say): a strided view marks the rows
    // it wrote, not the span between them, unless that would take very many runs.
    size_t contiguous = 0;
    int64_t run = 1;
    while (contiguous < f.dims.size() && f.dims[contiguous].second == run) run *= f.dims[contiguous++].first;
    int64_t count = 1;
    for (size_t d = contiguous; d < f.dims.size(); d++) count *= f.dims[d].first;
    const int64_t offset = f.host - start;
    if (contiguous == 0 || count > (1 << 16)) {
        changed(offset, offset + f.span_bytes());
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t at = offset, rest = i;
        for (size_t d = contiguous; d < f.dims.size(); d++) {
            at += (rest % f.dims[d].first) * f.dims[d].second * f.elem;
            rest /= f.dims[d].first;
        }
        changed(at, at + run * f.elem);
    }
}

}  // namespace

void host_wrote(const halide_buffer_t *buf) { mark_host_writes(footprint_of(buf)); }
void host_wrote(const ConstTensorView &t) { mark_host_writes(footprint_of(t)); }

void host_reads(const ConstTensorView &t) {
    if (ResidentRegion *region = region_of(footprint_of(t))) region->fetch();
}

DeviceCopy copy_on_device(const ConstTensorView &src, const TensorView &dst) {
    const Device device = current_device();
    if (device == Device::CPU) return DeviceCopy::NotDone;
    Halide::Runtime::Buffer<float> from = halide_buffer(src), to = halide_buffer(dst);
    bool mirror_from_host;
    {
        // On the device when src's values are only there, or when both sides have a device copy
        // there (the copy then costs no transfer, and leaves dst's device copy current).
        std::lock_guard<std::mutex> lock(regions_mutex);
        const ResidentRegion *source = region_holding(from.raw_buffer()).second;
        if (!source || source->on_ != device) return DeviceCopy::NotDone;
        const bool only_there = source->residency() == Residency::DeviceOutput && source->device_newer();
        const ResidentRegion *target = region_holding(to.raw_buffer()).second;
        if (!only_there && !target) return DeviceCopy::NotDone;
        // Kernel results copied into a mirror (new cache rows): its host copy is better fed from
        // src's region, fetched whole (one contiguous download, once), than from the rows
        // written in dst, downloaded run by run (a copy per row and head).
        mirror_from_host = source->residency() == Residency::DeviceOutput && target &&
                           target->residency() != Residency::DeviceOutput;
    }
    // Strided views go through the strided_copy kernel, one launch; Halide's buffer copy would
    // issue a memcpy per contiguous run (S x H of them for a [S, H, D] slice of a wider tensor).
    auto kernel_buffers = copy_kernel_buffers(from, to);
    if (kernel_buffers) std::tie(from, to) = std::move(*kernel_buffers);
    // A KernelTimes lists both kinds of device copy (the buffer copy by its memcpys' name).
    const char *name = kernel_buffers ? "strided_copy" : "buffer_copy";
    bool dst_bound = false;  // bound to the region's device copy (once the DeviceCall has bound it)
    launch_on_device(name, device, {from.raw_buffer(), to.raw_buffer()}, [&] {
        dst_bound = !to.raw_buffer()->host_dirty();
        if (kernel_buffers) {
            check_halide_status(kernel_function<kernels::strided_copy>()(from.raw_buffer(), to.raw_buffer()),
                                kernels::strided_copy::name);
        } else {
            check_halide_status(halide_buffer_copy(nullptr, from.raw_buffer(), device_interface(device), to.raw_buffer()),
                                "copy on device");
        }
        if (mirror_from_host && dst_bound) to.raw_buffer()->set_device_dirty(false);
    });
    return mirror_from_host && dst_bound ? DeviceCopy::DoneMirrorFromHost : DeviceCopy::Done;
}

namespace {

// The call-scoped regions by host start, shared by concurrent calls over the same memory. The mutex
// also covers making and dropping them, so a region is never made while another over the same
// memory is still being taken down.
std::mutex scoped_mutex;
std::map<const void *, std::weak_ptr<ResidentRegion>> scoped_regions;

}  // namespace

ScopedRegion::ScopedRegion(const void *host, int64_t bytes, Residency residency) {
    if (current_device() == Device::CPU || bytes == 0) return;
    require(bytes % static_cast<int64_t>(sizeof(float)) == 0, "a device region spans whole 4-byte words");
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::lock_guard<std::mutex> scoped_lock(scoped_mutex);
    if (const auto it = scoped_regions.find(host); it != scoped_regions.end()) {
        std::shared_ptr<ResidentRegion> shared = it->second.lock();
        if (shared && shared->count() == count && shared->residency() == residency) {
            region_ = std::move(shared);
            return;
        }
    }
    {
        // Regions never overlap: the last one starting before the end must end before the start.
        std::lock_guard<std::mutex> lock(regions_mutex);
        const auto *begin = static_cast<const uint8_t *>(host);
        auto it = regions.lower_bound(begin + bytes);
        if (it != regions.begin() && (--it)->first + it->second->count() * static_cast<int64_t>(sizeof(float)) > begin)
            return;
    }
    region_ = std::make_shared<ResidentRegion>(const_cast<void *>(host), count, residency);
    scoped_regions[host] = region_;
}

ScopedRegion::~ScopedRegion() {
    if (!region_) return;
    std::lock_guard<std::mutex> scoped_lock(scoped_mutex);
    const void *host = region_->host();
    region_.reset();  // the region goes when its last call ends
    if (const auto it = scoped_regions.find(host); it != scoped_regions.end() && it->second.expired()) {
        scoped_regions.erase(it);
    }
}

ConstTensorView resident_zeros(int64_t n) {
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
    Tensor t(std::move(shape), Tensor::unset);
    if (current_device() != Device::CPU) t.keep_on_device(Residency::DeviceOutput);
    return t;
}

Transfers data_transfers() { return {resident_uploaded + call_uploaded, downloaded}; }
int64_t resident_upload_bytes() { return resident_uploaded; }

}  // namespace hattn::detail
