// Decode attention: one new query per sequence ([B, H, D], viewed as [B, Hkv, g, D]) against the
// tokens first_key[b] .. kv_len[b] - 1 in the cache storage ([B, Hkv, capacity, D], read in place);
// ragged batches welcome, and each sequence's sliding window in the same call. The key range is
// split into chunks that run in parallel, each giving a partial output and its max and sum, and a
// merge combines them, so every core works even at B = 1. Output [B, H, D].
#pragma once

#include "Halide.h"
#include "generators/common/chunked_attention.h"
#include "generators/common/storage_type.h"
#include "schedules/scheduled.h"

namespace hattn {

class AttentionDecode : public Halide::Generator<AttentionDecode> {
public:
    // Keys per chunk (a split-KV task); 0: the schedule family's (schedules::decode_key_chunk).
    GeneratorParam<int> key_chunk{"key_chunk", 0};
    // QK in bf16 pairs (x86 AVX512-BF16): a bf16 cache, a query of bf16 values and an even head
    // dim, which the runtime checks before it chooses this variant (ChunkedAttentionInputs).
    GeneratorParam<bool> bf16_pairs{"bf16_pairs", false};
    // QK of an int8 cache in integer dot products over per-head quantised queries (x86
    // AVX512-VNNI; ChunkedAttentionInputs::int8_dots); the runtime checks the head dim.
    GeneratorParam<bool> int8_dots{"int8_dots", false};

    Input<Buffer<float>> q{"q", 4};              // (D, g, Hkv, B)
    // The cache's storage type (f32, bf16, f16, int8), widened to float32 as it is read; the table
    // declares the buffers' type to match (storage_type.h).
    GeneratorParam<StorageType> kv_type{"kv_type", StorageType::F32, storage_type_names};
    Input<Buffer<>> k_cache{"k_cache", 4};  // (D, capacity, Hkv, B)
    Input<Buffer<>> v_cache{"v_cache", 4};  // (D, capacity, Hkv, B)
    Input<Buffer<int32_t>> kv_len{"kv_len", 1};  // (B)
    Input<Buffer<int32_t>> first_key{"first_key", 1};  // (B): the first key each query sees
    // At least the longest kv_len[b] - first_key[b]: the split-KV chunks end there, where the
    // capacity would make a long cache's cost that of its capacity rather than of its tokens.
    Input<int32_t> longest_visible{"longest_visible"};
    Input<float> scale{"scale"};
    // Attention sinks (gpt-oss): the sink of query head hk * g + hg at (hg, hk), read where
    // has_sinks (any buffer otherwise).
    Input<Buffer<float>> sinks{"sinks", 2};  // (g, Hkv)
    Input<bool> has_sinks{"has_sinks"};
    // Soft-capping (Gemma 2): scores s become softcap * tanh(s / softcap), where has_softcap;
    // softcap must be positive even where not (callers pass 1).
    Input<float> softcap{"softcap"};
    Input<bool> has_softcap{"has_softcap"};
    Output<Buffer<float>> out{"out", 4};  // (D, g, Hkv, B)
    // Added by configure() over an int8 cache, after the inputs above: each cached row's scale of
    // its codes (spec/attention.md section 5), (capacity, Hkv, B).
    Input<Buffer<float>> *k_scale = nullptr, *v_scale = nullptr;

    std::unique_ptr<ChunkedAttention> attention;
    Halide::Func attended{"attended"};  // (d, hg, hk, i, b) with the single query i = 0

    void configure();
    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(AttentionDecode)
