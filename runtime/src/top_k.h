// Choosing the best keys of a query by score (the DSA indexer's top-k).
#pragma once

#include <cstdint>

namespace hattn::detail {

// The n best of score[0, count) into out[0, n), in ascending order of index. Better means a
// larger score, and between equal scores (+0 equals -0) the larger, more recent, index: a strict
// order, so the selection is unique. Needs 0 <= n <= count <= INT32_MAX (an error otherwise) and
// finite scores.
void top_k_indices(const float *score, int64_t count, int64_t n, int32_t *out);

}  // namespace hattn::detail
