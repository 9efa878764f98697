// The size of the thread pool every hattn kernel runs on.
#pragma once

namespace hattn {

// Sets the number of worker threads (>= 1) Halide's pool uses; `--threads` in the CLI. Throws Error
// for n < 1. Without a call, Halide uses one thread per core (or HL_NUM_THREADS).
void set_num_threads(int n);

}  // namespace hattn
