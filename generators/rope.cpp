#include "generators/rope.h"

#include "generators/common/rope_expr.h"
#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void Rope::generate() {
    // Clamped only to bound the table reads; the runtime checks that the table covers every position.
    const Expr position = clamp(start(b) + s, 0, cos_table.dim(1).extent() - 1);
    const auto element = [&](const Expr &dd) { return x(dd, h, s, b); };
    y(d, h, s, b) = rope_rotated(element, d, cos_table.dim(0).extent(), x.dim(0).extent(), cos_table,
                                 sin_table, position);
}

void Rope::schedule() {
    x.set_estimates({{0, 128}, {0, 32}, {0, 2048}, {0, 1}});
    cos_table.set_estimates({{0, 64}, {0, 2048}});
    sin_table.set_estimates({{0, 64}, {0, 2048}});
    start.set_estimates({{0, 1}});
    y.set_estimates({{0, 128}, {0, 32}, {0, 2048}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::Rope, rope)
