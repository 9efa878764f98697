// Float64 reference of the cached attention layer (spec/attention.md §1), independent of the
// runtime: projections, QK-norm, RoPE, attention over [prior cache ; new tokens], output projection.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "hattn/tensor.h"
#include "reference/linear.h"
#include "reference/storage_rounding.h"

namespace hattn::reference {

struct CachedAttentionWeights {
    int64_t E, H, Hkv, D;
    std::optional<double> rope_base;
    Tensor wq, wk, wv, wo;
    std::optional<Tensor> bq, bk, bv, bo;
    // QK-norm (Qwen3, OLMo 2): RMSNorm of the projected q and k, before RoPE, over consecutive runs
    // as long as its weight's rows (a head's D, or a token's H·D and Hkv·D); weights [heads, D] are
    // each head's own (the runs taking the rows in turn). norm_centred: LayerNorm without bias
    // (Command R+).
    std::optional<Tensor> q_norm, k_norm;
    double norm_eps = 1e-6;
    bool norm_centred = false;
    bool norm_after_rope = false;  // Llama 4 norms the rotated q and k
    bool rope_pairs_in_place = false;  // Llama 4, GLM: RoPE turns dims (2i, 2i + 1) as complex numbers
    int64_t rotary_dim = 0;            // RoPE turns the first this many dims (GLM: half); 0: all
    std::optional<double> scale;  // the scores' scale; none: 1 / sqrt(D)
    // gpt-oss: head h's softmax also counts a key of score sinks[h] and value zero.
    std::optional<Tensor> sinks;
    std::optional<int64_t> window;  // a query sees at most this many keys, itself included
    // false: query p sees every key of its sequence (within the window: |p - j| < window)
    bool causal = true;
    std::optional<int64_t> chunk;   // Llama 4: query p sees the keys j <= p with j / chunk == p / chunk
    std::optional<double> softcap;  // Gemma 2: scores s -> softcap tanh(s / softcap)
    std::optional<double> qkv_clip;  // OLMo 1: q, k and v clamped to [-clip, clip] as projected
    // Llama 4's layers without RoPE: the query at position p times
    // log1p(floor((p + offset) / floor_scale)) * scale + 1, as {floor_scale, scale, offset}
    // (Llama 4's offset 1, Ministral 3's 0).
    std::optional<std::tuple<double, double, int64_t>> temperature;
    // The layer's dtype (spec/attention.md section 5): x rounded on entry, the weights and biases
    // held rounded, and what each step stores rounded (q, k and v as projected, normed and rotated;
    // the attention's output; y). prior_k and prior_v are as the caller's cache holds them.
    DType dtype = DType::F32;
};

namespace detail {
inline void qk_norm(std::vector<double> &x, const Tensor &weight, double eps, bool centred) {
    const int64_t n = weight.shape().back(), weight_rows = weight.size() / n;
    for (size_t row = 0; row < x.size(); row += n) {
        double mean = 0, squares = 0;
        if (centred) {
            for (int64_t i = 0; i < n; i++) mean += x[row + i] / n;
        }
        for (int64_t i = 0; i < n; i++) squares += (x[row + i] - mean) * (x[row + i] - mean);
        const double inverse = 1.0 / std::sqrt(squares / n + eps);
        const float *w = weight.data() + (int64_t(row / n) % weight_rows) * n;
        for (int64_t i = 0; i < n; i++) x[row + i] = (x[row + i] - mean) * inverse * w[i];
    }
}

// Pair i of a head's first D dims, (i, i + D/2), or (2i, 2i + 1) where in_place, turned by
// position * base^(-2i / D).
inline void rotate(double *head, int64_t D, double position, double base, bool in_place = false) {
    for (int64_t i = 0; i < D / 2; i++) {
        const double a = position * std::pow(base, -2.0 * i / D);
        double &x1 = head[in_place ? 2 * i : i], &x2 = head[in_place ? 2 * i + 1 : i + D / 2];
        const double r1 = x1 * std::cos(a) - x2 * std::sin(a), r2 = x1 * std::sin(a) + x2 * std::cos(a);
        x1 = r1, x2 = r2;
    }
}
}  // namespace detail

// Self-attention (causal unless w says not) of x [B, S, E] appended after `prior` tokens whose rotated keys and values
// are prior_k, prior_v [B, prior, Hkv, D] (may be empty). Returns [B, S, E].
inline std::vector<double> cached_attention(const CachedAttentionWeights &w, const Tensor &x,
                                            const std::vector<double> &prior_k,
                                            const std::vector<double> &prior_v, int64_t prior) {
    const int64_t B = x.dim(0), S = x.dim(1), H = w.H, Hkv = w.Hkv, D = w.D, g = H / Hkv;
    const auto stored = [&](std::vector<double> &values) { store_rows(w.dtype, values, 1); };
    const auto held = [&](const Tensor &t) { return w.dtype == DType::F32 ? t : stored_tensor(w.dtype, t); };
    const auto held_bias = [&](const std::optional<Tensor> &b) { return b ? std::optional<Tensor>(held(*b)) : b; };
    std::vector<double> xd(x.values().begin(), x.values().end());
    stored(xd);
    std::vector<double> q = linear(xd, B * S, held(w.wq), held_bias(w.bq));
    std::vector<double> k = linear(xd, B * S, held(w.wk), held_bias(w.bk));
    std::vector<double> v = linear(xd, B * S, held(w.wv), held_bias(w.bv));
    for (std::vector<double> *projected : {&q, &k, &v}) {
        for (double &e : *projected) e = w.qkv_clip ? std::clamp(e, -*w.qkv_clip, *w.qkv_clip) : e;
        stored(*projected);
    }
    const auto norm = [&] {
        if (w.q_norm) detail::qk_norm(q, *w.q_norm, w.norm_eps, w.norm_centred);
        if (w.k_norm) detail::qk_norm(k, *w.k_norm, w.norm_eps, w.norm_centred);
        stored(q);
        stored(k);
    };
    if (!w.norm_after_rope) norm();
    if (w.rope_base) {
        const bool in_place = w.rope_pairs_in_place;
        const int64_t rd = w.rotary_dim ? w.rotary_dim : D;
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < S; s++) {
                for (int64_t h = 0; h < H; h++) detail::rotate(&q[((b * S + s) * H + h) * D], rd, prior + s, *w.rope_base, in_place);
                for (int64_t h = 0; h < Hkv; h++) detail::rotate(&k[((b * S + s) * Hkv + h) * D], rd, prior + s, *w.rope_base, in_place);
            }
        stored(q);
        stored(k);
    }
    if (w.norm_after_rope) norm();
    if (const auto t = w.temperature) {
        for (int64_t i = 0; i < B * S * H * D; i++) {
            const int64_t position = prior + (i / (H * D)) % S;
            const auto [floor_scale, scale, offset] = *t;
            q[i] *= std::log1p(std::floor(double(position + offset) / floor_scale)) * scale + 1.0;
        }
    }
    const int64_t T = prior + S;
    auto key = [&](int64_t b, int64_t t, int64_t h) {
        return t < prior ? &prior_k[((b * prior + t) * Hkv + h) * D] : &k[((b * S + t - prior) * Hkv + h) * D];
    };
    auto value = [&](int64_t b, int64_t t, int64_t h) {
        return t < prior ? &prior_v[((b * prior + t) * Hkv + h) * D] : &v[((b * S + t - prior) * Hkv + h) * D];
    };
    std::vector<double> attended(B * S * H * D, 0.0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < H; h++) {
                const double *qh = &q[((b * S + s) * H + h) * D];
                std::vector<double> scores(T);
                double m = w.sinks ? double(w.sinks->data()[h]) : -1e300;
                int64_t first = w.window ? std::max<int64_t>(0, prior + s + 1 - *w.window) : 0;
                if (w.chunk) first = (prior + s) / *w.chunk * *w.chunk;
                int64_t last = prior + s;  // the last key seen
                if (!w.causal) last = w.window ? std::min<int64_t>(T - 1, prior + s + *w.window - 1) : T - 1;
                for (int64_t t = first; t <= last; t++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += qh[d] * key(b, t, h / g)[d];
                    scores[t] = dot * w.scale.value_or(1.0 / std::sqrt(double(D)));
                    if (w.softcap) scores[t] = *w.softcap * std::tanh(scores[t] / *w.softcap);
                    m = std::max(m, scores[t]);
                }
                double sum = w.sinks ? std::exp(double(w.sinks->data()[h]) - m) : 0.0;
                double *out = &attended[((b * S + s) * H + h) * D];
                for (int64_t t = first; t <= last; t++) {
                    const double p = std::exp(scores[t] - m);
                    sum += p;
                    for (int64_t d = 0; d < D; d++) out[d] += p * value(b, t, h / g)[d];
                }
                for (int64_t d = 0; d < D; d++) out[d] /= sum;
            }
    stored(attended);
    std::vector<double> y = linear(attended, B * S, held(w.wo), held_bias(w.bo));
    stored(y);
    return y;
}

}  // namespace hattn::reference
