#include "generators/dsa/index_scores.h"
#include "generators/dsa/sparse_attention.h"
#include "schedules/gpu/lanes.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

// A first mapping: one thread per (key, query) score; one thread per (head, query) row.
void schedule(DsaIndexScores &g, const Target &) {
    Var tb("tb"), tt("tt");
    g.score.split(g.t, tb, tt, 64, TailStrategy::GuardWithIf).gpu_blocks(tb, g.s, g.b).gpu_threads(tt);
    g.total.compute_at(g.score, tt);
    g.dot.compute_at(g.score, tt);
}

// A block per (head, query, sequence): a decode step has as many blocks as heads, where a thread
// per head (the first mapping) left one block to walk every selected key serially. Threads split
// the selected keys for the logits (each accumulated in a register, stored in shared memory), the
// row's max and sum (each thread every 256th key, rfactor; then one thread the 256 lanes; one
// thread walking all K keys was a chain of K dependent steps) and the probabilities, and the value
// dims for PV, reading consecutive floats of each gathered row. PV walks the keys key_step at a
// time, unrolled, so that their index and value gathers are in flight together (one thread per
// value dim, each gather dependent on an index load: a latency chain at one key a step).
void schedule(DsaSparseAttention &g, const Target &) {
    constexpr int threads = 256;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var ds("ds"), dt("dt"), ns("ns"), nt("nt");
    g.out.split(g.d, ds, dt, threads, guard).reorder(ds, dt, g.h, g.s, g.b).gpu_blocks(g.h, g.s, g.b).gpu_threads(dt);
    const LoopLevel block(g.out, g.h);
    Func logits = g.logit.in();
    for (Func f : {logits, g.prob}) {
        f.compute_at(block).split(g.n, ns, nt, threads, guard).reorder(ns, nt).gpu_threads(nt);
    }
    g.logit.compute_at(logits, ns);
    if (g.latent_scale) g.group_logit.compute_at(g.logit, g.rg);  // a thread's key, group by group
    for (Func f : {g.row_max, g.row_sum}) {
        RVar rno("rno"), rni("rni");
        Var u("u");
        Func lanes = f.update().split(g.rn.x, rno, rni, threads, guard).rfactor(rni, u);
        if (f.name() == g.row_max.name()) start_lanes_at(lanes, DsaSparseAttention::masked_logit);
        lanes.compute_at(block).gpu_threads(u);
        lanes.update().reorder(rno, u).gpu_threads(u);
        f.compute_at(block);
    }
    RVar step("step"), in_step("in_step");
    g.acc.compute_at(g.out, ds);
    g.acc.update().split(g.rn.x, step, in_step, g.key_step, guard).unroll(in_step);
}

}  // namespace hattn::schedules::gpu
