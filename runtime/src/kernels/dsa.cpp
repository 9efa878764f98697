#include "hattn/kernels/dsa.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_contract.h"
#include "kernel_variants.h"

namespace hattn {

namespace {

namespace k = detail::kernels;

// Runs the n-th kernel of the tuple Kernels with `args`.
template <typename Kernels, size_t... I, typename... Args>
void run_nth(size_t n, std::index_sequence<I...>, Args... args) {
    ((n == I ? detail::run_kernel<std::tuple_element_t<I, Kernels>>(args...) : void()), ...);
}
template <typename Kernels, typename... Args>
void run_nth(size_t n, Args... args) {
    run_nth<Kernels>(n, std::make_index_sequence<std::tuple_size_v<Kernels>>(), args...);
}

// The indexer's variants by the keys' type (f32, bf16, f16), and a bf16 layer's in bf16 pairs, as
// a bf16 latent's logits; AArch64 builds have no pairs variants (bf16_pairs_chosen() is false
// there), and name the widening ones.
#if defined(__x86_64__)
using IndexPairs = k::dsa_index_scores_bf16_pairs;
using LatentPairs = k::dsa_latent_attention_bf16_bf16_pairs;
#else
using IndexPairs = k::dsa_index_scores_bf16;
using LatentPairs = k::dsa_latent_attention_bf16_bf16;
#endif
using IndexKernels = std::tuple<k::dsa_index_scores, k::dsa_index_scores_bf16, k::dsa_index_scores_f16, IndexPairs>;

// f32, bf16, f16: a 16-bit or float32 type's place in the kernels' lists.
size_t place_of(DType dtype) { return dtype == DType::F32 ? 0 : dtype == DType::BF16 ? 1 : 2; }

// The latent attention's variants by the latent's type, each by the rotary part's (f32, bf16, f16),
// then a bf16 layer's in bf16 pairs (the 10th).
using LatentKernels = std::tuple<k::dsa_latent_attention, k::dsa_latent_attention_f32_bf16,
                                 k::dsa_latent_attention_f32_f16, k::dsa_latent_attention_bf16_f32,
                                 k::dsa_latent_attention_bf16_bf16, k::dsa_latent_attention_bf16_f16,
                                 k::dsa_latent_attention_f16_f32, k::dsa_latent_attention_f16_bf16,
                                 k::dsa_latent_attention_f16_f16, LatentPairs>;
// An int8 latent's, which take its scales too.
using Int8LatentKernels = std::tuple<k::dsa_latent_attention_int8_f32, k::dsa_latent_attention_int8_bf16,
                                     k::dsa_latent_attention_int8_f16>;

// Checks the selection (every index -1 or a key of the cache) and the scale of a sparse attention.
void check_selection(const char *kernel, const std::vector<int32_t> &indices, int64_t queries, int64_t k,
                     int64_t capacity, float scale) {
    int64_t index_count = 0;  // B * S * k, which a huge k would overflow
    require(k > 0 && !__builtin_mul_overflow(queries, k, &index_count) &&
                static_cast<int64_t>(indices.size()) == index_count,
            [&] { return std::string(kernel) + ": indices must be [B, S, K]"; });
    require(std::isfinite(scale),
            [&] { return std::string(kernel) + ": scale must be finite, got " + std::to_string(scale); });
    for (int32_t t : indices) {
        require(t >= -1 && t < capacity, [&] {
            return std::string(kernel) + ": key index " + std::to_string(t) + " outside the cache of " +
                   std::to_string(capacity) + " tokens";
        });
    }
}

}  // namespace

void dsa_index_scores(const ConstTensorView &iq, const StoredView &ik, const ConstTensorView &head_w,
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
    require(ik.dtype != DType::Int8, "dsa index scores: the keys are f32, bf16 or f16 (the layer's dtype)");
    if (scores.size() == 0) return;
    // No query sees a key past the longest sequence: the kernel scores the keys up to there (a
    // decode step in a large cache, or a prefill block, costs what its queries see), and the rest
    // of every row is zeroed here.
    const int64_t visible = *std::max_element(kv_len.begin(), kv_len.end());
    if (visible < cap) copy_into(Tensor({B, S, cap - visible}).view(), scores.crop(2, visible, cap));
    const TensorView seen = scores.crop(2, 0, visible);
    auto qb = detail::halide_buffer(iq), wb = detail::halide_buffer(head_w), sb = detail::halide_buffer(seen);
    auto kb = detail::halide_storage_buffer(ik.crop(1, 0, visible));
    Halide::Runtime::Buffer<int32_t> lb(const_cast<int32_t *>(kv_len.data()), static_cast<int>(B));
    run_nth<IndexKernels>(detail::bf16_pairs_for(iq, ik.dtype) ? 3 : place_of(ik.dtype), qb.raw_buffer(), kb.raw_buffer(),
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
    check_selection("dsa sparse attention", indices, B * S, k, cap, scale);
    if (out.size() == 0) return;
    auto qb = detail::halide_buffer(q), kb = detail::halide_buffer(keys), vb = detail::halide_buffer(values), ob = detail::halide_buffer(out);
    Halide::Runtime::Buffer<int32_t> ib(const_cast<int32_t *>(indices.data()), static_cast<int>(k),
                                        static_cast<int>(S), static_cast<int>(B));
    detail::run_kernel<k::dsa_sparse_attention>(qb.raw_buffer(), kb.raw_buffer(), vb.raw_buffer(), ib.raw_buffer(), scale,
                                                ob.raw_buffer());
}

void dsa_latent_attention(const ConstTensorView &q, const StoredView &latent, const StoredView &rotary,
                          const std::vector<int32_t> &indices, int64_t k, float scale, const TensorView &out) {
    require(q.rank() == 4 && latent.rank() == 3 && rotary.rank() == 3 && out.rank() == 4,
            "dsa latent attention: q [B, S, H, R + Rd], latent [B, capacity, R], rotary [B, capacity, Rd] and out "
            "[B, S, H, R]");
    const int64_t B = q.dim(0), S = q.dim(1), H = q.dim(2), cap = latent.dim(1), R = latent.dim(2), Rd = rotary.dim(2);
    require(latent.dim(0) == B && rotary.dim(0) == B && rotary.dim(1) == cap && q.dim(3) == R + Rd &&
                out.shape == Shape({B, S, H, R}),
            [&] {
                return "dsa latent attention: q " + shape_to_string(q.shape) + ", latent " +
                       shape_to_string(latent.shape) + ", rotary " + shape_to_string(rotary.shape) + ", out " +
                       shape_to_string(out.shape) + " do not fit";
            });
    constexpr int64_t group = dsa_latent_group;
    require(rotary.dtype != DType::Int8 &&
                (latent.dtype != DType::Int8 ||
                 (latent.scale_group == group && latent.scales.shape == Shape({B, cap, (R + group - 1) / group}))),
            "dsa latent attention: the rotary part is f32, bf16 or f16, an int8 latent's scales [B, capacity, "
            "groups of 128]");
    check_selection("dsa latent attention", indices, B * S, k, cap, scale);
    if (out.size() == 0) return;
    // The kernel's views of one head: (width, 1, capacity, B).
    const auto one_head = [&](const StoredView &rows) {
        StoredView head = rows;
        const int64_t width = rows.dim(2);
        const Shape steps = rows.strides.empty() ? Shape{cap * width, width, 1} : rows.strides;
        head.shape = {B, cap, 1, width};
        head.strides = {steps[0], steps[1], steps[1], steps[2]};
        return detail::halide_storage_buffer(head);
    };
    auto qb = detail::halide_buffer(q), ob = detail::halide_buffer(out);
    // (Keys and values are the same rows, each argument a buffer of its own, as for any kernel.)
    auto lb = one_head(latent), vb = one_head(latent), rb = one_head(rotary);
    Halide::Runtime::Buffer<int32_t> ib(const_cast<int32_t *>(indices.data()), static_cast<int>(k),
                                        static_cast<int>(S), static_cast<int>(B));
    if (latent.dtype == DType::Int8) {
        auto sb = detail::halide_buffer(latent.scales);
        run_nth<Int8LatentKernels>(place_of(rotary.dtype), qb.raw_buffer(), lb.raw_buffer(), vb.raw_buffer(),
                                   ib.raw_buffer(), scale, rb.raw_buffer(), sb.raw_buffer(), ob.raw_buffer());
        return;
    }
    // A bf16 layer's bf16 latent and rotary part: the logits in pairs, where the queries are bf16
    // values (detail::bf16_pairs_for) over an even R as wide as the kernel's tiles.
    const bool pairs = latent.dtype == DType::BF16 && rotary.dtype == DType::BF16 && R % 2 == 0 &&
                       R >= kernel_contract::dsa_latent_pairs_min_values && detail::bf16_pairs_for(q, DType::BF16);
    run_nth<LatentKernels>(pairs ? 9 : place_of(latent.dtype) * 3 + place_of(rotary.dtype), qb.raw_buffer(),
                           lb.raw_buffer(), vb.raw_buffer(), ib.raw_buffer(), scale, rb.raw_buffer(), ob.raw_buffer());
}

}  // namespace hattn
