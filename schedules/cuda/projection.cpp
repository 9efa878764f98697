#include "generators/projection.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::cuda {

using namespace Halide;

namespace {

// Many rows (prefill): a block computes a 64 x 64 tile of outputs, each thread a 4 x 8 register
// tile of it. The reduction over k runs in slices of 16: the block stages the slice of x and of W
// in shared memory, then every thread accumulates its tile from there. The accumulators are
// thread-private registers (`MemoryType::Register` at the block level, unrolled), so the inner
// loop is one vector load of 4 outputs' W, 8 loads of x and 32 FMAs.
void schedule_tiles(Projection &g) {
    constexpr int tile_o = 64, tile_r = 64, reg_o = 4, reg_r = 8, slice = 16;
    Var ob("ob"), rb("rb"), ot("ot"), rt("rt"), oi("oi"), ri("ri");
    RVar ko("ko"), ki("ki");
    const TailStrategy guard = TailStrategy::GuardWithIf;

    g.y.tile(g.o, g.r, ob, rb, ot, rt, tile_o, tile_r, guard)
        .tile(ot, rt, ot, rt, oi, ri, reg_o, reg_r, guard)
        .reorder(oi, ri, ot, rt, ob, rb)
        .gpu_blocks(ob, rb)
        .gpu_threads(ot, rt)
        .unroll(oi)
        .unroll(ri);

    g.acc.compute_at(g.y, ob)
        .store_in(MemoryType::Register)
        .split(g.o, ot, oi, reg_o)
        .split(g.r, rt, ri, reg_r)
        .reorder(oi, ri, ot, rt)
        .gpu_threads(ot, rt)
        .unroll(oi)
        .unroll(ri);
    g.acc.update()
        .split(g.o, ot, oi, reg_o)
        .split(g.r, rt, ri, reg_r)
        .split(g.k, ko, ki, slice, guard)
        .reorder(oi, ri, ki, ot, rt, ko)
        .gpu_threads(ot, rt)
        .unroll(oi)
        .unroll(ri);
    g.acc.bound_extent(g.o, tile_o).bound_extent(g.r, tile_r);

    // The block's 16 x 8 threads stage each slice: consecutive threads read consecutive k of a
    // row, and each thread covers 8 rows of x or of W. The last slice is staged whole too (k is
    // clamped in the algorithm; the product's guard skips the copies): its thread-masked stores
    // to local memory came out wrong on PoCL for AVX2 hosts with 64-bit indices (large_buffers).
    // The tiles here are one row of x and one output of W (projection_tile), so a tile's index
    // is its row or output.
    const Var kv = g.x_tiles.args()[1], row = g.x_tiles.args()[2];
    const Var w_kv = g.weight_panels.args()[1], output = g.weight_panels.args()[2];
    Var serial("serial"), thread("thread");
    g.x_tiles.compute_at(g.acc, ko)
        .store_in(MemoryType::GPUShared)
        .bound_extent(kv, slice)
        .split(row, serial, thread, tile_r / reg_r)
        .reorder(serial, kv, thread)
        .gpu_threads(kv, thread);
    g.weight_panels.compute_at(g.acc, ko)
        .store_in(MemoryType::GPUShared)
        .bound_extent(w_kv, slice)
        .split(output, serial, thread, tile_r / reg_r)
        .reorder(serial, w_kv, thread)
        .gpu_threads(w_kv, thread);
}

// A few rows (decode): bound by reading W once. A block owns 8 outputs; its 32 x 8 threads split
// each output's dot products over k in 32 lanes (rfactor), so a warp reads 32 consecutive floats
// of a W row and keeps one sum per row of x (at most 4, clamped) in registers; the lanes' sums
// then meet in shared memory and are added per output.
void schedule_gemv(Projection &g) {
    constexpr int outputs = 8, lanes = 32;
    Var ob("ob"), ot("ot"), u("u");
    RVar ko("ko"), lane("lane");
    const TailStrategy guard = TailStrategy::GuardWithIf;

    g.y.split(g.o, ob, ot, outputs, guard).reorder(g.r, ot, ob).gpu_blocks(ob).gpu_threads(ot);
    Func partial = g.acc.update().split(g.k, ko, lane, lanes, guard).rfactor(lane, u);
    g.acc.compute_at(g.y, ob).gpu_threads(g.o);
    g.acc.update().gpu_threads(g.o);  // the sum over lanes (after rfactor, which takes the schedule)
    g.acc.bound_extent(g.o, outputs);
    // Each thread accumulates its lane's sums for every row in registers (partial at the thread),
    // then stores them once to shared memory (the wrapper), where the per-output sums read them.
    Func lane_sums = partial.in();
    lane_sums.compute_at(g.y, ob).store_in(MemoryType::GPUShared).reorder(g.r, u, g.o).gpu_threads(u, g.o);
    partial.compute_at(lane_sums, u).bound_extent(g.r, Projection::gemv_max_rows_gpu).unroll(g.r);
    partial.update().reorder(g.r, ko).unroll(g.r);
}

}  // namespace

// Threads own rows and outputs; packing x or W in tiles would only add a stage.
ProjectionTile projection_tile(const Target &) { return {1, 1}; }

void schedule(Projection &g, const Target &) {
    if (g.gemv) {
        schedule_gemv(g);
    } else {
        schedule_tiles(g);
    }
}

}  // namespace hattn::schedules::cuda
