#include "hattn/device.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "HalideRuntime.h"
#include "cuda_driver.h"
#include "device_residency.h"
#include "kernel_variants.h"
#include "hattn/error.h"

namespace hattn {

namespace {

std::string probe_cuda() {
    void *lib = detail::cuda_driver();
    if (!lib) return "no CUDA driver: neither libcuda.so nor libcuda.so.1 loads";
    using Init = int (*)(unsigned);
    using Count = int (*)(int *);
    auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<Count>(dlsym(lib, "cuDeviceGetCount"));
    if (!init || !count) return "libcuda lacks cuInit or cuDeviceGetCount";
    if (int status = init(0); status != 0) return "cuInit failed with CUDA error " + std::to_string(status);
    int devices = 0;
    if (count(&devices) != 0 || devices == 0) return "the CUDA driver sees no device";
    // The shared memory a block may take (opting in past 48 KB), the least of the devices' (Halide
    // picks one): the prefill's block tiles need more than some GPUs allow.
    using Get = int (*)(int *, int);
    using Attribute = int (*)(int *, int, int);
    auto get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
    auto attribute = reinterpret_cast<Attribute>(dlsym(lib, "cuDeviceGetAttribute"));
    constexpr int max_shared_memory_per_block_optin = 97;  // CU_DEVICE_ATTRIBUTE_..._OPTIN
    int64_t least = 0;
    for (int i = 0; get && attribute && i < devices; i++) {
        int device = 0, bytes = 0;
        if (get(&device, i) != 0 || attribute(&bytes, max_shared_memory_per_block_optin, device) != 0) continue;
        least = least == 0 ? bytes : std::min<int64_t>(least, bytes);
    }
    detail::cuda_shared_bytes_per_block = least;
    return "";
}

std::string probe_opencl() {
    void *lib = detail::load_driver("libOpenCL.so", "libOpenCL.so.1");
    if (!lib) return "no OpenCL loader: neither libOpenCL.so nor libOpenCL.so.1 loads";
    using Platforms = int (*)(unsigned, void **, unsigned *);
    using Devices = int (*)(void *, uint64_t, unsigned, void **, unsigned *);
    auto platforms = reinterpret_cast<Platforms>(dlsym(lib, "clGetPlatformIDs"));
    auto devices = reinterpret_cast<Devices>(dlsym(lib, "clGetDeviceIDs"));
    if (!platforms || !devices) return "libOpenCL lacks clGetPlatformIDs or clGetDeviceIDs";
    using Info = int (*)(void *, unsigned, size_t, void *, size_t *);
    auto info = reinterpret_cast<Info>(dlsym(lib, "clGetDeviceInfo"));
    void *ids[16];
    unsigned n = 0;
    if (platforms(16, ids, &n) != 0 || n == 0) return "no OpenCL platform is installed";
    constexpr uint64_t all_device_types = 0xFFFFFFFF;
    constexpr unsigned mem_base_addr_align = 0x1019;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bits
    constexpr unsigned local_mem_size = 0x1023;       // CL_DEVICE_LOCAL_MEM_SIZE, bytes (cl_ulong)
    int64_t least_local = 0;
    bool any = false;
    for (unsigned i = 0; i < n && i < 16; i++) {
        void *device_ids[16];
        unsigned found = 0;
        if (devices(ids[i], all_device_types, 16, device_ids, &found) != 0) continue;
        for (unsigned d = 0; d < found && d < 16; d++) {
            any = true;
            unsigned bits = 0;
            if (info && info(device_ids[d], mem_base_addr_align, sizeof(bits), &bits, nullptr) == 0) {
                detail::opencl_sub_buffer_alignment = std::max<int64_t>(detail::opencl_sub_buffer_alignment, bits / 8);
            }
            uint64_t local_bytes = 0;
            if (info && info(device_ids[d], local_mem_size, sizeof(local_bytes), &local_bytes, nullptr) == 0) {
                least_local = least_local == 0 ? int64_t(local_bytes) : std::min<int64_t>(least_local, local_bytes);
            }
        }
    }
    detail::opencl_local_bytes_per_block = least_local;
    return any ? "" : "no OpenCL platform has a device";
}

std::atomic<int> chosen{-1};  // a Device, or -1 before first use

void use(Device device) {
    // Kernel calls allocate and free device buffers for their non-resident arguments: keep the
    // freed ones for reuse instead of returning them to the driver each time.
    if (device != Device::CPU) halide_reuse_device_allocations(nullptr, true);
}

}  // namespace

Device device_from_name(const std::string &name) {
    if (name == "cpu") return Device::CPU;
    if (name == "cuda") return Device::CUDA;
    if (name == "opencl") return Device::OpenCL;
    throw Error("unknown device '" + name + "' (cpu, cuda, opencl)", Error::Kind::InvalidInput);
}

const char *device_name(Device device) {
    switch (device) {
        case Device::CPU: return "cpu";
        case Device::CUDA: return "cuda";
        case Device::OpenCL: return "opencl";
    }
    return "?";
}

std::string device_unavailable_reason(Device device) {
    static std::mutex mutex;
    static std::map<Device, std::string> reasons;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = reasons.find(device);
    if (it != reasons.end()) return it->second;
    // A value outside the enum (a cast integer) names no device, on any host.
    if (device != Device::CPU && device != Device::CUDA && device != Device::OpenCL) {
        return "not a device (" + std::to_string(static_cast<int>(device)) + ")";
    }
    std::string reason;
#if !defined(__x86_64__)
    if (device != Device::CPU) reason = "this build has no GPU variants (they are built for x86-64 hosts)";
#else
    if (device == Device::CUDA) reason = probe_cuda();
    if (device == Device::OpenCL) reason = probe_opencl();
#endif
    reasons[device] = reason;
    return reason;
}

void set_device(Device device) {
    const std::string reason = device_unavailable_reason(device);
    require(reason.empty(), std::string("device ") + device_name(device) + " is unavailable: " + reason);
    use(device);
    chosen = static_cast<int>(device);
}

Device current_device() {
    if (int c = chosen.load(); c >= 0) return static_cast<Device>(c);
    Device device = Device::CPU;
    if (const char *env = std::getenv("HATTN_DEVICE"); env && *env) {
        try {
            device = device_from_name(env);
            const std::string reason = device_unavailable_reason(device);
            require(reason.empty(), std::string("device ") + env + " is unavailable: " + reason);
        } catch (const Error &e) {
            throw Error(std::string("HATTN_DEVICE: ") + e.what());  // every call, until fixed
        }
    }
    use(device);
    int unset = -1;
    chosen.compare_exchange_strong(unset, static_cast<int>(device));
    return static_cast<Device>(chosen.load());
}

void device_sync() { detail::sync_device(current_device()); }

}  // namespace hattn
