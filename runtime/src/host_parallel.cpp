#include "host_parallel.h"

#include <atomic>
#include <exception>
#include <mutex>

#include "HalideRuntime.h"

namespace hattn::detail {

namespace {

struct Closure {
    const std::function<void(int)> *body;
    // Halide's pool hands work between threads with its own atomics, in uninstrumented code that
    // ThreadSanitizer cannot see (tests/tsan.supp). These show it the order the pool keeps: the
    // caller's writes before every call, and every call before the caller goes on.
    std::atomic<int> started{0}, finished{0};
    std::mutex mutex;
    std::exception_ptr error;
};

// Exceptions stop here: they must not unwind through Halide's C runtime.
int run_task(void *, int i, uint8_t *closure) {
    auto *c = reinterpret_cast<Closure *>(closure);
    c->started.load(std::memory_order_acquire);
    int status = 0;
    try {
        (*c->body)(i);
    } catch (...) {
        const std::lock_guard<std::mutex> lock(c->mutex);
        if (!c->error) c->error = std::current_exception();
        status = -1;
    }
    c->finished.fetch_add(1, std::memory_order_release);
    return status;
}

}  // namespace

void parallel_for(int n, const std::function<void(int)> &body) {
    if (n <= 0) return;
    Closure c;
    c.body = &body;
    c.started.store(1, std::memory_order_release);
    halide_do_par_for(nullptr, run_task, 0, n, reinterpret_cast<uint8_t *>(&c));
    c.finished.load(std::memory_order_acquire);
    if (c.error) std::rethrow_exception(c.error);
}

}  // namespace hattn::detail
