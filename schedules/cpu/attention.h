// The CPU schedules of the chunked attention (generators/common/chunked_attention.h), shared by
// x86 and ARM; each family passes its vector width and unroll factors.
#pragma once

#include "generators/common/chunked_attention.h"

namespace hattn::schedules::cpu {

struct AttentionCpuTiles {
    int query_vectors;  // prefill register tiles of both products: vectors of queries
    int keys_per_step;  // decode: key rows side by side against the group's heads in QK (prefill
                        // takes the algorithm's key_step, the family's prefill_tile)
    int accumulators;   // vector registers a PV register tile may keep live; a prefill PV tile is
                        // query_vectors x (accumulators / query_vectors) V values
    int one_key_from_head_dim = 0;  // decode: from this head dim up, QK takes one key row per
                                    // step whatever keys_per_step says (0: never)
    int decode_qk_lanes = 0;        // decode: floats per partial-sum vector of a QK dot product
                                    // (0: the natural vector)
    int decode_pv_row_lanes = 0;    // decode: floats per V vector where a KV head serves one
                                    // query head (0: the natural vector)
};

// Prefill: parallel over batch, KV heads and query tiles; per tile, the chunks in turn.
void schedule_prefill(ChunkedAttention &a, Halide::Func out, const Halide::Target &t,
                      AttentionCpuTiles tiles);

// Decode: the chunks of every KV head in parallel (split-KV), then the merge per sequence.
void schedule_decode(ChunkedAttention &a, Halide::Func out, const Halide::Target &t,
                     AttentionCpuTiles tiles);

}  // namespace hattn::schedules::cpu
