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
constexpr int halide_max_threads = 256;  // Halide 14's pool never runs more (clamp_num_threads)
}  // namespace

void set_num_threads(int n) {
    require(n >= 1, "thread count must be at least 1, got " + std::to_string(n));
    halide_set_num_threads(n);
    chosen = std::min(n, halide_max_threads);
}

int num_threads() {
    if (chosen > 0) return chosen;
    // Halide's own default, read as its pool reads it when it starts.
    for (const char *name : {"HL_NUM_THREADS", "HL_NUMTHREADS"}) {
        if (const char *env = std::getenv(name)) {
            const int n = std::atoi(env);
            if (n > 0) return std::min(n, halide_max_threads);
        }
    }
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, unsigned(halide_max_threads)));
}

}  // namespace hattn
