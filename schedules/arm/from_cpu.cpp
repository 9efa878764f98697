// The kernels whose AArch64 schedule is schedules/cpu/'s, with NEON's register budget where it
// takes one.
#include "generators/cca/qk_latent.h"
#include "generators/rope.h"
#include "generators/round_values.h"
#include "generators/row_norm.h"
#include "generators/strided_copy.h"
#include "schedules/cpu/cca.h"
#include "schedules/cpu/rope.h"
#include "schedules/cpu/round_values.h"
#include "schedules/cpu/row_norm.h"
#include "schedules/cpu/strided_copy.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

void schedule(Rope &g, const Halide::Target &t) { cpu::schedule_rope(g, t); }
void schedule(RoundValues &g, const Halide::Target &t) { cpu::schedule_round_values(g, t); }
void schedule(RowNorm &g, const Halide::Target &t) { cpu::schedule_row_norm(g, t); }
void schedule(StridedCopy &g, const Halide::Target &t) { cpu::schedule_strided_copy(g, t); }
// The grouped conv's register tile: 2 channel vectors x 12 tokens, 24 of NEON's 32 registers.
void schedule(CcaQkLatent &g, const Halide::Target &t) { cpu::schedule_cca_qk_latent(g, t, 12); }

}  // namespace hattn::schedules::arm
