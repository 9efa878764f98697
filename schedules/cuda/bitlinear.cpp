#include "generators/bitlinear.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

// One thread per output; its dot product over k runs serially from the packed row.
void schedule(BitLinear &g, const Target &) {
    Var ob("ob"), ot("ot");
    g.y.split(g.o, ob, ot, 64, TailStrategy::GuardWithIf).gpu_blocks(ob, g.r).gpu_threads(ot);
    g.dot.compute_at(g.y, ot);
}

}  // namespace hattn::schedules::cuda
