// Dense projection y = x W^T + b, optionally clamped: the linear layer every attention variant
// starts and ends with.
//
// Shapes in PyTorch order: x [rows, in], W [out, in] exactly as safetensors stores it, b [out],
// y [rows, out]; rows is batch x sequence flattened. Halide sees them reversed: x(k, r), weight(k, o).
#pragma once

#include "Halide.h"
#include "generators/common/storage_type.h"
#include "kernel_contract.h"
#include "schedules/scheduled.h"

namespace hattn {

class Projection : public Halide::Generator<Projection> {
public:
    // Schedule for a few rows (decode: one token per sequence). There the cost is reading W once,
    // so schedules read it as stored instead of packing panels; the runtime picks this variant for
    // calls with at most gemv_max_rows_cpu rows on a CPU (where each W row, read once, meets
    // every row from L1) and gemv_max_rows_gpu on a GPU (whose schedule keeps that many rows'
    // sums in registers).
    GeneratorParam<bool> gemv{"gemv", false};
    static constexpr int gemv_max_rows_cpu = kernel_contract::projection_gemv_max_rows_cpu,
                         gemv_max_rows_gpu = kernel_contract::projection_gemv_max_rows_gpu;

    // The weights' storage type (f32, bf16, f16), widened to float32 as they are read (packed, or
    // streamed by the gemv variant); the table declares weight.type to match (storage_type.h).
    GeneratorParam<StorageType> weight_type{"weight_type", StorageType::F32, storage_type_names};
    // bf16 weights multiplied in bf16 pairs (the form of AVX512-BF16's vdpbf16ps): W as uint32
    // words, each two bf16 weights of consecutive inputs (weight.type=uint32, [out, in / 2]), and x
    // rounded to bf16 for the products (spec/attention.md section 5: a bf16 layer's x is bf16
    // already). k is then an RDom (pair, word) and the packed stages have the pair innermost. The
    // gemv reads W's bf16 values as stored (weight.type=uint16), for an `in` that is a multiple of
    // 32: k is (pair, word, block of 16 words), and x_tiles(0, k, row) x in bf16.
    GeneratorParam<bool> bf16_pairs{"bf16_pairs", false};

    Input<Buffer<float>> x{"x", 2};
    Input<Buffer<>> weight{"weight", 2};
    Input<Buffer<float>> bias{"bias", 1};
    // Above 0, y is clamped to [-clip, clip] (OLMo 1's clip_qkv); 0: not clamped.
    Input<float> clip{"clip"};
    Output<Buffer<float>> y{"y", 2};

    // Named stages that schedules place and lay out.
    Halide::Var o{"o"}, r{"r"};
    Halide::RDom k;
    // x and W cut into the tiles of the schedule family's register tile (row_tile rows of x,
    // output_tile outputs of W), with every index clamped (in the gemv variant every index but
    // k), so a schedule may compute whole register tiles past the last row or output and stage
    // whole slices of k past its end. A CPU schedule packs both with the tile innermost: a
    // register tile's broadcasts of x are then one pointer plus constant offsets (read in place,
    // x's clamped row addresses cost more instructions than the FMAs they feed), and its W
    // vectors one contiguous stream per panel.
    // In bf16 pairs: x_tiles (pair, row in tile, word, tile), weight_rows (word, output) and
    // weight_panels (pair, output in panel, word, panel), all bf16 but weight_rows.
    Halide::Func x_tiles{"x_tiles"};              // (row in tile, k, tile)
    Halide::Func weight_rows{"weight_rows"};      // (k, output): W as stored, its indices clamped
    Halide::Func weight_panels{"weight_panels"};  // (output in panel, k, panel), read from weight_rows
    // The running sum per output, initialised with the bias.
    Halide::Func acc{"acc"};
    // Set by generate() from the schedule family (schedules::projection_tile); 1 x 1 in the gemv
    // variant, whose few rows are read in place.
    int row_tile = 1, output_tile = 1;

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(Projection)
