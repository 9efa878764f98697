#include "generators/cca/qk_latent.h"

#include "generators/common/rope_expr.h"
#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void CcaQkLatent::generate() {
    const Expr k0 = conv0_w.dim(0).extent(), k1 = conv1_w.dim(2).extent();
    const Expr dh = conv1_w.dim(1).extent();
    // Head counts come from the inputs: one key scale per KV head, P = (H + Hkv) * dh channels.
    const Expr Hkv = key_scale.dim(0).extent(), H = conv0_w.dim(1).extent() / dh - Hkv, g = H / Hkv;
    const Expr Lq = H * dh, pad = (k0 - 1) + (k1 - 1);

    RDom j0(0, k0, "j0");
    conv0(c, e, b) = conv0_b(c);
    conv0(c, e, b) += conv0_w(j0, c) * qk(c, e - (k0 - 1) + j0, b);

    // A schedule may compute whole register tiles of conv1 past a group's last channel (those
    // values are never used): the bias's index is clamped, and the weights carry
    // kernel_contract::cca_grouped_padding_channels channels past the last, so that the weights'
    // vector loads need no clamp.
    const Expr P = conv0_w.dim(1).extent();
    Var grp("grp");
    conv1_w_t(d, grp, i, j) = conv1_w(grp * dh + d, i, j);
    r1 = RDom(0, k1, 0, dh, "r1");
    conv1(d, grp, s, b) = conv1_b(min(grp * dh + d, P - 1));
    conv1(d, grp, s, b) += conv1_w_t(d, grp, r1.y, r1.x) * conv0(grp * dh + r1.y, s + (k0 - 1) + r1.x, b);

    // The raw rows of the new tokens, for q-k-mean.
    const auto pre = [&](const Expr &channel) { return qk(channel, pad + s, b); };
    Func mean_q("mean_q");
    mean_q(d, h, s, b) = (pre(h * dh + d) + pre(Lq + (h / g) * dh + d)) * 0.5f;
    RDom rg(0, g, "rg");
    mean_k(d, h, s, b) = 0.0f;
    mean_k(d, h, s, b) += mean_q(d, h * g + rg, s, b);
    const Expr use_mean = select(qk_mean, 1.0f, 0.0f);
    q_mixed(d, h, s, b) = conv1(d, h, s, b) + use_mean * mean_q(d, h, s, b);
    k_mixed(d, h, s, b) = conv1(d, H + h, s, b) + use_mean * mean_k(d, h, s, b) / cast<float>(g);

    RDom rd(0, dh, "rd");
    const Expr root_dh = sqrt(cast<float>(dh));
    q_norm(h, s, b) = root_dh / max(sqrt(sum(q_mixed(rd, h, s, b) * q_mixed(rd, h, s, b))), norm_eps);
    k_norm(h, s, b) = root_dh / max(sqrt(sum(k_mixed(rd, h, s, b) * k_mixed(rd, h, s, b))), norm_eps) *
                      key_scale(h);

    // Clamped only to bound the table reads; the runtime checks that the table covers every position.
    const Expr position = clamp(start(b) + s, 0, cos_table.dim(1).extent() - 1);
    const Expr half = cos_table.dim(0).extent();
    const auto q_elem = [&](const Expr &dd) { return q_mixed(dd, h, s, b) * q_norm(h, s, b); };
    const auto k_elem = [&](const Expr &dd) { return k_mixed(dd, h, s, b) * k_norm(h, s, b); };
    q_out(d, h, s, b) = rope_rotated(q_elem, d, half, dh, cos_table, sin_table, position);
    k_out(d, h, s, b) = rope_rotated(k_elem, d, half, dh, cos_table, sin_table, position);
}

void CcaQkLatent::schedule() {
    // CCGQA at E=2048, H=16 (Lq = 1024, Lkv = 256, dh = 64), 2048 tokens, default kernels.
    qk.set_estimates({{0, 1280}, {0, 2053}, {0, 1}});
    conv0_w.set_estimates({{0, 4}, {0, 1280}});
    conv0_b.set_estimates({{0, 1280}});
    conv1_w.set_estimates({{0, 1280}, {0, 64}, {0, 3}});
    conv1_b.set_estimates({{0, 1280}});
    key_scale.set_estimates({{0, 4}});
    cos_table.set_estimates({{0, 32}, {0, 2048}});
    sin_table.set_estimates({{0, 32}, {0, 2048}});
    start.set_estimates({{0, 1}});
    qk_mean.set_estimate(true);
    norm_eps.set_estimate(1e-6f);
    q_out.set_estimates({{0, 64}, {0, 16}, {0, 2048}, {0, 1}});
    k_out.set_estimates({{0, 64}, {0, 4}, {0, 2048}, {0, 1}});
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::CcaQkLatent, cca_qk_latent)
