#include "generators/cca/qk_latent.h"
#include "schedules/cpu/cca.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

void schedule(CcaQkLatent &g, const Halide::Target &t) { cpu::schedule_cca_qk_latent(g, t); }

}  // namespace hattn::schedules::x86
