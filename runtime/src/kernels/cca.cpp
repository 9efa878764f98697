#include "hattn/kernels/cca.h"

#include <cmath>
#include <string>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_contract.h"
#include "kernel_variants.h"

namespace hattn {

Tensor cca_grouped_by_output(const Tensor &w1) {
    require(w1.rank() == 3,
            [&] { return "cca: the grouped conv's weight " + shape_to_string(w1.shape()) + " must be [P, dh, k1]"; });
    const int64_t P = w1.dim(0), dh = w1.dim(1), k1 = w1.dim(2), width = P + cca_grouped_padding();
    Tensor by_output({k1, dh, width});
    for (int64_t o = 0; o < P; o++) {
        for (int64_t i = 0; i < dh; i++) {
            for (int64_t j = 0; j < k1; j++) by_output.data()[(j * dh + i) * width + o] = w1.data()[(o * dh + i) * k1 + j];
        }
    }
    return by_output;
}

int64_t cca_grouped_padding() { return kernel_contract::cca_grouped_padding_channels; }

void cca_qk_latent(const ConstTensorView &qk, const CcaConvWeights &conv, const Tensor &key_scale,
                   const RopeTable &rope, const std::vector<int32_t> &start, bool qk_mean,
                   float norm_eps, const TensorView &q, const TensorView &k) {
    require(q.rank() == 4 && k.rank() == 4 && qk.rank() == 3, "cca: q, k must be [B, S, heads, dh], qk [B, rows, P]");
    const int64_t B = q.dim(0), S = q.dim(1), H = q.dim(2), dh = q.dim(3), Hkv = k.dim(2);
    const int64_t P = (H + Hkv) * dh;
    const int64_t k0 = conv.w0.dim(2), k1 = conv.w1_by_output.dim(0);
    require(k.shape == Shape({B, S, Hkv, dh}),
            [&] { return "cca: k " + shape_to_string(k.shape) + " does not match q " + shape_to_string(q.shape); });
    // The weights first: k1 comes from w1_by_output, so a w1 in its stored layout would misname the qk rows.
    require(conv.w0.shape() == Shape({P, 1, k0}) && conv.b0.shape() == Shape({P}) &&
                conv.w1_by_output.shape() == Shape({k1, dh, P + cca_grouped_padding()}) && conv.b1.shape() == Shape({P}),
            [&] {
                return "cca: convolution weights do not match P = " + std::to_string(P) + ", dh = " +
                       std::to_string(dh) + " (w1_by_output is cca_grouped_by_output(w1): [k1, dh, P + " +
                       std::to_string(cca_grouped_padding()) + "])";
            });
    require(qk.shape == Shape({B, (k0 - 1) + (k1 - 1) + S, P}), [&] {
        return "cca: qk " + shape_to_string(qk.shape) +
               " must be [B, pad + S, P] = " + shape_to_string({B, (k0 - 1) + (k1 - 1) + S, P});
    });
    require(k0 >= 1 && k1 >= 1, [&] {
        return "cca: convolution kernels must be at least 1 wide, got " + std::to_string(k0) + " and " +
               std::to_string(k1);
    });
    // Each KV head serves H / Hkv query heads.
    require(Hkv > 0 && H % Hkv == 0, [&] {
        return "cca: " + std::to_string(H) + " query heads cannot share " + std::to_string(Hkv) + " KV heads";
    });
    require(key_scale.shape() == Shape({Hkv}), "cca: one key scale per KV head");
    require(std::isfinite(norm_eps) && norm_eps > 0,
            [&] { return "cca: norm_eps must be positive and finite, got " + std::to_string(norm_eps); });
    const std::vector<int32_t> rows = rope.rows_for(start, B, S, dh, "cca");
    if (q.size() == 0) return;

    auto qk_b = detail::halide_buffer(qk);
    auto w0 = detail::halide_buffer(ConstTensorView(conv.w0.data(), {P, k0}));
    auto b0 = detail::halide_buffer(conv.b0.view()), b1 = detail::halide_buffer(conv.b1.view());
    auto w1 = detail::halide_buffer(conv.w1_by_output.view());
    auto scale = detail::halide_buffer(key_scale.view());
    auto cos_b = detail::halide_buffer(rope.cos()), sin_b = detail::halide_buffer(rope.sin());
    Halide::Runtime::Buffer<int32_t> start_b(const_cast<int32_t *>(rows.data()), static_cast<int>(B));
    auto qb = detail::halide_buffer(q), kb = detail::halide_buffer(k);
    detail::run_kernel<detail::kernels::cca_qk_latent>(qk_b.raw_buffer(), w0.raw_buffer(),
                        b0.raw_buffer(), w1.raw_buffer(), b1.raw_buffer(), scale.raw_buffer(),
                        cos_b.raw_buffer(), sin_b.raw_buffer(), start_b.raw_buffer(), qk_mean, norm_eps,
                        qb.raw_buffer(), kb.raw_buffer());
}

}  // namespace hattn
