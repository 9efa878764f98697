#include "generators/rope.h"
#include "schedules/cpu/rope.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

void schedule(Rope &g, const Halide::Target &t) { cpu::schedule_rope(g, t); }

}  // namespace hattn::schedules::arm
