#include "generators/bitlinear.h"
#include "schedules/cpu/bitlinear.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::arm {

// sdot sums 4 byte products per lane (and plain NEON's widening multiply-adds group them too).
void schedule(BitLinear &g, const Halide::Target &t) { cpu::schedule_bitlinear(g, t, {64, 4}); }
void schedule(BitLinearQuantize &g, const Halide::Target &t) { cpu::schedule_bitlinear_quantize(g, t); }

}  // namespace hattn::schedules::arm
