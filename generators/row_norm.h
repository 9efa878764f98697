// Row normalisations (spec/attention.md §4): RMSNorm, y = w * x / sqrt(mean(x^2) + eps), or with
// `layer_norm` LayerNorm, y = (x - mean) / sqrt(var + eps) * w + b; over each row of x [rows, n]
// (a view: rows may be strided, e.g. the first R of each wider row). The weights (and biases) are
// k rows that x's rows take in turn, row r the weights' r % k: one row for all, or a head's own
// weights where x's rows are (token, head) (Cohere's per-head QK LayerNorm).
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class RowNorm : public Halide::Generator<RowNorm> {
public:
    GeneratorParam<bool> layer_norm{"layer_norm", false};

    Input<Buffer<float>> x{"x", 2};          // (n, rows)
    Input<Buffer<float>> weight{"weight", 2};  // (n, k)
    Input<Buffer<float>> bias{"bias", 2};      // (n, k); LayerNorm only (RMSNorm never reads it)
    Input<float> eps{"eps"};
    Output<Buffer<float>> y{"y", 2};         // (n, rows)

    Halide::Var i{"i"}, r{"r"};
    Halide::RDom ri;
    Halide::Func mean{"mean"}, spread{"spread"};  // per row: the mean, and sum of squares (centred for LayerNorm)

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(RowNorm)
