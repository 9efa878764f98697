#include "hattn/kernels/dsa.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

void dsa_index_scores(const ConstTensorView &iq, const ConstTensorView &ik, const ConstTensorView &head_w,
                      const std::vector<int32_t> &kv_len, float scale, const TensorView &scores) {
    require(iq.rank() == 4 && ik.rank() == 3 && head_w.rank() == 3 && scores.rank() == 3,
            "dsa index scores: iq [B, S, IH, ID], ik [B, capacity, ID], head_w [B, S, IH], scores [B, S, capacity]");
    const int64_t B = iq.dim(0), S = iq.dim(1), IH = iq.dim(2), ID = iq.dim(3), cap = ik.dim(1);
    require(ik.shape == Shape({B, cap, ID}) && head_w.shape == Shape({B, S, IH}) &&
                scores.shape == Shape({B, S, cap}) && static_cast<int64_t>(kv_len.size()) == B,
            [&] {
                return "dsa index scores: shapes " + shape_to_string(iq.shape) + ", " + shape_to_string(ik.shape) +
                       ", " + shape_to_string(head_w.shape) + ", " + shape_to_string(scores.shape) + " do not fit";
            });
    for (int32_t len : kv_len) require(len >= S && len <= cap, "dsa index scores: KV length outside the cache");
    require(std::isfinite(scale),
            [&] { return "dsa index scores: scale must be finite, got " + std::to_string(scale); });
    if (scores.size() == 0) return;
    // No query sees a key past the longest sequence: the kernel scores the keys up to there (a
    // decode step in a large cache, or a prefill block, costs what its queries see), and the rest
    // of every row is zeroed here.
    const int64_t visible = *std::max_element(kv_len.begin(), kv_len.end());
    if (visible < cap) copy_into(Tensor({B, S, cap - visible}).view(), scores.crop(2, visible, cap));
    const ConstTensorView ik_seen = ik.crop(1, 0, visible);
    const TensorView seen = scores.crop(2, 0, visible);
    auto qb = detail::halide_buffer(iq), kb = detail::halide_buffer(ik_seen), wb = detail::halide_buffer(head_w), sb = detail::halide_buffer(seen);
    Halide::Runtime::Buffer<int32_t> lb(const_cast<int32_t *>(kv_len.data()), static_cast<int>(B));
    detail::run_kernel<detail::kernels::dsa_index_scores>(qb.raw_buffer(), kb.raw_buffer(),
                        wb.raw_buffer(), lb.raw_buffer(), scale, sb.raw_buffer());
}

void dsa_sparse_attention(const ConstTensorView &q, const ConstTensorView &keys, const ConstTensorView &values,
                          const std::vector<int32_t> &indices, int64_t k, float scale, const TensorView &out) {
    require(q.rank() == 4 && keys.rank() == 4 && values.rank() == 4 && out.rank() == 4,
            "dsa sparse attention: q, keys, values and out must be rank 4");
    const int64_t B = q.dim(0), S = q.dim(1), H = q.dim(2), Dk = q.dim(3);
    const int64_t cap = keys.dim(1), Hk = keys.dim(2), Dv = values.dim(3);
    require(keys.dim(0) == B && keys.dim(3) == Dk && values.shape == Shape({B, cap, Hk, Dv}) && Hk > 0 && H % Hk == 0 &&
                out.shape == Shape({B, S, H, Dv}),
            [&] {
                return "dsa sparse attention: q " + shape_to_string(q.shape) + ", keys " + shape_to_string(keys.shape) +
                       ", values " + shape_to_string(values.shape) + ", out " + shape_to_string(out.shape) +
                       " do not fit";
            });
    int64_t index_count = 0;  // B * S * k, which a huge k would overflow
    require(
        k > 0 && !__builtin_mul_overflow(B * S, k, &index_count) && static_cast<int64_t>(indices.size()) == index_count,
        "dsa sparse attention: indices must be [B, S, K]");
    require(std::isfinite(scale),
            [&] { return "dsa sparse attention: scale must be finite, got " + std::to_string(scale); });
    for (int32_t t : indices) {
        require(t >= -1 && t < cap, [&] {
            return "dsa sparse attention: key index " + std::to_string(t) + " outside the cache of " +
                   std::to_string(cap) + " tokens";
        });
    }
    if (out.size() == 0) return;
    auto qb = detail::halide_buffer(q), kb = detail::halide_buffer(keys), vb = detail::halide_buffer(values), ob = detail::halide_buffer(out);
    Halide::Runtime::Buffer<int32_t> ib(const_cast<int32_t *>(indices.data()), static_cast<int>(k),
                                        static_cast<int>(S), static_cast<int>(B));
    // Keys of one head (the absorbed form's latent rows) have a variant that reads each row once
    // for many heads.
    if (Hk == 1) {
        detail::run_kernel<detail::kernels::dsa_sparse_attention_shared>(qb.raw_buffer(), kb.raw_buffer(), vb.raw_buffer(),
                                                                         ib.raw_buffer(), scale, ob.raw_buffer());
    } else {
        detail::run_kernel<detail::kernels::dsa_sparse_attention>(qb.raw_buffer(), kb.raw_buffer(), vb.raw_buffer(),
                                                                  ib.raw_buffer(), scale, ob.raw_buffer());
    }
}

}  // namespace hattn
