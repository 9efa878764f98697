#include "generators/row_norm.h"
#include "schedules/cpu/row_norm.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

void schedule(RowNorm &g, const Halide::Target &t) { cpu::schedule_row_norm(g, t); }

}  // namespace hattn::schedules::arm
