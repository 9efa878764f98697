// BitLinear's activation quantisation (BitNet b1.58; spec/attention.md §2), per row r of x:
//     a_x = 127 / max(max_k |x[r, k]|, 1e-5),  xq[r, k] = clamp(round_half_even(x[r, k] a_x), -128, 127)
// with xq zero past `in` up to the padded length the product kernel (generators/bitlinear.h)
// reduces over, the row's sum of xq (that kernel's u8 x s8 correction) and its output scale
// 1 / (a_x a_w). A kernel of its own so that on a GPU the activations never visit the host.
#pragma once

#include "Halide.h"
#include "schedules/scheduled.h"

namespace hattn {

class BitLinearQuantize : public Halide::Generator<BitLinearQuantize> {
public:
    Input<Buffer<float>> x{"x", 2};                      // (in, rows)
    Input<float> weight_scale{"weight_scale"};           // a_w
    Output<Buffer<int8_t>> xq{"xq", 2};                  // (in_padded, rows)
    Output<Buffer<int32_t>> xq_sum{"xq_sum", 1};         // (rows)
    Output<Buffer<float>> row_scale{"row_scale", 1};     // (rows)

    Halide::Var k{"k"}, r{"r"};
    Halide::RDom rk;
    Halide::Func peak{"peak"};     // (r): max_k |x|
    Halide::Func q{"q"};           // (k, r): xq before it is stored
    Halide::Func sum{"sum"};       // (r)

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(BitLinearQuantize)
