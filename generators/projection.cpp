#include "generators/projection.h"

#include "generators/common/estimates.h"
#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void Projection::generate() {
    _halide_user_assert(bf16_pairs || weight.type() == buffer_type_of(weight_type))
        << "weight_type " << int(StorageType(weight_type)) << " needs weight.type " << buffer_type_of(weight_type);
    _halide_user_assert(!bf16_pairs ||
                        (weight_type == StorageType::BF16 && weight.type() == (gemv ? UInt(16) : UInt(32))))
        << "bf16_pairs needs weight_type bf16 and weight.type uint32 (gemv: uint16)";
    if (!gemv) {
        const schedules::ProjectionTile tile = schedules::projection_tile(get_target(), bf16_pairs);
        row_tile = tile.rows;
        output_tile = tile.outputs;
    }
    Expr rows = x.dim(1).extent();
    Expr outs = weight.dim(1).extent();
    Expr ins = x.dim(0).extent();

    Var kv("kv"), row_in_tile("row_in_tile"), tile("tile"), out_in_panel("out_in_panel"), panel("panel");
    if (bf16_pairs && gemv) {
        // W's bf16 values as stored; `in` a multiple of the block (the runtime checks), so k runs
        // over (pair, word, block) with no tail: a block's weights are one vdpbf16ps operand.
        constexpr int block = kernel_contract::projection_gemv_pairs_block;
        k = RDom(0, 2, 0, block / 2, 0, ins / block, "k");
        const Expr kk = block * k.z + 2 * k.y + k.x;
        x_tiles(row_in_tile, kv, tile) = cast(BFloat(16), x(kv, clamp(tile * row_tile + row_in_tile, 0, rows - 1)));
        weight_rows(kv, o) = reinterpret(BFloat(16), weight(kv, clamp(o, 0, outs - 1)));
        acc(o, r) = bias(clamp(o, 0, outs - 1));
        acc(o, r) += cast<float>(x_tiles(0, kk, r)) * cast<float>(weight_rows(kk, o));
        y(o, r) = select(clip > 0.0f, clamp(acc(o, r), -clip, clip), acc(o, r));
        return;
    }
    if (bf16_pairs) {
        // The runtime passes W's words [out, in / 2] for an even `in`.
        Var pair("pair");
        Expr words = weight.dim(0).extent();
        k = RDom(0, 2, 0, words, "k");
        x_tiles(pair, row_in_tile, kv, tile) =
            cast(BFloat(16), x(clamp(2 * kv + pair, 0, ins - 1), clamp(tile * row_tile + row_in_tile, 0, rows - 1)));
        weight_rows(kv, o) = weight(clamp(kv, 0, words - 1), clamp(o, 0, outs - 1));
        weight_panels(pair, out_in_panel, kv, panel) = reinterpret(
            BFloat(16), cast<uint16_t>(weight_rows(kv, panel * output_tile + out_in_panel) >> cast<uint32_t>(16 * pair)));
        acc(o, r) = bias(clamp(o, 0, outs - 1));
        acc(o, r) += cast<float>(x_tiles(k.x, r % row_tile, k.y, r / row_tile)) *
                     cast<float>(weight_panels(k.x, o % output_tile, k.y, o / output_tile));
        y(o, r) = select(clip > 0.0f, clamp(acc(o, r), -clip, clip), acc(o, r));
        return;
    }
    k = RDom(0, ins, "k");
    // The gemv variant reads k in place, guarded, so only its rows and outputs are clamped (a
    // clamped k makes its vector loads gathers).
    const Expr kv_clamped = gemv ? Expr(kv) : clamp(kv, 0, ins - 1);
    x_tiles(row_in_tile, kv, tile) = x(kv_clamped, clamp(tile * row_tile + row_in_tile, 0, rows - 1));
    weight_rows(kv, o) = schedules::widen_to_f32(weight(kv_clamped, clamp(o, 0, outs - 1)), weight_type, get_target());
    weight_panels(out_in_panel, kv, panel) = weight_rows(kv, panel * output_tile + out_in_panel);

    acc(o, r) = bias(clamp(o, 0, outs - 1));
    acc(o, r) += x_tiles(r % row_tile, k, r / row_tile) * weight_panels(o % output_tile, k, o / output_tile);
    y(o, r) = select(clip > 0.0f, clamp(acc(o, r), -clip, clip), acc(o, r));
}

void Projection::schedule() {
    // Estimates serve the autoscheduler: 512 rows of a 2048 -> 2048 projection, or one row (a
    // decode step) for the gemv variant.
    const int rows = gemv ? 1 : 512;
    set_matrix_estimates(x, 2048, rows);
    set_matrix_estimates(weight, 2048, 2048);
    bias.set_estimates({{0, 2048}});
    clip.set_estimate(0.0f);
    y.set_estimates({{0, 2048}, {0, rows}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::Projection, projection)
