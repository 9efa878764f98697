// --device / HATTN_DEVICE: where the kernels run.
#pragma once

#include "args.h"

namespace hattn::cli {

enum class Device { CPU, CUDA };

// --device wins over HATTN_DEVICE; the default is the CPU. Anything but cpu|cuda is an error.
Device parse_device(const Args &args);

// Throws Error when the runtime cannot yet place kernels on `device`.
void require_device_built(Device device);

}  // namespace hattn::cli
