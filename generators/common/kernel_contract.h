// What the runtime must know of how the kernels were generated: limits the generators build in
// and the runtime's calls respect. Plain constants, no Halide, so the generators and the runtime
// include this one file instead of each keeping a copy.
#pragma once

#include <string>

namespace hattn::kernel_contract {

// The projection_gemv variant is chosen for calls with at most this many rows: on a CPU each W
// row, read once, meets every row from L1, and W is not packed (the GEMM's fixed few ms a call).
// 64 is where the AVX-512 gemv and GEMM cross on a Zen 4. AVX2's cross at 24 to 48 rows by shape
// (at 64 the GEMM 22% ahead to 11% behind) and SSE's past 64, so a limit per sub-target would not
// pay (docs/perf/log.md; NEON is not measured). A GPU's schedule keeps this many rows' sums in
// registers.
constexpr int projection_gemv_max_rows_cpu = 64, projection_gemv_max_rows_gpu = 4;

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
// Their tiles: a block of 64 queries walking chunks of 64 keys (kernels.cmake's GPU_PARAMS), and
// the small tiles of 32 queries (GPU_SMALL_TILES_PARAMS, half the running state and the block's
// threads) for devices that allow a block too little shared memory for the first. The schedule
// accepts only these.
struct GpuPrefillTiles {
    int query_tile, key_chunk;
};
constexpr GpuPrefillTiles gpu_prefill_tiles{64, 64}, gpu_prefill_small_tiles{32, 64};
// An upper bound of the shared memory a block of them takes, in bytes: the running (output, max,
// sum) state, the chunk's queries and keys (head-dim-major, each head dim's row padded by 4
// floats), values, scores and probabilities, and the row statistics, each counted whole, except
// that the queries and the probabilities share their space: within a chunk the queries' last use
// (the scores) comes before the probabilities' first, and Halide packs the one into the other.
// Halide packs more than that (at D = 128 a block of the 64-query tiles takes 196 KB of this
// bound's 212.5); tests/test_gpu_prefill_shared_memory.cpp checks the bound against the launch
// sizes in the generated kernels. The runtime runs the small tiles on devices that allow a block
// less (their bound at D = 128 is 140 KB: an A100 allows 163), the rows schedule where those do
// not fit either.
constexpr long long gpu_prefill_block_tile_shared_bytes(long long head_dim, GpuPrefillTiles tiles) {
    const long long T = tiles.query_tile, C = tiles.key_chunk, D = head_dim;
    const long long state = 3 * T * D, queries = (T + 4) * D, keys = D * (C + 4), values = C * D;
    const long long scores = C * T, probabilities = C * T, row_statistics = 2 * T;
    const long long queries_or_probabilities = queries > probabilities ? queries : probabilities;
    return 4 * (state + queries_or_probabilities + keys + values + scores + row_statistics);
}
static_assert(gpu_prefill_block_tile_shared_bytes(128, gpu_prefill_tiles) <= 227 * 1024,
              "the GPU prefill block tiles must fit an H100's or H200's 227 KB a block at D = 128");
static_assert(gpu_prefill_block_tile_shared_bytes(128, gpu_prefill_small_tiles) <= 163 * 1024,
              "the GPU prefill small tiles must fit an A100's 163 KB a block at D = 128");

// The GPU decode stages a K tile of 32 keys in shared memory: up to this head dim.
constexpr int gpu_decode_max_head_dim = 256;

}  // namespace hattn::kernel_contract
