#include "generators/strided_copy.h"

#include "schedules/dispatch.h"

namespace hattn {

void StridedCopy::generate() { out(x, y, z, w) = in(x, y, z, w); }

void StridedCopy::schedule() {
    // DSA's expanded keys without their rotary part: [2048 tokens x 16 heads] rows of 128.
    in.set_estimates({{0, 128}, {0, 16}, {0, 2048}, {0, 1}});
    out.set_estimates({{0, 128}, {0, 16}, {0, 2048}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::StridedCopy, strided_copy)
