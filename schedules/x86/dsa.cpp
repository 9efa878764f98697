#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"
#include "schedules/cpu/dsa.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// Tiles of 2 vectors of heads x 10 keys on AVX-512: 20 accumulators, which LLVM keeps in registers
// (12 spilled in the inner loop: docs/perf/log.md, "DSA indexer tiles").
void schedule(DsaIndexScores &g, const Halide::Target &t) {
    cpu::schedule_dsa_index_scores(g, t, t.has_feature(Halide::Target::AVX512) ? 10 : 4);
}
void schedule(DsaSparseAttention &g, const Halide::Target &t) { cpu::schedule_dsa_sparse_attention(g, t); }

}  // namespace hattn::schedules::x86
