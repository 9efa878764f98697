// Calling AOT kernels: Halide reports failures through a process-wide error handler and a non-zero
// return code. hattn routes both into one hattn::Error, so a Halide error never aborts the process.
#pragma once

namespace hattn::detail {

// Prepares the Halide runtime once per process (later calls do nothing): installs hattn's error
// handler, and the HATTN_MAX_ISA limit when the environment sets one.
void prepare_halide_runtime();

// Throws hattn::Error (Kind::Internal) naming `kernel` and Halide's last message on this thread
// when `status` is non-zero.
void check_halide_status(int status, const char *kernel);

// Calls a generated kernel with the handler installed and its status checked.
template <typename Kernel, typename... Args>
void call_kernel(const char *name, Kernel kernel, Args... args) {
    prepare_halide_runtime();
    check_halide_status(kernel(args...), name);
}

}  // namespace hattn::detail
