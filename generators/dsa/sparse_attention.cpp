#include "generators/dsa/sparse_attention.h"

#include <stdexcept>

#include "schedules/dispatch.h"

namespace hattn {

using namespace Halide;

void DsaSparseAttention::configure() {
    if (!shared_kv) return;
    rotary = add_input<Buffer<>>("rotary", buffer_type_of(rotary_type), 4);
    if (latent_type == StorageType::Int8) latent_scale = add_input<Buffer<float>>("latent_scale", 3);
}

void DsaSparseAttention::generate() {
    _halide_user_assert(shared_kv || (latent_type == StorageType::F32 && rotary_type == StorageType::F32))
        << "dsa_sparse_attention: storage types are the shared form's";
    _halide_user_assert(rotary_type != StorageType::Int8) << "dsa_sparse_attention: the rotary part is never int8";
    _halide_user_assert(!bf16_pairs || (shared_kv && latent_type == StorageType::BF16))
        << "dsa_sparse_attention: bf16_pairs needs the shared form and latent_type bf16";
    _halide_user_assert(keys.type() == buffer_type_of(latent_type) && values.type() == buffer_type_of(latent_type))
        << "latent_type " << int(StorageType(latent_type)) << " needs keys.type and values.type "
        << buffer_type_of(latent_type);
    const Expr H = q.dim(1).extent(), kv_heads = keys.dim(1).extent();
    const Expr kh = shared_kv ? Expr(0) : h * kv_heads / H;
    if (shared_kv) {  // one head: a call with more fails its bounds check rather than read head 0 only
        keys.dim(1).set_bounds(0, 1);
        values.dim(1).set_bounds(0, 1);
        rotary->dim(1).set_bounds(0, 1);
    }
    const Expr K = indices.dim(0).extent();
    const int step = key_step;
    if (step < 1) throw std::invalid_argument("dsa_sparse_attention: key_step must be at least 1");
    // Past K (the last step's padding) the last index is read again and the key left out.
    const auto index_of = [&](const Expr &key) { return indices(step > 1 ? min(key, K - 1) : key, s, b); };
    const Expr index = index_of(n);
    const Expr valid = step > 1 ? n < K && index >= 0 : index >= 0;
    const Expr t = clamp(index, 0, keys.dim(2).extent() - 1);
    // A latent value as float32: widened, and an int8 code times its group's scale.
    const auto latent = [&](const Expr &stored, const Expr &dim, const Expr &row) {
        const Expr value = schedules::widen_to_f32(stored, latent_type, get_target());
        return latent_scale ? value * (*latent_scale)(dim / latent_group, row, b) : value;
    };

    const Expr R = keys.dim(0).extent();
    logit(n, h, s, b) = 0.0f;
    if (latent_scale) {
        ri = RDom(0, latent_group, "ri");
        ri.where(group * latent_group + ri < R);
        // (Bounds inference ignores the predicate: the clamp keeps a short last group's loads in R.)
        const Expr dim = min(group * latent_group + ri, R - 1);
        group_logit(group, n, h, s, b) = 0.0f;
        group_logit(group, n, h, s, b) +=
            q(dim, h, s, b) * schedules::widen_to_f32(keys(dim, kh, t, b), latent_type, get_target());
        rg = RDom(0, (R + latent_group - 1) / latent_group, "rg");
        logit(n, h, s, b) += group_logit(rg, n, h, s, b) * (*latent_scale)(rg, t, b);
    } else if (bf16_pairs) {
        // Pairs multiply the keys' bf16 values as they are, and the queries' (bf16 values already).
        q_pairs(pair, h, d, s, b) = cast(BFloat(16), q(2 * d + pair, min(h, H - 1), s, b));
        rd = RDom(0, 2, 0, R / 2, "rd");
        const Expr key = reinterpret(BFloat(16), keys(2 * rd.y + rd.x, kh, t, b));
        logit(n, h, s, b) += cast<float>(q_pairs(rd.x, h, rd.y, s, b)) * cast<float>(key);
    } else {
        rd = RDom(0, R, "rd");
        logit(n, h, s, b) += q(rd, h, s, b) * latent(keys(rd, kh, t, b), rd, t);
    }
    if (shared_kv) {  // the keys' rotary dims follow the latent's R in the queries
        rr = RDom(0, rotary->dim(0).extent(), "rr");
        const Expr rotated = schedules::widen_to_f32((*rotary)(rr, 0, t, b), rotary_type, get_target());
        logit(n, h, s, b) += q(R + rr, h, s, b) * rotated;
    }
    const Expr l = select(valid, logit(n, h, s, b) * scale, masked_logit);

    rn = RDom(0, (K + step - 1) / step * step, "rn");
    row_max(h, s, b) = masked_logit;
    row_max(h, s, b) = max(row_max(h, s, b), substitute(n, rn.x, l));
    prob(n, h, s, b) = select(valid, exp(l - row_max(h, s, b)), 0.0f);
    row_sum(h, s, b) = 0.0f;
    row_sum(h, s, b) += prob(rn, h, s, b);
    const Expr t_r = clamp(index_of(rn), 0, keys.dim(2).extent() - 1);
    acc(d, h, s, b) = 0.0f;
    acc(d, h, s, b) += prob(rn, h, s, b) * latent(values(d, kh, t_r, b), d, t_r);
    // A query with no selected key (none visible) outputs zeros.
    out(d, h, s, b) = select(row_sum(h, s, b) > 0.0f, acc(d, h, s, b) / row_sum(h, s, b), 0.0f);
}

void DsaSparseAttention::schedule() {
    if (shared_kv) {
        // A decode step of GLM-5's absorbed form: 16 heads, latent rows of 512 + 64, 2048 of 4096
        // tokens selected.
        q.set_estimates({{0, 576}, {0, 16}, {0, 1}, {0, 1}});
        keys.set_estimates({{0, 512}, {0, 1}, {0, 4096}, {0, 1}});
        values.set_estimates({{0, 512}, {0, 1}, {0, 4096}, {0, 1}});
        rotary->set_estimates({{0, 64}, {0, 1}, {0, 4096}, {0, 1}});
        if (latent_scale) latent_scale->set_estimates({{0, 4}, {0, 4096}, {0, 1}});
        indices.set_estimates({{0, 2048}, {0, 1}, {0, 1}});
        out.set_estimates({{0, 512}, {0, 16}, {0, 1}, {0, 1}});
    } else {
        // The expanded form at 16 heads, a 512-token prefill, 64 selected keys per query.
        q.set_estimates({{0, 24}, {0, 16}, {0, 512}, {0, 1}});
        keys.set_estimates({{0, 24}, {0, 16}, {0, 512}, {0, 1}});
        values.set_estimates({{0, 16}, {0, 16}, {0, 512}, {0, 1}});
        indices.set_estimates({{0, 64}, {0, 512}, {0, 1}});
        out.set_estimates({{0, 16}, {0, 16}, {0, 512}, {0, 1}});
    }
    scale.set_estimate(0.2f);
    if (auto_schedule) return;
    schedules::apply(*this, get_target());
}

}  // namespace hattn

HALIDE_REGISTER_GENERATOR(hattn::DsaSparseAttention, dsa_sparse_attention)
