#include "generators/rope.h"

#include "generators/common/rope_expr.h"
#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void Rope::generate() {
    // Clamped only to bound the table reads; the runtime checks that the table covers every position.
    const Expr position = clamp(start(b) + s, 0, cos_table.dim(1).extent() - 1);
    const Expr half = cos_table.dim(0).extent();
    // De-interleaving reads element 2i for the first half and 2(i - half) + 1 for the second.
    // (Clamped so that bounds inference, which cannot see which branch applies, stays in the head.)
    const auto source = [&](const Expr &dd) {
        if (!interleaved) return dd;
        const Expr from = select(dd < half, 2 * dd, select(dd < 2 * half, 2 * (dd - half) + 1, dd));
        return clamp(from, 0, x.dim(0).extent() - 1);
    };
    const auto element = [&](const Expr &dd) { return x(source(dd), h, s, b); };
    y(d, h, s, b) = rope_rotated(element, d, half, x.dim(0).extent(), cos_table, sin_table, position);
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
