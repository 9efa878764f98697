// What the runtime must know of how the kernels were generated: limits the generators build in
// and the runtime's calls respect. Plain constants, no Halide, so the generators and the runtime
// include this one file instead of each keeping a copy.
#pragma once

#include <string>

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
// Those head dims as messages name them: "16, 32, ...".
inline std::string gpu_prefill_block_tile_head_dims_text() {
    std::string dims;
    for (int d : gpu_prefill_block_tile_head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return dims;
}
// Their tiles: 64 queries walking chunks of 64 keys (kernels.cmake's GPU_PARAMS; the schedule
// checks it).
constexpr int gpu_prefill_query_tile = 64, gpu_prefill_key_chunk = 64;
// An upper bound of the shared memory a block of them takes, in bytes: the running (output, max,
// sum) state, the chunk's queries, keys (head-dim-major, each head dim's row of C keys padded by 4
// floats), values, scores and probabilities, and the row statistics (Halide packs some into
// others' space; at D = 128 a block takes 194 KB of this bound's 226.5, 0.5 KB under what an
// H100 or H200 allows a block: any tile or padding added must keep it there). The runtime runs the
// rows schedule on devices that allow a block less.
constexpr long long gpu_prefill_block_tile_shared_bytes(long long head_dim) {
    const long long T = gpu_prefill_query_tile, C = gpu_prefill_key_chunk, D = head_dim;
    return 4 * (3 * T * D + D * T + D * (C + 4) + C * D + C * T + C * T + 2 * T);
}
static_assert(gpu_prefill_block_tile_shared_bytes(128) <= 227 * 1024,
              "the GPU prefill block tiles must fit an H100's or H200's 227 KB a block at D = 128");

// The GPU decode stages a K tile of 32 keys in shared memory: up to this head dim.
constexpr int gpu_decode_max_head_dim = 256;

}  // namespace hattn::kernel_contract
