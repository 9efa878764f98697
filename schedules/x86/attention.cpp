#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// QK: 2 query vectors x 4 keys = 8 accumulators (AVX2 has 16 registers, AVX-512 32).
// PV: 4 query rows x D/vec vectors.
void schedule(AttentionPrefill &g, const Halide::Target &t) {
    cpu::schedule_prefill(*g.attention, g.out, t, cpu::AttentionCpuTiles{4, 4});
}

void schedule(AttentionDecode &g, const Halide::Target &t) {
    cpu::schedule_decode(*g.attention, g.out, t);
}

}  // namespace hattn::schedules::x86
