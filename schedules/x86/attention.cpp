#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// AVX-512 tiles 64 queries, whose 4 query vectors QK takes against 6 keys at a time (24 of the 32
// vector registers accumulate); PV keeps 16 accumulators. Against 32-query tiles (2 query vectors
// x 8 keys) this ran 10% faster at D = 32, 64 and 128. AVX2 and SSE have 16 registers and tile 32
// queries (64 ran AVX2 10% slower): QK 2 query vectors x 4 keys (8 accumulators beside the 2
// query vectors and a broadcast key), PV 8 accumulators. 4 x 4 left no register for the loads and
// spilled accumulators in the inner loop: 16-29% slower on an AVX2-only EPYC.
int prefill_query_tile(const Halide::Target &t) { return t.has_feature(Halide::Target::AVX512) ? 64 : 32; }

void schedule(AttentionPrefill &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_prefill(*g.attention, g.out, t,
                          avx512 ? cpu::AttentionCpuTiles{4, 6, 16} : cpu::AttentionCpuTiles{2, 4, 8});
}

void schedule(AttentionDecode &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_decode(*g.attention, g.out, t,
                         avx512 ? cpu::AttentionCpuTiles{1, 1, 16} : cpu::AttentionCpuTiles{1, 1, 8});
}

}  // namespace hattn::schedules::x86
