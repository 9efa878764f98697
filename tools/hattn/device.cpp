#include "device.h"

#include <cstdlib>

#include "hattn/error.h"

namespace hattn::cli {

Device parse_device(const Args &args) {
    std::string name = "cpu";
    std::string source = "--device";
    if (auto flag = args.value("--device")) {
        name = *flag;
    } else if (const char *env = std::getenv("HATTN_DEVICE"); env && *env) {
        name = env;
        source = "HATTN_DEVICE";
    }
    if (name == "cpu") return Device::CPU;
    if (name == "cuda") return Device::CUDA;
    throw Error(source + " must be cpu or cuda, got '" + name + "'");
}

void require_device_built(Device device) {
    require(device == Device::CPU,
            "--device cuda: the CUDA kernels are compiled but not yet linked into the runtime");
}

}  // namespace hattn::cli
