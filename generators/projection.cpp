#include "generators/projection.h"

#include "generators/common/estimates.h"
#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void Projection::generate() {
    Expr rows = x.dim(1).extent();
    Expr outs = weight.dim(1).extent();
    Expr ins = x.dim(0).extent();
    k = RDom(0, ins, "k");

    Var kv("kv");
    const Expr kv_clamped = clamp(kv, 0, ins - 1);
    x_rows(kv, r) = x(kv_clamped, clamp(r, 0, rows - 1));
    weight_t(o, kv) = weight(kv_clamped, clamp(o, 0, outs - 1));

    acc(o, r) = bias(clamp(o, 0, outs - 1));
    acc(o, r) += x_rows(k, r) * weight_t(o, k);
    y(o, r) = acc(o, r);
}

void Projection::schedule() {
    // Estimates serve the autoscheduler: 512 rows of a 2048 -> 2048 projection, or one row (a
    // decode step) for the gemv variant.
    const int rows = gemv ? 1 : 512;
    set_matrix_estimates(x, 2048, rows);
    set_matrix_estimates(weight, 2048, 2048);
    bias.set_estimates({{0, 2048}});
    y.set_estimates({{0, 2048}, {0, rows}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::Projection, projection)
