#include "generators/bitlinear.h"
#include "schedules/cpu/bitlinear.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

void schedule(BitLinear &g, const Halide::Target &t) { cpu::schedule_bitlinear(g, t); }
void schedule(BitLinearQuantize &g, const Halide::Target &t) { cpu::schedule_bitlinear_quantize(g, t); }

}  // namespace hattn::schedules::x86
