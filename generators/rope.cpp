#include "generators/rope.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void Rope::generate() {
    const Expr half = cos_table.dim(0).extent();
    // Clamped only to bound the table reads; the runtime checks that the table covers every position.
    const Expr position = clamp(start(b) + s, 0, cos_table.dim(1).extent() - 1);
    // Pair (i, i + half): the first half rotates by -sin, the second by +sin of the same angle.
    const Expr first = d < half;
    const Expr i = clamp(select(first, d, d - half), 0, max(half - 1, 0));
    const Expr partner = x(clamp(select(first, d + half, d - half), 0, x.dim(0).extent() - 1), h, s, b);
    const Expr c = cos_table(i, position), sn = sin_table(i, position);
    const Expr rotated = x(d, h, s, b) * c + select(first, -partner, partner) * sn;
    y(d, h, s, b) = select(d < 2 * half, rotated, x(d, h, s, b));
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
