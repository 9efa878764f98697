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

// The head dims the GPU prefill's block tiles are generated for (a thread's PV tile takes D / 16
// of them, unrolled, so one kernel each); the runtime runs the rows schedule for any other.
constexpr int gpu_prefill_block_tile_head_dims[] = {16, 32, 64, 80, 96, 128};

// The GPU decode stages a K tile of 32 keys in shared memory: up to this head dim.
constexpr int gpu_decode_max_head_dim = 256;

}  // namespace hattn::kernel_contract
