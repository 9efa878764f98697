// Dense projection y = x W^T + b: the linear layer every attention variant starts and ends with.
//
// Shapes in PyTorch order: x [rows, in], W [out, in] exactly as safetensors stores it, b [out],
// y [rows, out]; rows is batch x sequence flattened. Halide sees them reversed: x(k, r), weight(k, o).
#pragma once

#include "Halide.h"

namespace hattn {

class Projection : public Halide::Generator<Projection> {
public:
    // Schedule for a few rows (decode: one token per sequence). There the cost is reading W once,
    // so schedules read it as stored instead of packing panels; the runtime picks this variant for
    // calls with at most `gemv_max_rows` rows.
    GeneratorParam<bool> gemv{"gemv", false};
    static constexpr int gemv_max_rows = 4;

    Input<Buffer<float>> x{"x", 2};
    Input<Buffer<float>> weight{"weight", 2};
    Input<Buffer<float>> bias{"bias", 1};
    Output<Buffer<float>> y{"y", 2};

    // Named stages that schedules place and lay out.
    Halide::Var o{"o"}, r{"r"};
    Halide::RDom k;
    // x with the row and input indices clamped, so a schedule may compute whole register tiles
    // past the last row and stage whole slices of k past its end.
    Halide::Func x_rows{"x_rows"};
    // W transposed to (o, k) with o and k clamped: the packed panel a schedule stages so that the
    // inner product vectorises over outputs with contiguous loads.
    Halide::Func weight_t{"weight_t"};
    // The running sum per output, initialised with the bias.
    Halide::Func acc{"acc"};

    void generate();
    void schedule();
};

}  // namespace hattn
