// Prefill attention: queries [B, Sq, H, D] (viewed as [B, Sq, Hkv, g, D], g = H / Hkv) attend to the keys and values already in the cache
// storage ([B, Hkv, capacity, D], read in place), of which sequence b has kv_len[b] valid tokens;
// the queries are the last Sq of them. Causal or full, with an optional boolean mask
// [B, 1, Sq, Sk] (True = masked) in the `masked` variant. Output [B, Sq, H, D].
#pragma once

#include "Halide.h"
#include "generators/common/chunked_attention.h"
#include "generators/common/storage_type.h"
#include "kernel_contract.h"
#include "schedules/scheduled.h"

namespace hattn {

class AttentionPrefill : public Halide::Generator<AttentionPrefill> {
public:
    // The tiles the algorithm is written in terms of (queries sharing each chunk of keys) are the
    // schedule family's (schedules::prefill_tile); a GPU's come in the kinds its variants take.
    GeneratorParam<kernel_contract::GpuPrefillTileKind> tiles{"tiles",
                                                              kernel_contract::GpuPrefillTileKind::Block,
                                                              {{"block", kernel_contract::GpuPrefillTileKind::Block},
                                                               {"small", kernel_contract::GpuPrefillTileKind::Small},
                                                               {"rows", kernel_contract::GpuPrefillTileKind::Rows}}};
    GeneratorParam<bool> masked{"masked", false};
    // QK in bf16 pairs (x86 AVX512-BF16): a bf16 cache, queries of bf16 values and an even head
    // dim, which the runtime checks before it chooses this variant (ChunkedAttentionInputs).
    GeneratorParam<bool> bf16_pairs{"bf16_pairs", false};

    Input<Buffer<float>> q{"q", 5};              // (D, g, Hkv, Sq, B)
    // The cache's storage type (f32, bf16, f16, int8), widened to float32 as it is read; the table
    // declares the buffers' type to match (storage_type.h).
    GeneratorParam<StorageType> kv_type{"kv_type", StorageType::F32, storage_type_names};
    Input<Buffer<>> k_cache{"k_cache", 4};  // (D, capacity, Hkv, B)
    Input<Buffer<>> v_cache{"v_cache", 4};  // (D, capacity, Hkv, B)
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
    // Added by configure() over an int8 cache, after the mask: each cached row's scale of its codes
    // (spec/attention.md section 5), (capacity, Hkv, B).
    Input<Buffer<float>> *k_scale = nullptr, *v_scale = nullptr;
    Output<Buffer<float>> out{"out", 5};  // (D, g, Hkv, Sq, B)

    std::unique_ptr<ChunkedAttention> attention;

    void configure();
    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(AttentionPrefill)
