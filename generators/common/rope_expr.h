// NeoX "rotate half" RoPE as an expression, shared by every generator that rotates heads.
#pragma once

#include <vector>

#include "Halide.h"

namespace hattn {

// The rotated value of element d of a head: dims d < 2 * half form the pairs (i, i + half), the
// rest pass through. `x(dd)` returns the head's element dd; cos_t/sin_t are (half, position)
// tables; `width` is the head's size (for clamping the partner index).
template <typename Element>
Halide::Expr rope_rotated(const Element &x, const Halide::Expr &d, const Halide::Expr &half,
                          const Halide::Expr &width, const Halide::Func &cos_t,
                          const Halide::Func &sin_t, const Halide::Expr &position) {
    using namespace Halide;
    const Expr first = d < half;
    const Expr i = clamp(select(first, d, d - half), 0, max(half - 1, 0));
    const Expr partner = x(clamp(select(first, d + half, d - half), 0, width - 1));
    const Expr rotated = x(d) * cos_t(i, position) + select(first, -partner, partner) * sin_t(i, position);
    return select(d < 2 * half, rotated, x(d));
}

}  // namespace hattn
