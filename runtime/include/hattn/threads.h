// The size of the thread pool every hattn kernel runs on.
#pragma once

namespace hattn {

// Sets the number of worker threads (>= 1) Halide's pool uses; `--threads` in the CLI. Throws Error
// for n < 1. Without a call, Halide uses one thread per core (or HL_NUM_THREADS).
void set_num_threads(int n);

// The number of worker threads the kernels run on: the last set_num_threads(), else Halide's
// default (HL_NUM_THREADS, or the older HL_NUMTHREADS, else one per core); Halide runs at most 256.
int num_threads();

}  // namespace hattn
