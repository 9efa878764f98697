#include "generators/bitlinear.h"
#include "generators/bitlinear_quantize.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

// One thread per output; its dot product over k runs serially from the packed row.
void schedule(BitLinear &g, const Target &) {
    Var ob("ob"), ot("ot");
    g.y.split(g.o, ob, ot, 64, TailStrategy::GuardWithIf).gpu_blocks(ob, g.r).gpu_threads(ot);
    g.dot.compute_at(g.y, ot);
}

// A thread per row for the peak and the sum (one or a few rows in decode), a thread per element
// for the quantised rows.
void schedule(BitLinearQuantize &g, const Target &) {
    Var rb("rb"), rt("rt"), kb("kb"), kt("kt");
    for (Func f : {g.peak, g.sum}) {
        f.compute_root().gpu_tile(g.r, rb, rt, 32, TailStrategy::GuardWithIf);
        f.update().gpu_tile(g.r, rb, rt, 32, TailStrategy::GuardWithIf);
    }
    for (Func f : {Func(g.xq_sum), Func(g.row_scale)}) f.gpu_tile(g.r, rb, rt, 32, TailStrategy::GuardWithIf);
    g.xq.gpu_tile(g.k, g.r, kb, rb, kt, rt, 128, 1, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::cuda
