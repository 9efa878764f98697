// The CUDA driver library, loaded once for hattn's device probe and for Halide's runtime.
//
// Halide 14's CUDA runtime launches each kernel with its shared memory as the launch's dynamic
// size, and the driver refuses more than 48 KB a block unless the kernel's maximum was raised
// first (cuFuncSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), which that runtime
// never does. The runtime finds every driver entry point through halide_cuda_get_symbol, a weak
// function: the definition here hands out the driver's own, except that cuLaunchKernel first
// raises the kernel's maximum where a launch asks for more than 48 KB. The prefill's block tiles
// take up to about 196 KB a block (the H200 allows 227 KB).
#include "cuda_driver.h"

#include <dlfcn.h>

#include <string_view>

namespace hattn::detail {

void *load_driver(const char *unversioned, const char *versioned) {
    if (void *lib = dlopen(unversioned, RTLD_NOW | RTLD_GLOBAL)) return lib;
    return dlopen(versioned, RTLD_NOW | RTLD_GLOBAL);
}

void *cuda_driver() {
    static void *const lib = load_driver("libcuda.so", "libcuda.so.1");
    return lib;
}

}  // namespace hattn::detail

namespace {

// The driver API's types, as cuda.h declares them (hattn builds without the CUDA toolkit).
using CUresult = int;
using CUfunction = void *;
using CUstream = void *;
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, CUstream, void **, void **);
using FuncSetAttribute = CUresult (*)(CUfunction, int, int);
constexpr int max_dynamic_shared_size_bytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr unsigned default_shared_limit = 48 * 1024;

LaunchKernel driver_launch = nullptr;
FuncSetAttribute driver_set_attribute = nullptr;

CUresult launch_with_shared_limit(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                                  unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                                  void **params, void **extra) {
    if (shared_bytes > default_shared_limit && driver_set_attribute) {
        // Per launch rather than once per kernel: a call costs about a microsecond, and the
        // kernels that ask for this much run for milliseconds.
        if (CUresult r = driver_set_attribute(f, max_dynamic_shared_size_bytes, int(shared_bytes)); r != 0) return r;
    }
    return driver_launch(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, params, extra);
}

}  // namespace

extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
    void *lib = hattn::detail::cuda_driver();
    if (!lib) return nullptr;
    void *symbol = dlsym(lib, name);
    if (symbol && std::string_view(name) == "cuLaunchKernel") {
        driver_launch = reinterpret_cast<LaunchKernel>(symbol);
        driver_set_attribute = reinterpret_cast<FuncSetAttribute>(dlsym(lib, "cuFuncSetAttribute"));
        return reinterpret_cast<void *>(&launch_with_shared_limit);
    }
    return symbol;
}
