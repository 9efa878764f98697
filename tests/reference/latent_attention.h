// Float64 reference of the compressed-latent layers (spec/attention.md §2 CCA/CCGQA, §3 ZAYA1),
// written from the spec, independent of the runtime.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "hattn/tensor.h"
#include "reference/linear.h"
#include "reference/storage_rounding.h"

namespace hattn::reference {

struct LatentWeights {
    int64_t E, H, Hkv, dh;
    int conv_layers;  // 0, 1 or 2
    int64_t k0, k1;
    bool qk_mean, value_shift, causal;
    bool bitnet = false;  // every projection is a BitLinear
    int64_t rotary_dim;
    double rope_base, eps;
    std::vector<double> key_scale;  // per KV head
    Tensor w_qk, w_v, w_v2, w_o;    // w_v2 only with value shift
    std::optional<Tensor> b_qk, b_v, b_v2, b_o;
    Tensor w0, w1;                  // [P, 1, k0], [P, dh, k1]
    std::optional<Tensor> b0, b1;
    // The layer's dtype (spec/attention.md section 5): x and what each step stores rounded (the
    // packed qk rows; q and k; the value halves or v; the attention's output; y). The weights are
    // the caller's, as the layer holds them.
    DType dtype = DType::F32;
};

namespace latent_detail {
// BitLinear as the spec states it: float32 quantisation, round half to even, exact integer dots.
inline std::vector<double> bitlinear(const std::vector<double> &x, int64_t rows, const Tensor &w) {
    const int64_t out = w.dim(0), in = w.dim(1);
    double total = 0;
    for (float v : w.values()) total += std::fabs(v);
    const float a_w = 1.0f / std::max(static_cast<float>(total / double(w.size())), 1e-5f);
    std::vector<int> wq(w.size());
    for (size_t n = 0; n < wq.size(); n++) {
        wq[n] = static_cast<int>(std::clamp(std::nearbyint(w.data()[n] * a_w), -1.0f, 1.0f));
    }
    std::vector<double> y(rows * out);
    for (int64_t r = 0; r < rows; r++) {
        std::vector<float> xr(x.begin() + r * in, x.begin() + (r + 1) * in);  // activations are float32
        float peak = 0;
        for (float v : xr) peak = std::max(peak, std::fabs(v));
        const float a_x = 127.0f / std::max(peak, 1e-5f);
        std::vector<int> xq(in);
        for (int64_t k = 0; k < in; k++) {
            xq[k] = static_cast<int>(std::clamp(std::nearbyint(xr[k] * a_x), -128.0f, 127.0f));
        }
        for (int64_t o = 0; o < out; o++) {
            int64_t dot = 0;
            for (int64_t k = 0; k < in; k++) dot += int64_t(xq[k]) * wq[o * in + k];
            y[r * out + o] = double(dot) / (double(a_x) * double(a_w));
        }
    }
    return y;
}
}  // namespace latent_detail

// The q [S, H, dh] and k [S, Hkv, dh] of one sequence, from its raw packed rows qk [S, P]:
// convolutions, q-k-mean, norms, RoPE (positions 0..S-1).
inline void latent_qk(const LatentWeights &w, const std::vector<double> &qk, int64_t S, std::vector<double> &q,
                      std::vector<double> &k) {
    const int64_t H = w.H, Hkv = w.Hkv, dh = w.dh, g = H / Hkv, P = (H + Hkv) * dh, Lq = H * dh;
    auto raw = [&](int64_t t, int64_t c) { return t < 0 ? 0.0 : qk[t * P + c]; };
    // c0 at any position t >= -(k1 - 1); positions before the sequence see zero inputs (and the bias).
    auto c0 = [&](int64_t t, int64_t c) {
        if (w.conv_layers == 0) return raw(t, c);
        double s = w.b0 ? w.b0->data()[c] : 0.0;
        for (int64_t j = 0; j < w.k0; j++) s += w.w0.data()[c * w.k0 + j] * raw(t - (w.k0 - 1) + j, c);
        return s;
    };
    auto conv = [&](int64_t t, int64_t o) {
        if (w.conv_layers < 2) return c0(t, o);
        double s = w.b1 ? w.b1->data()[o] : 0.0;
        const int64_t base = (o / dh) * dh;
        for (int64_t i = 0; i < dh; i++)
            for (int64_t j = 0; j < w.k1; j++) s += w.w1.data()[(o * dh + i) * w.k1 + j] * c0(t - (w.k1 - 1) + j, base + i);
        return s;
    };
    q.assign(S * H * dh, 0.0);
    k.assign(S * Hkv * dh, 0.0);
    for (int64_t t = 0; t < S; t++) {
        std::vector<double> mq(H * dh);
        for (int64_t h = 0; h < H; h++)
            for (int64_t d = 0; d < dh; d++) mq[h * dh + d] = (raw(t, h * dh + d) + raw(t, Lq + (h / g) * dh + d)) / 2;
        for (int64_t h = 0; h < H; h++)
            for (int64_t d = 0; d < dh; d++) q[(t * H + h) * dh + d] = conv(t, h * dh + d) + (w.qk_mean ? mq[h * dh + d] : 0);
        for (int64_t j = 0; j < Hkv; j++)
            for (int64_t d = 0; d < dh; d++) {
                double m = 0;
                for (int64_t r = 0; r < g; r++) m += mq[(j * g + r) * dh + d];
                k[(t * Hkv + j) * dh + d] = conv(t, Lq + j * dh + d) + (w.qk_mean ? m / g : 0);
            }
        auto finish = [&](double *head, double scale) {
            double n = 0;
            for (int64_t d = 0; d < dh; d++) n += head[d] * head[d];
            const double f = std::sqrt(double(dh)) / std::max(std::sqrt(n), w.eps) * scale;
            for (int64_t d = 0; d < dh; d++) head[d] *= f;
            const int64_t half = w.rotary_dim / 2;
            for (int64_t i = 0; i < half; i++) {
                const double a = t * std::pow(w.rope_base, -2.0 * i / w.rotary_dim);
                const double x1 = head[i], x2 = head[i + half];
                head[i] = x1 * std::cos(a) - x2 * std::sin(a);
                head[i + half] = x1 * std::sin(a) + x2 * std::cos(a);
            }
        };
        for (int64_t h = 0; h < H; h++) finish(&q[(t * H + h) * dh], 1.0);
        for (int64_t j = 0; j < Hkv; j++) finish(&k[(t * Hkv + j) * dh], w.key_scale[j]);
    }
}

// The layer on x [B, S, E]; returns [B, S, E].
inline std::vector<double> latent_attention(const LatentWeights &w, const Tensor &x) {
    const auto project = [&w](const std::vector<double> &in, int64_t rows, const Tensor &weight,
                              const std::optional<Tensor> &b) {
        return w.bitnet ? latent_detail::bitlinear(in, rows, weight) : reference::linear(in, rows, weight, b);
    };
    const int64_t B = x.dim(0), S = x.dim(1), E = w.E, H = w.H, Hkv = w.Hkv, dh = w.dh, g = H / Hkv;
    const int64_t Lkv = Hkv * dh;
    const auto stored = [&](std::vector<double> values) {
        store_rows(w.dtype, values, 1);
        return values;
    };
    std::vector<double> out;
    for (int64_t b = 0; b < B; b++) {
        const std::vector<double> xb = stored({x.data() + b * S * E, x.data() + (b + 1) * S * E});
        std::vector<double> q, k;
        latent_qk(w, stored(project(xb, S, w.w_qk, w.b_qk)), S, q, k);
        q = stored(q);
        k = stored(k);
        std::vector<double> v(S * Lkv);
        if (w.value_shift) {
            const std::vector<double> cur = stored(project(xb, S, w.w_v, w.b_v));
            std::vector<double> shifted(S * E, 0.0);  // x_{t-1}, zero for t = 0
            std::copy(xb.begin(), xb.end() - E, shifted.begin() + E);
            const std::vector<double> del = stored(project(shifted, S, w.w_v2, w.b_v2));
            for (int64_t t = 0; t < S; t++)
                for (int64_t n = 0; n < Lkv / 2; n++) {
                    v[t * Lkv + n] = cur[t * Lkv / 2 + n];
                    v[t * Lkv + Lkv / 2 + n] = del[t * Lkv / 2 + n];
                }
        } else {
            v = stored(project(xb, S, w.w_v, w.b_v));
        }
        std::vector<double> att(S * H * dh, 0.0);
        for (int64_t t = 0; t < S; t++)
            for (int64_t h = 0; h < H; h++) {
                const int64_t last = w.causal ? t : S - 1, j = h / g;
                std::vector<double> s(last + 1);
                double m = -1e300;
                for (int64_t u = 0; u <= last; u++) {
                    double dot = 0;
                    for (int64_t d = 0; d < dh; d++) dot += q[(t * H + h) * dh + d] * k[(u * Hkv + j) * dh + d];
                    s[u] = dot / std::sqrt(double(dh));
                    m = std::max(m, s[u]);
                }
                double sum = 0;
                for (int64_t u = 0; u <= last; u++) {
                    const double p = std::exp(s[u] - m);
                    sum += p;
                    for (int64_t d = 0; d < dh; d++) att[(t * H + h) * dh + d] += p * v[u * Lkv + j * dh + d];
                }
                for (int64_t d = 0; d < dh; d++) att[(t * H + h) * dh + d] /= sum;
            }
        const std::vector<double> y = stored(project(stored(att), S, w.w_o, w.b_o));
        out.insert(out.end(), y.begin(), y.end());
    }
    return out;
}

}  // namespace hattn::reference
