// --device / HATTN_DEVICE: where the kernels run.
#pragma once

#include "args.h"
#include "hattn/device.h"

namespace hattn::cli {

// Makes the device named by --device (or else HATTN_DEVICE; default cpu) run the kernels, and
// returns it. Throws Error naming the flag for an unknown or unavailable device.
Device select_device(const Args &args);

}  // namespace hattn::cli
