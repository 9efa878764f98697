// Host work split across the kernels' thread pool.
#pragma once

#include <functional>

namespace hattn::detail {

// Runs body(i) for every i in [0, n) on Halide's thread pool, the threads the kernels run on (so
// host work beside them neither oversubscribes the cores nor ignores set_num_threads). The calls
// may run in any order and at once. Once one throws, the calls not yet begun may be skipped, and
// its exception is rethrown here when none is running.
void parallel_for(int n, const std::function<void(int)> &body);

}  // namespace hattn::detail
