#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"
#include "schedules/cpu/dsa.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

void schedule(DsaIndexScores &g, const Halide::Target &t) { cpu::schedule_dsa_index_scores(g, t, 12); }
void schedule(DsaSparseAttention &g, const Halide::Target &t) { cpu::schedule_dsa_sparse_attention(g, t); }

}  // namespace hattn::schedules::arm
