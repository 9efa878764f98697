// Float64 reference of the cached attention layer (spec/attention.md §1), independent of the
// runtime: projections, QK-norm, RoPE, attention over [prior cache ; new tokens], output projection.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "hattn/tensor.h"
#include "reference/linear.h"

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
    std::optional<double> scale;  // the scores' scale; none: 1 / sqrt(D)
    // gpt-oss: head h's softmax also counts a key of score sinks[h] and value zero.
    std::optional<Tensor> sinks;
    std::optional<int64_t> window;  // a query sees at most this many keys, itself included
    std::optional<double> softcap;  // Gemma 2: scores s -> softcap tanh(s / softcap)
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

inline void rotate(double *head, int64_t D, double position, double base) {
    for (int64_t i = 0; i < D / 2; i++) {
        const double a = position * std::pow(base, -2.0 * i / D);
        const double x1 = head[i], x2 = head[i + D / 2];
        head[i] = x1 * std::cos(a) - x2 * std::sin(a);
        head[i + D / 2] = x1 * std::sin(a) + x2 * std::cos(a);
    }
}
}  // namespace detail

// Causal self-attention of x [B, S, E] appended after `prior` tokens whose rotated keys and values
// are prior_k, prior_v [B, prior, Hkv, D] (may be empty). Returns [B, S, E].
inline std::vector<double> cached_attention(const CachedAttentionWeights &w, const Tensor &x,
                                            const std::vector<double> &prior_k,
                                            const std::vector<double> &prior_v, int64_t prior) {
    const int64_t B = x.dim(0), S = x.dim(1), H = w.H, Hkv = w.Hkv, D = w.D, g = H / Hkv;
    const std::vector<double> xd(x.values().begin(), x.values().end());
    std::vector<double> q = linear(xd, B * S, w.wq, w.bq);
    std::vector<double> k = linear(xd, B * S, w.wk, w.bk);
    const std::vector<double> v = linear(xd, B * S, w.wv, w.bv);
    if (w.q_norm) detail::qk_norm(q, *w.q_norm, w.norm_eps, w.norm_centred);
    if (w.k_norm) detail::qk_norm(k, *w.k_norm, w.norm_eps, w.norm_centred);
    if (w.rope_base) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < S; s++) {
                for (int64_t h = 0; h < H; h++) detail::rotate(&q[((b * S + s) * H + h) * D], D, prior + s, *w.rope_base);
                for (int64_t h = 0; h < Hkv; h++) detail::rotate(&k[((b * S + s) * Hkv + h) * D], D, prior + s, *w.rope_base);
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
                std::vector<double> scores(prior + s + 1);
                double m = w.sinks ? double(w.sinks->data()[h]) : -1e300;
                const int64_t first = w.window ? std::max<int64_t>(0, prior + s + 1 - *w.window) : 0;
                for (int64_t t = first; t <= prior + s && t < T; t++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += qh[d] * key(b, t, h / g)[d];
                    scores[t] = dot * w.scale.value_or(1.0 / std::sqrt(double(D)));
                    if (w.softcap) scores[t] = *w.softcap * std::tanh(scores[t] / *w.softcap);
                    m = std::max(m, scores[t]);
                }
                double sum = w.sinks ? std::exp(double(w.sinks->data()[h]) - m) : 0.0;
                double *out = &attended[((b * S + s) * H + h) * D];
                for (int64_t t = first; t <= prior + s; t++) {
                    const double p = std::exp(scores[t] - m);
                    sum += p;
                    for (int64_t d = 0; d < D; d++) out[d] += p * value(b, t, h / g)[d];
                }
                for (int64_t d = 0; d < D; d++) out[d] /= sum;
            }
    return linear(attended, B * S, w.wo, w.bo);
}

}  // namespace hattn::reference
