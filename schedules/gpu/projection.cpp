#include "generators/projection.h"
#include "schedules/dispatch.h"

namespace hattn::schedules::gpu {

using namespace Halide;

namespace {

// Many rows (prefill): a block computes a 64 x 64 tile of outputs, each thread a 4 x 8 register
// tile of it. The reduction over k runs in slices of 32 (rfactor over the slices): the block
// stages the slice of x and of W in shared memory, each thread sums its tile over the slice in
// registers (`slice` computed inside the thread loop, every index unrolled), then adds it to the
// block's running sums, kept in shared memory with the thread's 4 outputs of a row one 128-bit
// access. (Those sums stored in registers at the block level were the block's whole 64 x 64 box
// per thread, a 16 KB stack frame in local memory: Halide 14 does not narrow it to the thread's
// part.) Both slices are stored k-major, so that a thread's 4 outputs of W and 8 rows of x at one
// k are contiguous (128-bit loads: a warp's 16 output threads read consecutive W, and the 16
// threads of each of its 2 row threads the same x, a broadcast), and padded by 4 floats a k, so
// that the staging's stores (consecutive threads on consecutive k) conflict 2 ways, not 16.
void schedule_tiles(Projection &g) {
    constexpr int tile_o = 64, tile_r = 64, reg_o = 4, reg_r = 8, slice_k = 32;
    Var ob("ob"), rb("rb"), ot("ot"), rt("rt"), oi("oi"), ri("ri"), ks("ks");
    RVar ko("ko"), ki("ki");
    const TailStrategy guard = TailStrategy::GuardWithIf;

    // The thread's tile of a (o, r) stage: 4 outputs (vectorized, one 128-bit access where the
    // stage is in shared memory) x 8 rows (unrolled); `outer` goes outside the thread loops.
    auto map_thread_tile = [&](Stage s, std::vector<VarOrRVar> outer) {
        std::vector<VarOrRVar> order = {oi, ri, ot, rt};
        order.insert(order.end(), outer.begin(), outer.end());
        s.split(g.o, ot, oi, reg_o, guard).split(g.r, rt, ri, reg_r, guard).reorder(order);
        s.gpu_threads(ot, rt).unroll(ri);
        return s;
    };
    g.y.tile(g.o, g.r, ob, rb, g.o, g.r, tile_o, tile_r, guard).gpu_blocks(ob, rb);
    map_thread_tile(g.y, {ob, rb}).unroll(oi);

    Func slice = g.acc.update().split(g.k, ko, ki, slice_k, guard).rfactor(ko, ks);
    g.acc.compute_at(g.y, ob).store_in(MemoryType::GPUShared).bound_extent(g.o, tile_o).bound_extent(g.r, tile_r);
    map_thread_tile(g.acc, {}).vectorize(oi);
    map_thread_tile(g.acc.update(), {ko}).vectorize(oi);
    slice.compute_at(g.acc, ot).store_in(MemoryType::Register).vectorize(g.o).unroll(g.r);
    slice.update().reorder(g.o, g.r, ki).vectorize(g.o).unroll(g.r).unroll(ki, 2);

    // The block's 16 x 8 threads stage each slice: 16 consecutive threads read 16 consecutive k
    // of a row (the slice's two halves unrolled), and each thread every 8th row of x or of W, 16
    // loads in flight. The last slice is staged whole too (k is clamped in the algorithm; the
    // product's guard skips the copies): its thread-masked stores to local memory came out wrong
    // on PoCL for AVX2 hosts with 64-bit indices (large_buffers). The tiles here are one row of x
    // and one output of W (projection_tile), so a tile's index is its row or output.
    constexpr int threads_x = tile_o / reg_o, threads_y = tile_r / reg_r;
    const Var kv = g.x_tiles.args()[1], row = g.x_tiles.args()[2];
    const Var w_kv = g.weight_panels.args()[1], output = g.weight_panels.args()[2];
    Var serial("serial"), kt("kt"), thread("thread");
    auto map_staging = [&](Func f, const Var &k, const Var &tile) {
        f.compute_at(g.acc, ko)
            .store_in(MemoryType::GPUShared)
            .bound_extent(k, slice_k)
            .reorder_storage(tile, k, f.args()[0])
            .align_storage(tile, tile_r + 4)
            .split(k, serial, kt, threads_x)
            .split(tile, tile, thread, threads_y)
            .reorder(serial, tile, kt, thread)
            .gpu_threads(kt, thread)
            .unroll(serial)
            .unroll(tile);
    };
    map_staging(g.x_tiles, kv, row);
    map_staging(g.weight_panels, w_kv, output);
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

}  // namespace hattn::schedules::gpu
