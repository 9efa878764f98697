// Sparse attention over gathered keys (spec/attention.md §4): query s of head h attends only to the
// keys its row of `indices` names (-1 = none), in O(S * K), never O(S^2):
//   out[h, s] = sum_n p_n v[idx_n],  p = softmax over n of q[h, s] . k[idx_n] * scale
// Keys and values have `kv_heads` heads; query head h reads head h * kv_heads / H. GLM's expanded
// form passes per-head keys [k_nope_h | k_rot] (kv_heads = H); the absorbed form (decode, and a
// CPU's prefill) passes the latent rows [kv | k_rot] as one shared head, queries
// [q_nope_h W_kvb_k,h | q_rot_h], and the latent kv as values. Indices are checked by the runtime;
// here they are clamped only to keep every load inside the cache.
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class DsaSparseAttention : public Halide::Generator<DsaSparseAttention> {
public:
    // The loops over a query's keys run in whole steps of this many (the GPU's PV unrolls a step,
    // its gathers in flight together); the keys past K in the last step count as unselected.
    GeneratorParam<int> key_step{"key_step", 1};
    // The absorbed form's keys and values: one head (the latent rows) that every query head reads.
    // Known at compile time, a key row is the same for all heads, so CPU schedules compute the
    // logits and PV as small matrix products over the heads (the runtime picks this variant for
    // keys with one head).
    GeneratorParam<bool> shared_kv{"shared_kv", false};

    // A logit no selected key has: finite, as Halide's fast-math codegen assumes no inf.
    static constexpr float masked_logit = -1e30f;

    Input<Buffer<float>> q{"q", 4};                // (Dk, H, S, B)
    Input<Buffer<float>> keys{"keys", 4};          // (Dk, kv_heads, capacity, B)
    Input<Buffer<float>> values{"values", 4};      // (Dv, kv_heads, capacity, B)
    Input<Buffer<int32_t>> indices{"indices", 3};  // (K, S, B)
    Input<float> scale{"scale"};
    Output<Buffer<float>> out{"out", 4};           // (Dv, H, S, B)

    Halide::Var d{"d"}, n{"n"}, h{"h"}, s{"s"}, b{"b"};
    Halide::RDom rd, rn;
    Halide::Func logit{"logit"};  // (n, h, s, b)
    Halide::Func row_max{"row_max"}, prob{"prob"}, row_sum{"row_sum"}, acc{"acc"};

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(DsaSparseAttention)
