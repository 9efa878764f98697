// What the runtime must know of how the kernels were generated: limits the generators build in
// and the runtime's calls respect. Plain constants, no Halide, so the generators and the runtime
// include this one file instead of each keeping a copy.
#pragma once

#include <string>

namespace hattn::kernel_contract {

// The projection_gemv variant is chosen for calls with at most this many rows: on CPUs about where
// it and the GEMM cross, one limit for every sub-target (docs/perf/log.md, "Projection gemv
// crossover"); a GPU's gemv keeps this many rows' sums in registers.
constexpr int projection_gemv_max_rows_cpu = 64, projection_gemv_max_rows_gpu = 4;

// The bf16-pairs gemv (projection_gemv_bf16_pairs) sums W's rows in blocks of this many inputs (one
// vdpbf16ps operand, no tail); the runtime takes it for inputs that are a multiple of it.
constexpr int projection_gemv_pairs_block = 32;

// The DSA latent attention in bf16 pairs (dsa_latent_attention_bf16_bf16_pairs) takes latent rows
// of at least this many values (its output tiles' width on AVX-512); the runtime widens narrower.
constexpr int dsa_latent_pairs_min_values = 32;

// The CCA grouped conv's weight (cca_grouped_by_output) carries this many zero output channels
// past its last: the CPU schedules compute whole register tiles of 2 vectors of channels, which
// read past a group's last channel, so that the weights' loads need no clamp.
constexpr int cca_grouped_padding_channels = 32;

// BitLinear's reduction length is a multiple of this; the runtime pads with zero activations.
constexpr int bitlinear_k_multiple = 256;

// The head dims the int8-dot decode (attention_decode_int8_dots) is generated for: its dot
// products take whole 512-bit vectors of codes there. Other widths would need 128- or 256-bit
// vpdpbusd, which LLVM encodes as AVX-VNNI (VEX), an extension Zen 4 lacks; the runtime widens the
// codes of any other head dim.
constexpr int int8_dots_head_dims[] = {64, 128, 256};

// The head dims the GPU prefill's block tiles are generated for, a kernel each; the runtime runs
// the rows schedule for any other.
constexpr int gpu_prefill_block_tile_head_dims[] = {16, 32, 64, 80, 96, 128};
// Those head dims as messages name them: "16, 32, ...".
inline std::string gpu_prefill_block_tile_head_dims_text() {
    std::string dims;
    for (int d : gpu_prefill_block_tile_head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return dims;
}
// The GPU prefill's tiles, by kind (the attention_prefill generator's `tiles`): a block of 64
// queries walking chunks of 64 keys; the small tiles of 32 queries (half the running state and the
// block's threads) for devices that allow a block too little shared memory for the first; and the
// rows schedule's thread per query row, over chunks of 32 keys.
enum class GpuPrefillTileKind { Block, Small, Rows };
struct GpuPrefillTiles {
    int query_tile, key_chunk;
};
constexpr GpuPrefillTiles gpu_prefill_tiles{64, 64}, gpu_prefill_small_tiles{32, 64}, gpu_prefill_rows{1, 32};
constexpr GpuPrefillTiles gpu_prefill_tiles_of(GpuPrefillTileKind kind) {
    return kind == GpuPrefillTileKind::Block ? gpu_prefill_tiles
           : kind == GpuPrefillTileKind::Small ? gpu_prefill_small_tiles
                                               : gpu_prefill_rows;
}
// An upper bound of the shared memory a block of them takes, in bytes, by which the runtime picks
// the tiles a device fits: each tile they stage counted whole, but the queries and probabilities,
// which Halide packs into one space (schedules/gpu/attention.cpp). Its margins: docs/perf/log.md,
// "GPU prefill block tiles"; tests/test_gpu_prefill_shared_memory.cpp checks it against the launch
// sizes in the generated kernels.
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
