// Chooses the schedule family for a generator's target. Generators call schedules::apply() from
// schedule(); each family implements one `schedule(Kernel &, const Target &)` per kernel in its own
// folder, so tuning one target never touches an algorithm or another target.
#pragma once

#include "Halide.h"

namespace hattn {
class Projection;
class AttentionPrefill;
class AttentionDecode;
class Rope;
class CcaQkLatent;
class BitLinear;
class DsaIndexScores;
class DsaSparseAttention;
class RowNorm;
}

namespace hattn::schedules {

namespace x86 {
void schedule(Projection &g, const Halide::Target &t);
void schedule(AttentionPrefill &g, const Halide::Target &t);
void schedule(AttentionDecode &g, const Halide::Target &t);
void schedule(Rope &g, const Halide::Target &t);
void schedule(CcaQkLatent &g, const Halide::Target &t);
void schedule(BitLinear &g, const Halide::Target &t);
void schedule(DsaIndexScores &g, const Halide::Target &t);
void schedule(DsaSparseAttention &g, const Halide::Target &t);
void schedule(RowNorm &g, const Halide::Target &t);
}
namespace arm {
void schedule(Projection &g, const Halide::Target &t);
void schedule(AttentionPrefill &g, const Halide::Target &t);
void schedule(AttentionDecode &g, const Halide::Target &t);
void schedule(Rope &g, const Halide::Target &t);
void schedule(CcaQkLatent &g, const Halide::Target &t);
void schedule(BitLinear &g, const Halide::Target &t);
void schedule(DsaIndexScores &g, const Halide::Target &t);
void schedule(DsaSparseAttention &g, const Halide::Target &t);
void schedule(RowNorm &g, const Halide::Target &t);
}
namespace cuda {
void schedule(Projection &g, const Halide::Target &t);
void schedule(AttentionPrefill &g, const Halide::Target &t);
void schedule(AttentionDecode &g, const Halide::Target &t);
void schedule(Rope &g, const Halide::Target &t);
void schedule(CcaQkLatent &g, const Halide::Target &t);
void schedule(BitLinear &g, const Halide::Target &t);
void schedule(DsaIndexScores &g, const Halide::Target &t);
void schedule(DsaSparseAttention &g, const Halide::Target &t);
void schedule(RowNorm &g, const Halide::Target &t);
}

template <typename Generator>
void apply(Generator &g, const Halide::Target &t) {
    if (t.has_gpu_feature()) {
        cuda::schedule(g, t);
    } else if (t.arch == Halide::Target::ARM) {
        arm::schedule(g, t);
    } else {
        x86::schedule(g, t);
    }
}

}  // namespace hattn::schedules
