#include "schedules/cpu/projection_tiled.h"

#include <optional>

namespace hattn::schedules::cpu {

using namespace Halide;

Var schedule_projection_blocks(Projection &g, int vec, ProjectionBlocks blocks) {
    if (g.output_tile % vec != 0 || blocks.rows % g.row_tile != 0 || blocks.outputs % g.output_tile != 0) {
        throw CompileError("projection: the blocks must be whole register tiles, and the tile whole vectors");
    }
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var ob("ob"), rb("rb"), oi("oi"), ri("ri"), block("block");
    g.y.tile(g.o, g.r, ob, rb, oi, ri, blocks.outputs, blocks.rows, guard)
        .vectorize(oi, vec, guard)
        .fuse(ob, rb, block)
        .parallel(block);
    return block;
}

void schedule_projection_sums(Projection &g, const Var &block, int vec, const RVar &step, int k_slice,
                              const std::optional<RVar> &pair) {
    const TailStrategy guard = TailStrategy::GuardWithIf, round_up = TailStrategy::RoundUp;
    // acc's region is rounded out to whole register tiles (the packed stages clamp past the end).
    g.acc.compute_at(g.y, block)
        .align_bounds(g.o, g.output_tile)
        .align_bounds(g.r, g.row_tile)
        .vectorize(g.o, vec);
    Var u("u"), panel("panel"), po("po"), pv("pv"), pvi("pvi"), tile("tile"), row("row");
    RVar ko("ko"), ki("ki");
    Func slice_sum = g.acc.update().split(step, ko, ki, k_slice, guard).rfactor(ko, u);
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
    Stage sums = slice_sum.update();
    sums.split(g.o, pv, pvi, vec);
    if (pair) {
        sums.reorder(*pair, pvi, pv, g.r, ki).atomic().vectorize(*pair);
    } else {
        sums.reorder(pvi, pv, g.r, ki);
    }
    sums.vectorize(pvi).unroll(pv).unroll(g.r);
}

// The GEMM's loop nest, outermost first: a thread's block of rows x outputs (acc, in memory);
// slices of k; panels of W; row tiles; k within the slice, where one register tile accumulates
// (slice_sum, unrolled over its rows and vectors) before it is added to acc. x and W are packed
// once per call, each tile's elements innermost (x_tiles, weight_panels), so the innermost loop
// reads one stream of W vectors and broadcasts x from one pointer.
void schedule_projection_blocked(Projection &g, const Target &t, ProjectionBlocks blocks) {
    const int vec = t.natural_vector_size<float>();
    const TailStrategy round_up = TailStrategy::RoundUp;
    const Var block = schedule_projection_blocks(g, vec, blocks);
    const std::vector<Var> x_args = g.x_tiles.args(), w_args = g.weight_panels.args();
    g.x_tiles.compute_root().bound_extent(x_args[0], g.row_tile).unroll(x_args[0]).parallel(x_args[2]);
    // Packing W transposes it. Read lane by lane down its columns, it took longer than the GEMM
    // itself at 64 rows. A block of vec outputs x vec inputs is staged instead: its rows
    // load as whole vectors, and it is small enough for registers, where LLVM turns the column
    // reads into shuffles. A panel's vec outputs walk all of k before the next vec (vec streams of
    // W at a time, not the panel's outputs, which ran slower). The inputs are rounded up to whole
    // blocks (weight_rows clamps). docs/perf/log.md, "x86 projection tiles and blocks".
    Var wko("wko"), wki("wki"), woo("woo"), woi("woi");
    g.weight_panels.compute_root()
        .bound_extent(w_args[0], g.output_tile)
        .split(w_args[1], wko, wki, vec, round_up)
        .split(w_args[0], woo, woi, vec)
        .reorder(woi, wki, wko, woo, w_args[2])
        .vectorize(woi)
        .unroll(wki)
        .parallel(w_args[2]);
    const std::vector<Var> row_args = g.weight_rows.args();
    g.weight_rows.compute_at(g.weight_panels, wko)
        .bound_extent(row_args[0], vec)
        .bound_extent(row_args[1], vec)
        .vectorize(row_args[0])
        .unroll(row_args[1]);

    schedule_projection_sums(g, block, vec, g.k.x, blocks.k, std::nullopt);
}

// A task owns 32 outputs for every row: an output's W row is read from memory once, then from L1
// for the other rows, and W is not packed (the GEMM's fixed cost a call), so the runtime takes this
// variant for calls of few rows (kernel_contract.h; docs/perf/log.md, "Projection gemv crossover").
// Within them a register tile of tile.outputs outputs x tile.rows rows (one row when the call has
// one) sums vectors of products along k, one accumulator each, so a step loads tile.outputs W
// vectors and tile.rows x vectors for their product of FMAs, and the tile's accumulators are that
// many independent chains. Each accumulator's lanes are then summed by a shuffle tree (a vector
// reduction), not lane by lane, whose scalar sums would dominate short rows.
void schedule_projection_gemv(Projection &g, const Target &t, GemvTile tile) {
    const TailStrategy guard = TailStrategy::GuardWithIf, round_up = TailStrategy::RoundUp;
    const Expr several_rows = g.x.dim(1).extent() > 1;
    Var oo("oo"), oi("oi"), ot("ot"), o_in("o_in"), ro("ro"), ri("ri"), lane("lane");
    RVar ko("ko"), ki("ki");
    g.y.split(g.o, oo, oi, 32, guard).split(oi, ot, o_in, tile.outputs, guard).parallel(oo);
    g.y.specialize(several_rows).reorder(o_in, g.r, ot, oo);
    g.acc.compute_at(g.y, ot);
    // bf16 pairs: a lane per word of a block (k is (pair, word, block)), each summing its pair.
    if (!g.bf16_pairs) g.acc.update().split(g.k, ko, ki, t.natural_vector_size<float>(), guard);
    const RVar lanes_of = g.bf16_pairs ? RVar(g.k.y) : ki;
    Func lanes = g.acc.update().rfactor(lanes_of, lane);
    g.acc.update().atomic().vectorize(lanes_of);  // the lanes' sum as a shuffle tree
    // The tile's rows: tile.rows of them where the call has several (the region rounded up, x's
    // reads clamped), else the one.
    g.acc.update().specialize(several_rows).split(g.r, ro, ri, tile.rows, round_up);
    g.acc.update().split(g.r, ro, ri, 1);
    lanes.compute_at(g.acc, ro).reorder_storage(lane, g.o, g.r).bound_extent(g.o, tile.outputs).vectorize(lane);
    if (g.bf16_pairs) {
        // A pair's two products summed into its lane: a VectorReduce, which is vdpbf16ps; x is
        // rounded to bf16 where a block is read (x_tiles inline), no 16-bit value stored alone.
        lanes.update().reorder(g.k.x, lane, g.o, g.r, g.k.z).atomic().vectorize(g.k.x).vectorize(lane)
            .unroll(g.o).unroll(g.r);
    } else {
        lanes.update().reorder(lane, g.o, g.r, ko).vectorize(lane).unroll(g.o).unroll(g.r);
    }
}

}  // namespace hattn::schedules::cpu
