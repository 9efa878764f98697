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

// Runs `launch` (a kernel call or a device copy, checking its own status) with the handler
// installed. On a GPU the buffers go through a DeviceCall: resident memory is bound before, outputs
// come back to the host after. While a KernelTimes records, it is timed as `name`
// (hattn/kernel_times.h).
template <typename Launch>
void launch_on_device(const char *name, Device device, std::initializer_list<halide_buffer_t *> buffers,
                      Launch launch) {
    prepare_halide_runtime();
    KernelClock clock(name);  // times the call only while a KernelTimes records
    DeviceCall call(device, buffers);
    launch();
    call.finish();
    clock.stop();
}

// Calls a generated kernel on the current device (launch_on_device), its status checked.
template <typename Kernel, typename... Args>
void call_kernel(const char *name, Kernel kernel, Args... args) {
    launch_on_device(name, current_device(), {buffer_argument(args)...},
                     [&] { check_halide_status(kernel(args...), name); });
}

}  // namespace hattn::detail
