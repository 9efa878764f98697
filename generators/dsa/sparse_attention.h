// Sparse attention over gathered keys (spec/attention.md §4): query s of head h attends only to the
// keys its row of `indices` names (-1 = none), in O(S * K), never O(S^2):
//   out[h, s] = sum_n p_n v[idx_n],  p = softmax over n of q[h, s] . k[idx_n] * scale
// Keys and values have `kv_heads` heads; query head h reads head h * kv_heads / H. GLM's expanded
// form passes per-head keys [k_nope_h | k_rot] (kv_heads = H); the absorbed form (decode, and a
// CPU's prefill) passes the latent rows [kv | k_rot] as one shared head, queries
// [q_nope_h W_kvb_k,h | q_rot_h], and the latent kv as values, read in place from the state in its
// storage types (spec/attention.md section 5): the keys' first R dims and the values are the
// latent's R values (`keys`, `values`: the same rows, in latent_type), their last Rd the rotary
// part (`rotary`, in rotary_type). Indices are checked by the runtime; here they are clamped only to
// keep every load inside the cache.
#pragma once

#include "Halide.h"
#include "generators/common/storage_type.h"
#include "schedules/scheduled.h"

namespace hattn {

class DsaSparseAttention : public Halide::Generator<DsaSparseAttention> {
public:
    // The loops over a query's keys run in whole steps of this many (the GPU's PV unrolls a step,
    // its gathers in flight together); the keys past K in the last step count as unselected.
    GeneratorParam<int> key_step{"key_step", 1};
    // The absorbed form's keys and values: one head (the latent rows) that every query head reads.
    // Known at compile time, a key row is the same for all heads, so CPU schedules compute the
    // logits and PV as small matrix products over the heads (the runtime's dsa_latent_attention).
    GeneratorParam<bool> shared_kv{"shared_kv", false};
    // The shared form's storage types: the latent's R values (f32, bf16, f16, or int8 codes with a
    // float32 scale per group of latent_group values) and its rotary part (f32, bf16, f16). The
    // table declares keys.type and values.type to match (storage_type.h); the expanded form reads
    // float32.
    GeneratorParam<StorageType> latent_type{"latent_type", StorageType::F32, storage_type_names};
    GeneratorParam<StorageType> rotary_type{"rotary_type", StorageType::F32, storage_type_names};
    static constexpr int latent_group = 128;  // an int8 latent's values per scale (the spec's)
    // The shared form's logits over a bf16 latent in bf16 pairs (x86 AVX512-BF16's vdpbf16ps): the
    // queries' R dims are bf16 values (a bf16 layer's q_abs) and R is even, which the runtime
    // checks; `q_pairs` holds them, rd runs over (pair, R / 2).
    GeneratorParam<bool> bf16_pairs{"bf16_pairs", false};

    // A logit no selected key has: finite, as Halide's fast-math codegen assumes no inf.
    static constexpr float masked_logit = -1e30f;

    Input<Buffer<float>> q{"q", 4};                // (Dk, H, S, B)
    Input<Buffer<>> keys{"keys", 4};               // (Dk, kv_heads, capacity, B); shared: (R, 1, capacity, B)
    Input<Buffer<>> values{"values", 4};           // (Dv, kv_heads, capacity, B); shared: the keys' rows
    Input<Buffer<int32_t>> indices{"indices", 3};  // (K, S, B)
    Input<float> scale{"scale"};
    Output<Buffer<float>> out{"out", 4};           // (Dv, H, S, B)
    // Added by configure() in the shared form, after the inputs above: the keys' rotary dims
    // (Rd, 1, capacity, B), and for an int8 latent the scales of its groups (groups, capacity, B).
    Input<Buffer<>> *rotary = nullptr;
    Input<Buffer<float>> *latent_scale = nullptr;

    Halide::Var d{"d"}, n{"n"}, h{"h"}, s{"s"}, b{"b"}, group{"group"};
    Halide::RDom rd, rr, rn;  // rr: the shared form's rotary dims
    // An int8 latent: rg over a row's groups, ri over a group's values.
    Halide::RDom rg, ri;
    // An int8 latent's logit per group of its codes, (group, n, h, s, b), before the group's
    // scale: the scale multiplies a group's sum rather than each code.
    Halide::Func group_logit{"group_logit"};
    Halide::Func logit{"logit"};  // (n, h, s, b); the shared form adds the rotary dims in a second update
    // bf16 pairs: q_pairs(pair, h, d, s, b) is query value 2d + pair of head h (clamped to the
    // heads, so that schedules may compute whole vectors of them) in bf16.
    Halide::Func q_pairs{"q_pairs"};
    Halide::Var pair{"pair"};
    Halide::Func row_max{"row_max"}, prob{"prob"}, row_sum{"row_sum"}, acc{"acc"};

    void configure();
    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(DsaSparseAttention)
