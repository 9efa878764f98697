#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// AVX-512 has 32 vector registers: QK keeps 2 query vectors x 8 keys, PV 16 accumulators.
// AVX2 and SSE have 16: 2 x 4 and 8.
void schedule(AttentionPrefill &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_prefill(*g.attention, g.out, t,
                          avx512 ? cpu::AttentionCpuTiles{8, 16} : cpu::AttentionCpuTiles{4, 8});
}

void schedule(AttentionDecode &g, const Halide::Target &t) {
    const bool avx512 = t.has_feature(Halide::Target::AVX512);
    cpu::schedule_decode(*g.attention, g.out, t,
                         avx512 ? cpu::AttentionCpuTiles{1, 16} : cpu::AttentionCpuTiles{1, 8});
}

}  // namespace hattn::schedules::x86
