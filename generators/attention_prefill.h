// Prefill attention: queries [B, Sq, H, D] (viewed as [B, Sq, Hkv, g, D], g = H / Hkv) attend to the keys and values already in the cache
// storage ([B, Hkv, capacity, D], read in place), of which sequence b has kv_len[b] valid tokens;
// the queries are the last Sq of them. Causal or full, with an optional boolean mask
// [B, 1, Sq, Sk] (True = masked) in the `masked` variant. Output [B, Sq, H, D].
#pragma once

#include "Halide.h"
#include "generators/common/chunked_attention.h"

namespace hattn {

class AttentionPrefill : public Halide::Generator<AttentionPrefill> {
public:
    // Tile sizes the algorithm is written in terms of; schedules pick them per target. A query
    // tile of 0 is the schedule family's choice (schedules::prefill_tile), because the
    // sub-targets of one multi-target library are generated with the same parameters.
    GeneratorParam<int> query_tile{"query_tile", 0};
    GeneratorParam<int> key_chunk{"key_chunk", 256};
    GeneratorParam<bool> masked{"masked", false};

    Input<Buffer<float>> q{"q", 5};              // (D, g, Hkv, Sq, B)
    Input<Buffer<float>> k_cache{"k_cache", 4};  // (D, capacity, Hkv, B)
    Input<Buffer<float>> v_cache{"v_cache", 4};  // (D, capacity, Hkv, B)
    Input<Buffer<int32_t>> kv_len{"kv_len", 1};  // (B)
    // At least the longest kv_len[b]: the chunk loops end there rather than at the capacity, which
    // the autoscheduled schedules' chunk stages (computed outside the merge's loop) would pay for.
    Input<int32_t> longest_visible{"longest_visible"};
    Input<float> scale{"scale"};
    Input<bool> causal{"causal"};
    // Attention sinks (gpt-oss): the sink of query head hk * g + hg at (hg, hk), read where
    // has_sinks (any buffer otherwise).
    Input<Buffer<float>> sinks{"sinks", 2};  // (g, Hkv)
    Input<bool> has_sinks{"has_sinks"};
    // Soft-capping (Gemma 2): scores s become softcap * tanh(s / softcap), where has_softcap;
    // softcap must be positive even where not (callers pass 1).
    Input<float> softcap{"softcap"};
    Input<bool> has_softcap{"has_softcap"};
    // Added by configure() in the masked variant, after the inputs above: (Sk, Sq, 1, B), uint8.
    Input<Buffer<uint8_t>> *mask = nullptr;
    Output<Buffer<float>> out{"out", 5};  // (D, g, Hkv, Sq, B)

    std::unique_ptr<ChunkedAttention> attention;

    void configure();
    void generate();
    void schedule();
};

}  // namespace hattn
