#include "generators/attention_decode.h"
#include "generators/attention_prefill.h"
#include "schedules/cpu/attention.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// NEON's 32 registers hold 8 query vectors x 4 keys... with 4-wide vectors a 32-query tile is
// 8 vectors, so 2 keys per step keeps 16 accumulators live.
void schedule(AttentionPrefill &g, const Halide::Target &t) {
    cpu::schedule_prefill(*g.attention, g.out, t, cpu::AttentionCpuTiles{2, 4});
}

void schedule(AttentionDecode &g, const Halide::Target &t) {
    cpu::schedule_decode(*g.attention, g.out, t);
}

}  // namespace hattn::schedules::arm
