#include "generators/bitlinear_quantize.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void BitLinearQuantize::generate() {
    const Expr in = x.dim(0).extent();
    rk = RDom(0, in, "rk");
    peak(r) = 0.0f;
    peak(r) = max(peak(r), abs(x(rk, r)));
    const Expr a_x = 127.0f / max(peak(r), 1e-5f);
    // round() is round-half-to-even, as std::nearbyint in the default rounding mode.
    q(k, r) = select(k < in, cast<int8_t>(clamp(round(x(min(k, in - 1), r) * a_x), -128.0f, 127.0f)),
                     cast<int8_t>(0));
    xq(k, r) = q(k, r);
    sum(r) = 0;
    sum(r) += cast<int32_t>(q(rk, r));
    xq_sum(r) = sum(r);
    row_scale(r) = 1.0f / (a_x * weight_scale);
}

void BitLinearQuantize::schedule() {
    x.set_estimates({{0, 2048}, {0, 1}});
    weight_scale.set_estimate(1.0f);
    xq.set_estimates({{0, 2048}, {0, 1}});
    xq_sum.set_estimates({{0, 1}});
    row_scale.set_estimates({{0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::BitLinearQuantize, bitlinear_quantize)
