// hattn info: the host's CPU features, the variant of each kernel that runs here, and whether a
// GPU device is usable.
#include <iostream>

#include "args.h"
#include "commands.h"
#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/cpu_features.h"
#include "hattn/device.h"

namespace hattn::cli {

namespace {

std::string device_status(Device device) {
    const std::string reason = device_unavailable_reason(device);
    return reason.empty() ? "yes" : "no (" + reason + ")";
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
    std::cout << "\nCUDA: " << device_status(Device::CUDA) << "\nOpenCL: " << device_status(Device::OpenCL)
              << "\n";
    return 0;
}

}  // namespace hattn::cli
