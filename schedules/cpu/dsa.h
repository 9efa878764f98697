#pragma once

#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"

namespace hattn::schedules::cpu {

// Per query, every key's score in whole vectors of keys (no scalar tail: the same arithmetic for
// any length, so forward and decode agree bit for bit).
void schedule_dsa_index_scores(DsaIndexScores &g, const Halide::Target &t);

// Per query and head: logits over its selected keys, softmax, and the weighted sum of values.
void schedule_dsa_sparse_attention(DsaSparseAttention &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
