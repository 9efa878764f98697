#include "generators/bitlinear.h"
#include "schedules/cpu/bitlinear.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::x86 {

// u8 x s8 is the VNNI form (vpdpbusd: 4 products per lane, 64 bytes per AVX-512 vector). s8 x s8
// widens to 16 bits for vpmaddwd, which sums pairs: lanes of 2 products accumulate its results
// directly (lanes of 4 cost two shuffles and a permute per pair of vpmaddwd on AVX2).
void schedule(BitLinear &g, const Halide::Target &t) {
    if (g.dot_form == DotForm::U8S8) return cpu::schedule_bitlinear(g, t, {64, 4});
    cpu::schedule_bitlinear(g, t, {t.has_feature(Halide::Target::AVX512) ? 64 : 32, 2});
}
void schedule(BitLinearQuantize &g, const Halide::Target &t) { cpu::schedule_bitlinear_quantize(g, t); }

}  // namespace hattn::schedules::x86
