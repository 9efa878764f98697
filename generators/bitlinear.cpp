#include "generators/bitlinear.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void BitLinear::generate() {
    const Expr bits = (packed(p, o) >> cast<uint8_t>(2 * s)) & cast<uint8_t>(3);
    // The operand stays 8-bit (int8 weights or uint8 codes); widened only inside the product, the
    // sum of 8-bit products into i32 is the shape both dot-product units match.
    code(p, s, o) = dot_form == DotForm::S8S8 ? Expr(cast<int8_t>(bits) - 1) : Expr(bits);
    xq_by_code(p, s, r) = xq(4 * p + s, r);
    // Stated in whole vectors of packed bytes, so schedules see that the byte count divides.
    rk = RDom(0, (xq.dim(0).extent() / k_multiple) * (k_multiple / 4), 0, 4, "rk");
    dot(o, r) = 0;
    dot(o, r) += cast<int32_t>(cast<int16_t>(code(rk.x, rk.y, o)) * cast<int16_t>(xq_by_code(rk.x, rk.y, r)));
    // The s8 x s8 form needs no correction; the input stays so both forms share one signature.
    const Expr corrected = dot_form == DotForm::U8S8 ? dot(o, r) - correction(r) : dot(o, r);
    y(o, r) = cast<float>(corrected) * row_scale(r);
    xq.dim(0).set_bounds(0, (xq.dim(0).extent() / k_multiple) * k_multiple);
}

void BitLinear::schedule() {
    xq.set_estimates({{0, 2048}, {0, 1}});
    packed.set_estimates({{0, 512}, {0, 2048}});
    correction.set_estimates({{0, 1}});
    row_scale.set_estimates({{0, 1}});
    y.set_estimates({{0, 2048}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::BitLinear, bitlinear)
