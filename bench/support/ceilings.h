// In-run ceilings: what this machine reaches, measured in the same process as the benchmarks,
// so each kernel's rate can be read as a fraction of it (machines are noisy; one run is one
// machine state).
#pragma once

namespace hattn::bench {

struct Ceilings {
    double read_gbs;      // STREAM-like read bandwidth, GB/s
    double sgemm_gflops;  // OpenBLAS sgemm, GFLOP/s
};

// Reads an array of `read_bytes` (2 GiB for real runs) with `threads` threads, and times a
// square sgemm of side `gemm_n` with the same thread count.
Ceilings measure_ceilings(int threads, double read_bytes, int gemm_n);

// OpenBLAS 0.3.21 does not recognise current AVX-512 Xeons and silently runs SSE3 kernels at a
// quarter of the speed; its kernel is chosen at load time from OPENBLAS_CORETYPE. Call first in
// main(): on an AVX-512 CPU without the variable set, it sets it to SkylakeX and re-executes.
void ensure_openblas_coretype(char **argv);

}  // namespace hattn::bench
