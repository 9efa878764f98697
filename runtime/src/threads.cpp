#include "hattn/threads.h"

#include <string>

#include "HalideRuntime.h"
#include "hattn/error.h"

namespace hattn {

void set_num_threads(int n) {
    require(n >= 1, "thread count must be at least 1, got " + std::to_string(n));
    halide_set_num_threads(n);
}

}  // namespace hattn
