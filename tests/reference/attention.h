// Float64 references for RoPE and attention, written as plainly as possible.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "hattn/tensor.h"

namespace hattn::reference {

// NeoX rotate-half on the first rotary_dim dims of x [B, S, H, D]; position of (b, s) = start[b] + s.
// `interleaved`: GLM's layout, the rotated dims de-interleaved first (output stays de-interleaved).
inline std::vector<double> rope(const Tensor &x, int64_t rotary_dim, double base,
                                const std::vector<int32_t> &start, bool interleaved = false) {
    const int64_t B = x.dim(0), S = x.dim(1), H = x.dim(2), D = x.dim(3), half = rotary_dim / 2;
    std::vector<double> y(x.values().begin(), x.values().end());
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < H; h++) {
                const float *in = x.data() + ((b * S + s) * H + h) * D;
                std::vector<float> row(in, in + D);
                if (interleaved) {
                    for (int64_t i = 0; i < half; i++) {
                        row[i] = in[2 * i];
                        row[i + half] = in[2 * i + 1];
                    }
                }
                double *out = y.data() + ((b * S + s) * H + h) * D;
                for (int64_t i = 0; i < half; i++) {
                    const double angle = double(start[b] + s) * std::pow(base, -2.0 * i / rotary_dim);
                    const double x1 = row[i], x2 = row[i + half];
                    out[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
                    out[i + half] = x1 * std::sin(angle) + x2 * std::cos(angle);
                }
            }
    return y;
}

// Attention of the query rows `rows` (pairs b, i) of q [B, Sq, H, D] against k, v
// [B, Hkv, capacity, D] with kv_len[b] visible keys; query i sits at position kv_len[b] - Sq + i.
// mask is [B, 1, Sq, mask_keys] bytes (True = masked) or null; sinks [H] or null, head h's sink a
// further score in its softmax whose value is zero. softcap > 0 bounds each scaled score s to
// softcap tanh(s / softcap) (Gemma 2). Returns, per row in order, H x D values; a row with no
// visible key is zeros.
struct QueryRow {
    int64_t b, i;
};
inline std::vector<double> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                     const std::vector<int32_t> &kv_len, double scale, bool causal,
                                     const std::vector<uint8_t> *mask, int64_t mask_keys,
                                     const std::vector<QueryRow> &rows,
                                     const std::vector<float> *sinks = nullptr, double softcap = 0) {
    const int64_t Sq = q.dim(1), H = q.dim(2), D = q.dim(3);
    const int64_t Hkv = k.dim(1), capacity = k.dim(2), group = H / Hkv;
    std::vector<double> out;
    for (const QueryRow &row : rows) {
        const int64_t len = kv_len[row.b], position = len - Sq + row.i;
        for (int64_t h = 0; h < H; h++) {
            const float *qv = q.data() + ((row.b * Sq + row.i) * H + h) * D;
            const int64_t hk = h / group;
            std::vector<double> scores;
            std::vector<int64_t> keys;
            for (int64_t j = 0; j < len; j++) {
                if (causal && j > position) continue;
                if (mask && (*mask)[(row.b * Sq + row.i) * mask_keys + j]) continue;
                const float *kv = k.data() + ((row.b * Hkv + hk) * capacity + j) * D;
                double s = 0;
                for (int64_t d = 0; d < D; d++) s += double(qv[d]) * double(kv[d]);
                scores.push_back(softcap > 0 ? softcap * std::tanh(s * scale / softcap) : s * scale);
                keys.push_back(j);
            }
            std::vector<double> acc(D, 0.0);
            if (!scores.empty()) {
                double m = scores[0], sum = 0;
                for (double s : scores) m = std::max(m, s);
                if (sinks) {
                    m = std::max(m, double((*sinks)[h]));
                    sum += std::exp(double((*sinks)[h]) - m);
                }
                for (size_t n = 0; n < scores.size(); n++) {
                    const double p = std::exp(scores[n] - m);
                    sum += p;
                    const float *vv = v.data() + ((row.b * Hkv + hk) * capacity + keys[n]) * D;
                    for (int64_t d = 0; d < D; d++) acc[d] += p * double(vv[d]);
                }
                for (double &a : acc) a /= sum;
            }
            out.insert(out.end(), acc.begin(), acc.end());
        }
    }
    return out;
}

}  // namespace hattn::reference
