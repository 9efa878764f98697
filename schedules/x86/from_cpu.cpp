// The kernels whose x86 schedule is schedules/cpu/'s as it is.
#include "generators/rope.h"
#include "generators/round_values.h"
#include "generators/row_norm.h"
#include "generators/strided_copy.h"
#include "schedules/cpu/rope.h"
#include "schedules/cpu/round_values.h"
#include "schedules/cpu/row_norm.h"
#include "schedules/cpu/strided_copy.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

void schedule(Rope &g, const Halide::Target &t) { cpu::schedule_rope(g, t); }
void schedule(RoundValues &g, const Halide::Target &t) { cpu::schedule_round_values(g, t); }
void schedule(RowNorm &g, const Halide::Target &t) { cpu::schedule_row_norm(g, t); }
void schedule(StridedCopy &g, const Halide::Target &t) { cpu::schedule_strided_copy(g, t); }

}  // namespace hattn::schedules::x86
