// What the runtime must know of how the kernels were generated: limits the generators build in
// and the runtime's calls respect. Plain constants, no Halide, so the generators and the runtime
// include this one file instead of each keeping a copy.
#pragma once

namespace hattn::kernel_contract {

// The projection_gemv variant is chosen for calls with at most this many rows: on a CPU each W
// row, read once, meets every row from L1; a GPU's schedule keeps this many rows' sums in
// registers.
constexpr int projection_gemv_max_rows_cpu = 32, projection_gemv_max_rows_gpu = 4;

// BitLinear's reduction length is a multiple of this; the runtime pads with zero activations.
constexpr int bitlinear_k_multiple = 256;

}  // namespace hattn::kernel_contract
