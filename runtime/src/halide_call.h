// Calling AOT kernels: Halide reports failures through a process-wide error handler and a non-zero
// return code. hattn routes both into one hattn::Error, so a Halide error never aborts the process.
#pragma once

namespace hattn::detail {

// Installs hattn's Halide error handler (once per process; later calls do nothing).
void install_halide_error_handler();

// Throws hattn::Error (Kind::Internal) naming `kernel` and Halide's last message on this thread
// when `status` is non-zero.
void check_halide_status(int status, const char *kernel);

// Calls a generated kernel with the handler installed and its status checked.
template <typename Kernel, typename... Args>
void call_kernel(const char *name, Kernel kernel, Args... args) {
    install_halide_error_handler();
    check_halide_status(kernel(args...), name);
}

}  // namespace hattn::detail
