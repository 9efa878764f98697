#include "device.h"

#include <cstdlib>

#include "hattn/error.h"

namespace hattn::cli {

Device select_device(const Args &args) {
    std::string name = "cpu";
    std::string source = "--device";
    if (auto flag = args.value("--device")) {
        name = *flag;
    } else if (const char *env = std::getenv("HATTN_DEVICE"); env && *env) {
        name = env;
        source = "HATTN_DEVICE";
    }
    try {
        const Device device = device_from_name(name);
        set_device(device);
        return device;
    } catch (const Error &e) {
        throw Error(source + ": " + e.what());
    }
}

}  // namespace hattn::cli
