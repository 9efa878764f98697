#include "generators/cca/qk_latent.h"
#include "schedules/cpu/cca.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// The grouped conv's register tile: 2 channel vectors x 12 tokens, 24 of NEON's 32 registers.
void schedule(CcaQkLatent &g, const Halide::Target &t) { cpu::schedule_cca_qk_latent(g, t, 12); }

}  // namespace hattn::schedules::arm
