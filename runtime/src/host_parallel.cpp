#include "host_parallel.h"

#include <exception>
#include <mutex>

#include "HalideRuntime.h"

namespace hattn::detail {

namespace {

struct Closure {
    const std::function<void(int)> *body;
    std::mutex mutex;
    std::exception_ptr error;
};

// Exceptions stop here: they must not unwind through Halide's C runtime.
int run_task(void *, int i, uint8_t *closure) {
    auto *c = reinterpret_cast<Closure *>(closure);
    try {
        (*c->body)(i);
        return 0;
    } catch (...) {
        const std::lock_guard<std::mutex> lock(c->mutex);
        if (!c->error) c->error = std::current_exception();
        return -1;
    }
}

}  // namespace

void parallel_for(int n, const std::function<void(int)> &body) {
    if (n <= 0) return;
    Closure c;
    c.body = &body;
    halide_do_par_for(nullptr, run_task, 0, n, reinterpret_cast<uint8_t *>(&c));
    if (c.error) std::rethrow_exception(c.error);
}

}  // namespace hattn::detail
