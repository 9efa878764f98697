// The compressed-latent query/key stage of CCA, CCGQA and ZAYA1's CCA (spec/attention.md §2, §3),
// fused into one pass over the sequence: the two causal convolutions, q-k-mean, L2 normalisation
// with the key temperature, and (partial) RoPE.
//
// Input is the packed down-projection qk = [q_pre (H x dh) | k_pre (Hkv x dh)] of the new tokens,
// preceded by `pad` = (k0 - 1) + (k1 - 1) history rows (the previous tokens' raw qk rows, zero
// before the sequence starts), so decode continues a sequence exactly. Per token s:
//   c0[c, e]  = b0[c] + sum_j w0[c, j] * qk[c, e - (k0-1) + j]                  (depthwise, causal)
//   c1[o, s]  = b1[o] + sum_i sum_j w1[o, i, j] * c0[(o / dh) * dh + i, s + (k0-1) + j]   (grouped)
//   m_q[h]    = (q_pre[h] + k_pre[h / g]) / 2,  m_k[j] = mean of m_q over the g heads of group j
//   q = c1_q + m_q,  k = c1_k + m_k           (without q-k-mean: q = c1_q, k = c1_k)
//   q *= sqrt(dh) / max(|q|, eps),  k *= sqrt(dh) / max(|k|, eps) * key_scale[j]
//   q, k = rope(q), rope(k) on the first rotary dims, position start[b] + s.
// A model with fewer conv layers passes identity weights (k = 1, w = 1 or the group identity,
// b = 0), which reproduces its values exactly. What is fused: c0 exists only per block of tokens,
// inside the pass that computes c1; q-k-mean, the norms and the rotation are computed per token
// inside the two outputs. Channels are addressed as (d, group), c = group * dh + d, so that no
// stage divides a channel index by dh.
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class CcaQkLatent : public Halide::Generator<CcaQkLatent> {
public:
    Input<Buffer<float>> qk{"qk", 3};            // (P, pad + S, B)
    Input<Buffer<float>> conv0_w{"conv0_w", 2};  // (k0, P): [P, 1, k0] as stored
    Input<Buffer<float>> conv0_b{"conv0_b", 1};  // (P)
    // (P + padding, dh, k1): [k1, dh, P + padding], outputs innermost (cca_grouped_by_output)
    Input<Buffer<float>> conv1_w{"conv1_w", 3};
    Input<Buffer<float>> conv1_b{"conv1_b", 1};  // (P)
    Input<Buffer<float>> key_scale{"key_scale", 1};  // (Hkv): exp(temp) or ZAYA's temp[j]
    Input<Buffer<float>> cos_table{"cos_table", 2};  // (rotary / 2, positions)
    Input<Buffer<float>> sin_table{"sin_table", 2};
    Input<Buffer<int32_t>> start{"start", 1};        // (B): position of the first new token
    Input<bool> qk_mean{"qk_mean"};
    Input<float> norm_eps{"norm_eps"};
    Output<Buffer<float>> q_out{"q_out", 4};  // (dh, H, S, B)
    Output<Buffer<float>> k_out{"k_out", 4};  // (dh, Hkv, S, B)

    Halide::Var d{"d"}, c{"c"}, h{"h"}, s{"s"}, b{"b"}, e{"e"}, i{"i"}, j{"j"};
    Halide::Func conv0{"conv0"};          // (c, e, b): depthwise conv over the padded rows
    Halide::Func conv1_w_t{"conv1_w_t"};  // (d, group, i, j): w1 of output channel group * dh + d
    Halide::Func conv1{"conv1"};          // (d, group, s, b): grouped conv, one row per new token
    Halide::RDom r1;                      // (tap, input channel of the group)
    Halide::Func mean_k{"mean_k"};        // (d, h, s, b): sum of q-k-means over the group
    Halide::Func q_mixed{"q_mixed"};  // (d, h, s, b): before normalisation
    Halide::Func k_mixed{"k_mixed"};  // (d, h, s, b)
    Halide::Func q_norm{"q_norm"};    // (h, s, b): sqrt(dh) / max(|q|, eps)
    Halide::Func k_norm{"k_norm"};    // (h, s, b): the same times key_scale

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(CcaQkLatent)
