// BitLinear's integer product (BitNet b1.58; spec/attention.md §2): y[r, o] = (sum_k xq[r, k] *
// Wq[o, k] - correction[r]) * row_scale[r], an exact int32 dot product of int8 activations and
// ternary weights, the weights packed four to a byte as codes Wq + 1 ∈ {0, 1, 2}.
//
// dot_form chooses the integer arithmetic, so that each target reaches its dot-product unit:
//   s8s8: codes unpacked to Wq ∈ {-1, 0, 1} (int8) times xq: vpmaddwd on AVX2/AVX-512, sdot on
//         AArch64 with arm_dot_prod. The correction is not used.
//   u8s8: the codes themselves (uint8) times xq, corrected by sum_k xq[r, k]: the u8 x s8 form
//         that AVX-512 VNNI's vpdpbusd takes.
//
// The sum runs over (p, s) with k = 4 p + s: packed byte p of a weight row holds the codes of
// inputs 4p .. 4p+3. A vector of consecutive bytes shifted by 2 s gives the codes of inputs
// 4p + s, which meet the activations regrouped the same way (xq_by_code, one pass per call)
// instead of being interleaved back into k order per weight byte. The integer sum is exact, so the
// order changes nothing.
// The reduction length must be a multiple of k_multiple (the runtime pads with zero activations
// and weight-0 codes): 64 packed bytes, one AVX-512 vector.
#pragma once

#include "Halide.h"
#include "kernel_contract.h"
#include "schedules/scheduled.h"

namespace hattn {

enum class DotForm { S8S8, U8S8 };

class BitLinear : public Halide::Generator<BitLinear> {
public:
    GeneratorParam<DotForm> dot_form{"dot_form", DotForm::S8S8, {{"s8s8", DotForm::S8S8}, {"u8s8", DotForm::U8S8}}};
    static constexpr int k_multiple = kernel_contract::bitlinear_k_multiple;

    Input<Buffer<int8_t>> xq{"xq", 2};               // (in, rows)
    Input<Buffer<uint8_t>> packed{"packed", 2};      // (in / 4, out): 2-bit codes, low bits first
    Input<Buffer<int32_t>> correction{"correction", 1};  // (rows)
    Input<Buffer<float>> row_scale{"row_scale", 1};  // (rows): 1 / (a_x * a_w)
    Output<Buffer<float>> y{"y", 2};                 // (out, rows)

    Halide::Var p{"p"}, s{"s"}, o{"o"}, r{"r"};
    Halide::RDom rk;            // (p, s): packed byte, and code within it
    Halide::Func code{"code"};  // (p, s, o): the weight operand of input 4p + s
    Halide::Func xq_by_code{"xq_by_code"};  // (p, s, r): xq of input 4p + s
    Halide::Func dot{"dot"};    // (o, r): int32

    void generate();
    void schedule();
};

}  // namespace hattn

HATTN_SCHEDULED(BitLinear)
