#include "schedules/cpu/projection_tiled.h"

namespace hattn::schedules::cpu {

using namespace Halide;

// The GEMM's loop nest, outermost first: a thread's block of rows x outputs (acc, in memory);
// slices of k; panels of W; row tiles; k within the slice, where one register tile accumulates
// (slice_sum, unrolled over its rows and vectors) before it is added to acc. x and W are packed
// once per call, each tile's elements innermost (x_tiles, weight_panels), so the innermost loop
// reads one stream of W vectors and broadcasts x from one pointer.
void schedule_projection_blocked(Projection &g, const Target &t, ProjectionBlocks blocks) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy guard = TailStrategy::GuardWithIf, round_up = TailStrategy::RoundUp;
    if (g.output_tile % vec != 0 || blocks.rows % g.row_tile != 0 || blocks.outputs % g.output_tile != 0) {
        throw CompileError("projection: the blocks must be whole register tiles, and the tile whole vectors");
    }

    Var ob("ob"), rb("rb"), oi("oi"), ri("ri"), block("block");
    g.y.tile(g.o, g.r, ob, rb, oi, ri, blocks.outputs, blocks.rows, guard)
        .vectorize(oi, vec, guard)
        .fuse(ob, rb, block)
        .parallel(block);

    const std::vector<Var> x_args = g.x_tiles.args(), w_args = g.weight_panels.args();
    g.x_tiles.compute_root().bound_extent(x_args[0], g.row_tile).unroll(x_args[0]).parallel(x_args[2]);
    g.weight_panels.compute_root()
        .bound_extent(w_args[0], g.output_tile)
        .vectorize(w_args[0], vec)
        .parallel(w_args[2]);

    // acc's region is rounded out to whole register tiles (the packed stages clamp past the end).
    g.acc.compute_at(g.y, block)
        .align_bounds(g.o, g.output_tile)
        .align_bounds(g.r, g.row_tile)
        .vectorize(g.o, vec);
    Var u("u"), panel("panel"), po("po"), pv("pv"), pvi("pvi"), tile("tile"), row("row");
    RVar ko("ko"), ki("ki");
    Func slice_sum = g.acc.update().split(g.k, ko, ki, blocks.k, guard).rfactor(ko, u);
    g.acc.update()
        .split(g.o, panel, po, g.output_tile, round_up)
        .split(po, pv, pvi, vec)
        .split(g.r, tile, row, g.row_tile, round_up)
        .reorder(pvi, pv, row, tile, panel, ko)
        .vectorize(pvi)
        .unroll(pv)
        .unroll(row);
    // Constant extents keep the register tile in registers.
    slice_sum.compute_at(g.acc, tile)
        .bound_extent(g.o, g.output_tile)
        .bound_extent(g.r, g.row_tile)
        .vectorize(g.o, vec)
        .unroll(g.r);
    slice_sum.update()
        .reorder(g.o, g.r, ki)
        .split(g.o, pv, pvi, vec)
        .vectorize(pvi)
        .unroll(pv)
        .unroll(g.r);
}

// A task owns 32 outputs for every row: an output's W row is read from memory once, then from L1
// for the other rows (with rows outermost, W was streamed again per row). Each dot product is
// split over `chains` vectors of lanes (rfactor), so that many FMA chains are in flight. One row
// keeps rows outermost: with them inside the outputs, a one-row call ran 10-20% slower.
void schedule_projection_gemv(Projection &g, const Target &t) {
    const int vec = t.natural_vector_size<float>();
    constexpr int chains = 4;
    Var oo("oo"), oi("oi"), lane("lane"), lo("lo"), li("li");
    RVar ko("ko"), ki("ki");
    g.y.split(g.o, oo, oi, 32, TailStrategy::GuardWithIf).parallel(oo);
    g.y.specialize(g.x.dim(1).extent() > 1).reorder(g.r, oi, oo);
    g.acc.compute_at(g.y, oi);
    g.acc.update().split(g.k, ko, ki, chains * vec, TailStrategy::GuardWithIf);
    Func lanes = g.acc.update().rfactor(ki, lane);
    lanes.compute_at(g.acc, g.r).vectorize(lane, vec);
    lanes.update().split(lane, lo, li, vec).reorder(li, lo, ko).vectorize(li).unroll(lo);
}

}  // namespace hattn::schedules::cpu
