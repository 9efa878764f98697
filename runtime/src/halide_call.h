// Calling AOT kernels: Halide reports failures through a process-wide error handler and a non-zero
// return code. hattn routes both into one hattn::Error, so a Halide error never aborts the process.
#pragma once

#include "device_residency.h"
#include "halide_view.h"
#include "kernel_clock.h"

namespace hattn::detail {

// Prepares the Halide runtime once per process (later calls do nothing): installs hattn's error
// handler, and the HATTN_MAX_ISA limit when the environment sets one.
void prepare_halide_runtime();

// Throws hattn::Error (Kind::Internal) naming `kernel` and Halide's last message on this thread
// when `status` is non-zero.
void check_halide_status(int status, const char *kernel);

inline halide_buffer_t *buffer_argument(halide_buffer_t *b) { return b; }
template <typename Scalar>
halide_buffer_t *buffer_argument(Scalar) { return nullptr; }

// Calls a generated kernel with the handler installed and its status checked. On a GPU the call's
// buffers go through a DeviceCall: resident memory is bound, outputs come back to the host.
// While a KernelTimes records, the call is timed (hattn/kernel_times.h).
template <typename Kernel, typename... Args>
void call_kernel(const char *name, Kernel kernel, Args... args) {
    prepare_halide_runtime();
    KernelClock clock(name);  // times the call only while a KernelTimes records
    DeviceCall call(current_device(), {buffer_argument(args)...});
    check_halide_status(kernel(args...), name);
    call.finish();
    clock.stop();
}

}  // namespace hattn::detail
