#pragma once

#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"

namespace hattn::schedules::cpu {

// Per query and block of keys, the visible keys' scores: the dot products in register tiles of
// 2 vectors of heads x `keys` keys, the sum over heads in whole vectors of keys.
void schedule_dsa_index_scores(DsaIndexScores &g, const Halide::Target &t, int keys);

// Per query and head: logits over its selected keys, softmax, and the weighted sum of values.
void schedule_dsa_sparse_attention(DsaSparseAttention &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
