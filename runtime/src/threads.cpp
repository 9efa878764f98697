#include "hattn/threads.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "HalideRuntime.h"
#include "hattn/error.h"

namespace hattn {

namespace {
std::atomic<int> chosen{0};  // 0: never set
}  // namespace

void set_num_threads(int n) {
    require(n >= 1, "thread count must be at least 1, got " + std::to_string(n));
    halide_set_num_threads(n);
    chosen = n;
}

int num_threads() {
    if (chosen > 0) return chosen;
    // Halide's own default, which it reads the same way when its pool starts.
    if (const char *env = std::getenv("HL_NUM_THREADS")) {
        const int n = std::atoi(env);
        if (n > 0) return n;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace hattn
