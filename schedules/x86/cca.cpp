#include "generators/cca/qk_latent.h"
#include "schedules/cpu/cca.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// The grouped conv's register tile: 2 channel vectors x 12 tokens (24 accumulators) with
// AVX-512's 32 registers, x 4 tokens with AVX2's and SSE's 16.
void schedule(CcaQkLatent &g, const Halide::Target &t) {
    cpu::schedule_cca_qk_latent(g, t, t.has_feature(Halide::Target::AVX512) ? 12 : 4);
}

}  // namespace hattn::schedules::x86
