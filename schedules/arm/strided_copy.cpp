#include "generators/strided_copy.h"
#include "schedules/cpu/strided_copy.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

void schedule(StridedCopy &g, const Halide::Target &t) { cpu::schedule_strided_copy(g, t); }

}  // namespace hattn::schedules::arm
