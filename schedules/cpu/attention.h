// The CPU schedules of the chunked attention (generators/common/chunked_attention.h), shared by
// x86 and ARM; each family passes its vector width and unroll factors.
#pragma once

#include "generators/common/chunked_attention.h"

namespace hattn::schedules::cpu {

// A family's register tiles for the prefill products.
struct PrefillCpuTiles {
    int query_vectors = 1;  // vectors of queries in a register tile of both products (QK takes
                            // them against the algorithm's key_step keys, the family's prefill_tile)
    int accumulators = 1;   // vector registers a PV tile keeps live: query_vectors x
                            // (accumulators / query_vectors) V values
    bool bf16_pairs = false;  // QK in bf16 pairs (the algorithm's q_pairs; x86 AVX512-BF16)
    bool widened_panels = false;  // a chunk's keys and values widened to float32 once, for every
                                  // query and head of the tile (a 16-bit or int8 cache's)
};

// A family's register tiles and vector widths for the decode products.
struct DecodeCpuTiles {
    int keys_per_step = 1;          // QK: key rows side by side against the group's heads
    int one_key_from_head_dim = 0;  // QK: from this head dim up, one key row per step whatever
                                    // keys_per_step says (0: never)
    int qk_lanes = 0;               // QK: floats per partial-sum vector of a dot product (0: the
                                    // natural vector)
    int accumulators = 1;           // PV: vector registers a register tile may keep live
    int pv_row_lanes = 0;           // PV: floats per V vector where a KV head serves one query
                                    // head (0: the natural vector)
    bool bf16_pairs = false;        // QK in bf16 pairs (the algorithm's q_pairs; x86 AVX512-BF16),
                                    // each of its qk_lanes summing a pair
    bool int8_dots = false;         // QK in int8 dot products (the algorithm's q_codes; x86
                                    // AVX512-VNNI), each of its qk_lanes summing 4 products
};

// Prefill: parallel over batch, KV heads and query tiles; per tile, the chunks in turn.
void schedule_prefill(ChunkedAttention &a, Halide::Func out, const Halide::Target &t,
                      PrefillCpuTiles tiles);

// Decode: the chunks of every KV head in parallel (split-KV), then the merge per sequence.
void schedule_decode(ChunkedAttention &a, Halide::Func out, const Halide::Target &t,
                     DecodeCpuTiles tiles);

}  // namespace hattn::schedules::cpu
