#include "generators/bitlinear.h"
#include "generators/bitlinear_quantize.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// As the projection's GEMV: a block owns 8 outputs of one row; 32 lanes split each dot product
// over packed bytes (rfactor), so a warp reads 32 consecutive bytes of a weight row and each lane
// the 4 activations of its byte;
// each lane's sum stays in a register until it is stored once to shared memory, where the
// per-output sums read them. (Was a thread per output walking its packed row alone.)
void schedule(BitLinear &g, const Target &) {
    constexpr int outputs = 8, lanes = 32;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var ob("ob"), ot("ot"), u("u");
    RVar ko("ko"), lane("lane");
    g.y.split(g.o, ob, ot, outputs, guard).gpu_blocks(ob, g.r).gpu_threads(ot);
    Func partial = g.dot.update().split(g.rk.x, ko, lane, lanes, guard).rfactor(lane, u);
    g.dot.compute_at(g.y, ob).gpu_threads(g.o);
    g.dot.update().gpu_threads(g.o);  // the sum over lanes
    Func lane_sums = partial.in();
    lane_sums.compute_at(g.y, ob).store_in(MemoryType::GPUShared).reorder(u, g.o).gpu_threads(u, g.o);
    partial.compute_at(lane_sums, u);
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

}  // namespace hattn::schedules::gpu
