#include <mutex>
#include <string>

#include "HalideRuntime.h"
#include "halide_call.h"
#include "hattn/error.h"

namespace hattn::detail {

namespace {

// Halide calls the handler from inside generated code, where a C++ exception must not unwind. The
// handler only records the message; check_halide_status() throws once the kernel has returned.
// Halide may report from a worker thread, so the last message is kept per process, not per thread.
std::mutex last_message_mutex;
std::string last_message;

extern "C" void record_halide_error(void *, const char *message) {
    std::lock_guard<std::mutex> lock(last_message_mutex);
    last_message = message ? message : "";
    while (!last_message.empty() && (last_message.back() == '\n' || last_message.back() == ' ')) {
        last_message.pop_back();
    }
}

}  // namespace

void install_halide_error_handler() {
    static std::once_flag once;
    std::call_once(once, [] { halide_set_error_handler(record_halide_error); });
}

void check_halide_status(int status, const char *kernel) {
    if (status == 0) return;
    std::string message;
    {
        std::lock_guard<std::mutex> lock(last_message_mutex);
        message.swap(last_message);
    }
    if (message.empty()) message = "error code " + std::to_string(status);
    throw Error(std::string(kernel) + " kernel failed: " + message, Error::Kind::Internal);
}

}  // namespace hattn::detail
