#include "generators/round_values.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// A thread per value, 256 a block: consecutive threads on consecutive words (coalesced).
void schedule(RoundValues &g, const Target &) {
    Var block("block"), thread("thread");
    g.out.gpu_tile(g.i, block, thread, 256, TailStrategy::GuardWithIf);
}

}  // namespace hattn::schedules::gpu
