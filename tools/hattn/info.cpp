// hattn info: the host's CPU features, the variant of each kernel that runs here, and whether a
// CUDA device is usable.
#include <dlfcn.h>

#include <iostream>

#include "args.h"
#include "commands.h"
#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/cpu_features.h"

namespace hattn::cli {

namespace {

// Asks the driver directly: the CUDA runtime Halide would use dlopens the same libcuda.so.
std::string cuda_status() {
    void *lib = dlopen("libcuda.so", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return "no (libcuda.so not found)";
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int *);
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
    int devices = 0;
    std::string status;
    if (!init || !count) {
        status = "no (libcuda.so lacks cuInit)";
    } else if (int rc = init(0); rc != 0) {
        status = "no (cuInit failed with " + std::to_string(rc) + ")";
    } else if (count(&devices) != 0 || devices == 0) {
        status = "no (no CUDA device)";
    } else {
        status = "yes (" + std::to_string(devices) + " device" + (devices > 1 ? "s" : "") +
                 "); the CUDA kernels are compiled but not yet linked into the runtime";
    }
    dlclose(lib);
    return status;
}

}  // namespace

int info_command(const std::vector<std::string> &argv) {
    const Args args(argv, {}, {});
    require(args.positional().empty(), "info: takes no arguments");

    std::cout << "CPU features:";
    for (const std::string &f : host_cpu_features()) std::cout << " " << f;
    std::cout << "\n\nkernel        variant               runs here\n";
    for (const KernelVariant &v : kernel_variants()) {
        std::string runs = selected_target(v).name;
        if (v.targets.size() == 1 && !can_use_target(v.targets[0])) runs = "(not usable: " + runs + ")";
        std::cout << v.kernel << std::string(v.kernel.size() < 14 ? 14 - v.kernel.size() : 1, ' ')
                  << v.family << std::string(v.family.size() < 22 ? 22 - v.family.size() : 1, ' ')
                  << runs << "\n";
    }
    std::cout << "\nCUDA: " << cuda_status() << "\n";
    return 0;
}

}  // namespace hattn::cli
