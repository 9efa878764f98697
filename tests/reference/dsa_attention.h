// Float64 reference of GLM-5's sparse attention (spec/attention.md §4), written from the spec,
// independent of the runtime. Weights by their HF names.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "hattn/tensor.h"
#include "reference/linear.h"

namespace hattn::reference {

struct DsaShape {
    int64_t E, H, QL, R, N, Rd, V, IH, ID, K;
    double theta, eps;
};

// x [B, S, E] -> [B, S, E].
inline std::vector<double> dsa_attention(const DsaShape &c, const std::map<std::string, Tensor> &w, const Tensor &x) {
    auto W = [&](const std::string &name) -> const Tensor & { return w.at(name); };
    auto B_ = [&](const std::string &name) -> std::optional<Tensor> {
        auto it = w.find(name);
        return it == w.end() ? std::nullopt : std::optional<Tensor>(it->second);
    };
    auto rms = [&](std::vector<double> &v, size_t off, int64_t n, const Tensor &g) {
        double sq = 0;
        for (int64_t i = 0; i < n; i++) sq += v[off + i] * v[off + i];
        const double inv = 1.0 / std::sqrt(sq / n + c.eps);
        for (int64_t i = 0; i < n; i++) v[off + i] = g.data()[i] * v[off + i] * inv;
    };
    // Interleaved RoPE on d dims at `off`: de-interleave, rotate half, keep de-interleaved.
    auto rope = [&](std::vector<double> &v, size_t off, int64_t d, int64_t pos) {
        std::vector<double> t(d);
        for (int64_t i = 0; i < d / 2; i++) {
            t[i] = v[off + 2 * i];
            t[i + d / 2] = v[off + 2 * i + 1];
        }
        for (int64_t i = 0; i < d / 2; i++) {
            const double a = pos * std::pow(c.theta, -2.0 * i / d);
            v[off + i] = t[i] * std::cos(a) - t[i + d / 2] * std::sin(a);
            v[off + i + d / 2] = t[i] * std::sin(a) + t[i + d / 2] * std::cos(a);
        }
    };
    const int64_t Bn = x.dim(0), S = x.dim(1), E = c.E, H = c.H, N = c.N, Rd = c.Rd, V = c.V, R = c.R;
    std::vector<double> out;
    for (int64_t b = 0; b < Bn; b++) {
        const std::vector<double> xb(x.data() + b * S * E, x.data() + (b + 1) * S * E);
        std::vector<double> qr = linear(xb, S, W("q_a_proj.weight"), B_("q_a_proj.bias"));
        for (int64_t s = 0; s < S; s++) rms(qr, s * c.QL, c.QL, W("q_a_layernorm.weight"));
        std::vector<double> q = linear(qr, S, W("q_b_proj.weight"), std::nullopt);
        std::vector<double> ckv = linear(xb, S, W("kv_a_proj_with_mqa.weight"), B_("kv_a_proj_with_mqa.bias"));
        std::vector<double> kv(S * R);
        for (int64_t s = 0; s < S; s++) {
            rms(ckv, s * (R + Rd), R, W("kv_a_layernorm.weight"));
            std::copy_n(ckv.begin() + s * (R + Rd), R, kv.begin() + s * R);
            rope(ckv, s * (R + Rd) + R, Rd, s);
            for (int64_t h = 0; h < H; h++) rope(q, (s * H + h) * (N + Rd) + N, Rd, s);
        }
        const std::vector<double> kvb = linear(kv, S, W("kv_b_proj.weight"), std::nullopt);
        std::vector<double> iq = linear(qr, S, W("indexer.wq_b.weight"), std::nullopt);
        std::vector<double> ik = linear(xb, S, W("indexer.wk.weight"), std::nullopt);
        const std::vector<double> hw = linear(xb, S, W("indexer.weights_proj.weight"), std::nullopt);
        for (int64_t s = 0; s < S; s++) {
            double mean = 0, var = 0;
            for (int64_t i = 0; i < c.ID; i++) mean += ik[s * c.ID + i] / c.ID;
            for (int64_t i = 0; i < c.ID; i++) var += (ik[s * c.ID + i] - mean) * (ik[s * c.ID + i] - mean) / c.ID;
            for (int64_t i = 0; i < c.ID; i++) {
                ik[s * c.ID + i] = (ik[s * c.ID + i] - mean) / std::sqrt(var + 1e-6) * W("indexer.k_norm.weight").data()[i] +
                                   W("indexer.k_norm.bias").data()[i];
            }
            rope(ik, s * c.ID, Rd, s);
            for (int64_t h = 0; h < c.IH; h++) rope(iq, (s * c.IH + h) * c.ID, Rd, s);
        }
        std::vector<double> att(S * H * V, 0.0);
        for (int64_t s = 0; s < S; s++) {
            std::vector<double> score(s + 1, 0.0);
            for (int64_t t = 0; t <= s; t++)
                for (int64_t h = 0; h < c.IH; h++) {
                    double dot = 0;
                    for (int64_t i = 0; i < c.ID; i++) dot += iq[(s * c.IH + h) * c.ID + i] * ik[t * c.ID + i];
                    score[t] += hw[s * c.IH + h] / std::sqrt(double(c.IH)) * std::max(dot / std::sqrt(double(c.ID)), 0.0);
                }
            std::vector<int64_t> order(s + 1);
            std::iota(order.begin(), order.end(), 0);
            std::sort(order.begin(), order.end(),
                      [&](int64_t a, int64_t z) { return score[a] != score[z] ? score[a] > score[z] : a > z; });
            order.resize(std::min<int64_t>(c.K, s + 1));
            for (int64_t h = 0; h < H; h++) {
                std::vector<double> logit;
                double m = -1e300;
                for (int64_t t : order) {
                    double dot = 0;
                    for (int64_t i = 0; i < N; i++) dot += q[(s * H + h) * (N + Rd) + i] * kvb[(t * H + h) * (N + V) + i];
                    for (int64_t i = 0; i < Rd; i++) dot += q[(s * H + h) * (N + Rd) + N + i] * ckv[t * (R + Rd) + R + i];
                    logit.push_back(dot / std::sqrt(double(N + Rd)));
                    m = std::max(m, logit.back());
                }
                double sum = 0;
                for (size_t n = 0; n < order.size(); n++) {
                    const double p = std::exp(logit[n] - m);
                    sum += p;
                    for (int64_t v = 0; v < V; v++) att[(s * H + h) * V + v] += p * kvb[(order[n] * H + h) * (N + V) + N + v];
                }
                for (int64_t v = 0; v < V; v++) att[(s * H + h) * V + v] /= sum;
            }
        }
        const std::vector<double> y = linear(att, S, W("o_proj.weight"), B_("o_proj.bias"));
        out.insert(out.end(), y.begin(), y.end());
    }
    return out;
}

}  // namespace hattn::reference
