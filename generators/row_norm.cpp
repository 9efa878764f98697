#include "generators/row_norm.h"

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void RowNorm::generate() {
    const Expr n = cast<float>(x.dim(0).extent());
    ri = RDom(0, x.dim(0).extent(), "ri");
    mean(r) = 0.0f;
    if (layer_norm) mean(r) += x(ri, r);
    const Expr centre = layer_norm ? mean(r) / n : Expr(0.0f);
    spread(r) = 0.0f;
    spread(r) += (x(ri, r) - centre) * (x(ri, r) - centre);
    const Expr inv = 1.0f / sqrt(spread(r) / n + eps);
    const Expr w = weight(i, r % weight.dim(1).extent()), b = bias(i, r % bias.dim(1).extent());
    if (layer_norm) {
        y(i, r) = (x(i, r) - centre) * inv * w + b;
    } else {
        y(i, r) = w * (x(i, r) * inv);
    }
}

void RowNorm::schedule() {
    x.set_estimates({{0, 2048}, {0, 512}});
    weight.set_estimates({{0, 2048}, {0, 1}});
    bias.set_estimates({{0, 2048}, {0, 1}});
    eps.set_estimate(1e-6f);
    y.set_estimates({{0, 2048}, {0, 512}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::RowNorm, row_norm)
