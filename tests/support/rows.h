// Choosing which query rows a long reference checks: a seeded random sample that always holds the
// first and the last row of every sequence and any row the test names (e.g. fully masked ones).
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "reference/attention.h"

namespace hattn::testing {

inline std::vector<reference::QueryRow> sample_rows(int64_t batch, int64_t queries, int64_t per_sequence,
                                                    uint32_t seed,
                                                    const std::vector<reference::QueryRow> &must = {}) {
    std::mt19937 rng(seed);
    std::vector<reference::QueryRow> rows = must;
    for (int64_t b = 0; b < batch; b++) {
        if (queries <= per_sequence) {
            for (int64_t i = 0; i < queries; i++) rows.push_back({b, i});
            continue;
        }
        rows.push_back({b, 0});
        rows.push_back({b, queries - 1});
        std::uniform_int_distribution<int64_t> pick(1, queries - 2);
        for (int64_t n = 2; n < per_sequence; n++) rows.push_back({b, pick(rng)});
    }
    return rows;
}

// Gathers the same rows of a [B, Sq, H, D] tensor, in order.
inline Tensor gather_rows(const Tensor &t, const std::vector<reference::QueryRow> &rows) {
    const int64_t Sq = t.dim(1), width = t.dim(2) * t.dim(3);
    Tensor out({static_cast<int64_t>(rows.size()), width});
    for (size_t n = 0; n < rows.size(); n++) {
        std::copy_n(t.data() + (rows[n].b * Sq + rows[n].i) * width, width, out.data() + n * width);
    }
    return out;
}

}  // namespace hattn::testing
