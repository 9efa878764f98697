#include "hattn/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_contract.h"
#include "halide_call.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "kernel_variants.h"

namespace hattn {

namespace {

// [..., H, D] as [..., Hkv, g, D]: the kernels address query heads as (hk, hg), h = hk * g + hg.
ConstTensorView split_heads(const ConstTensorView &t, int64_t kv_heads, const char *what) {
    require(t.is_contiguous(), [&] { return std::string("attention: ") + what + " must be contiguous"; });
    Shape shape(t.shape.begin(), t.shape.end() - 2);
    const int64_t H = t.shape[t.rank() - 2], D = t.shape.back();
    shape.insert(shape.end(), {kv_heads, H / kv_heads, D});
    return ConstTensorView(t.data, shape);
}

// Checks the cache storage against q [B, ..., H, D] and returns Hkv.
void check_cache(const ConstTensorView &q, const StoredView &k_cache, const StoredView &v_cache,
                 const std::vector<int32_t> &kv_len, int64_t min_len, const char *kernel) {
    require(k_cache.dtype == v_cache.dtype, [&] {
        return std::string(kernel) + ": K and V caches of " + type_name(k_cache.dtype) + " and " +
               type_name(v_cache.dtype) + " values (one type for both)";
    });
    for (const StoredView *cache : {&k_cache, &v_cache}) {
        if (cache->dtype != DType::Int8) continue;
        Shape rows = cache->shape;
        if (!rows.empty()) rows.pop_back();
        require(cache->scales.shape == rows && detail::is_well_formed(cache->scales), [&] {
            return std::string(kernel) + ": an int8 cache " + shape_to_string(cache->shape) +
                   " needs a scale per row, " + shape_to_string(rows) + ", got " + shape_to_string(cache->scales.shape);
        });
    }
    require(k_cache.rank() == 4 && v_cache.shape == k_cache.shape, [&] {
        return std::string(kernel) + ": K and V caches must both be [B, Hkv, capacity, D], got " +
               shape_to_string(k_cache.shape) + " and " + shape_to_string(v_cache.shape);
    });
    const int64_t B = q.dim(0), H = q.dim(q.rank() - 2), D = q.dim(q.rank() - 1);
    const int64_t Hkv = k_cache.dim(1), capacity = k_cache.dim(2);
    require(k_cache.dim(0) == B && k_cache.dim(3) == D && Hkv > 0 && H % Hkv == 0, [&] {
        return std::string(kernel) + ": cache " + shape_to_string(k_cache.shape) + " does not fit queries " +
               shape_to_string(q.shape) + " (batch, head dim, H % Hkv)";
    });
    require(capacity >= 1, [&] { return std::string(kernel) + ": cache capacity must be at least 1"; });
    require(static_cast<int64_t>(kv_len.size()) == B,
            [&] { return std::string(kernel) + ": one KV length per sequence"; });
    for (int32_t len : kv_len) {
        require(len >= min_len && len <= capacity, [&] {
            return std::string(kernel) + ": KV length " + std::to_string(len) + " outside " + std::to_string(min_len) +
                   ".." + std::to_string(capacity);
        });
    }
}

// Where a call has no sinks the kernels read none, but take a buffer: one value, shared and
// resident so that a call on a GPU copies nothing for it.
const float *no_sinks() {
    static const Tensor unread = [] {
        Tensor t({1});
        t.keep_on_device(Residency::ReadOnly);
        return t;
    }();
    return unread.data();
}

// Checks the sinks (if given) against the queries' H: [H], contiguous and finite (the kernels
// assume no NaN or Inf).
void check_sinks(const ConstTensorView &q, const ConstTensorView *sinks, const char *kernel) {
    if (!sinks) return;
    const int64_t H = q.dim(q.rank() - 2);
    require(sinks->shape == Shape{H} && sinks->is_contiguous() && sinks->data != nullptr, [&] {
        return std::string(kernel) + ": sinks must be [H] = [" + std::to_string(H) + "] (one per query head), got " +
               shape_to_string(sinks->shape);
    });
    for (int64_t h = 0; h < H; h++) {
        require(std::isfinite(sinks->data[h]),
                [&] { return std::string(kernel) + ": sink " + std::to_string(h) + " is not finite"; });
    }
}

// The sinks [H] as [Hkv, g], which Halide sees as (hg, hk); or a 1 x 1 stand-in.
ConstTensorView sinks_by_kv_head(const ConstTensorView &q, int64_t kv_heads, const ConstTensorView *sinks) {
    if (!sinks) return ConstTensorView(no_sinks(), {1, 1});
    return ConstTensorView(sinks->data, {kv_heads, q.dim(q.rank() - 2) / kv_heads});
}

// Checks the scores' scale (finite) and soft-capping value: 0 (none), or positive and a normal
// float, whose reciprocal the kernels take.
void check_scores(float scale, float softcap, const char *kernel) {
    require(std::isfinite(scale),
            [&] { return std::string(kernel) + ": scale must be finite, got " + std::to_string(scale); });
    require(softcap == 0.0f || (std::isnormal(softcap) && softcap > 0.0f), [&] {
        return std::string(kernel) + ": softcap must be 0 (none) or positive and finite, got " +
               std::to_string(softcap);
    });
}

// The Halide buffers of one attention call: queries and output with heads split as (hk, hg), the
// cache storage as it is, the KV lengths, the sinks as (hg, hk), and the soft-capping.
struct AttentionBuffers {
    Halide::Runtime::Buffer<float> q, out;
    Halide::Runtime::Buffer<void> k, v;
    Halide::Runtime::Buffer<float> k_scale, v_scale;  // an int8 cache's row scales (else unset)
    Halide::Runtime::Buffer<float> sinks;
    Halide::Runtime::Buffer<int32_t> len;
    bool has_sinks;
    // The kernels divide by softcap even where has_softcap is false (in branches they discard).
    float softcap;
    bool has_softcap;
    // A bf16 cache's QK in bf16 pairs (the *_bf16_pairs kernels; detail::bf16_pairs_for).
    bool bf16_pairs = false;
    // An int8 cache's decode QK in integer dot products (detail::int8_dots_for).
    bool int8_dots = false;

    AttentionBuffers(const ConstTensorView &queries, const StoredView &k_cache, const StoredView &v_cache,
                     const std::vector<int32_t> &kv_len, const TensorView &output, const ConstTensorView *head_sinks,
                     float score_softcap)
        : q(detail::halide_buffer(split_heads(queries, k_cache.dim(1), "queries"))),
          out(detail::halide_buffer(split_heads(output, k_cache.dim(1), "output"))),
          k(detail::halide_storage_buffer(k_cache)),
          v(detail::halide_storage_buffer(v_cache)),
          k_scale(k_cache.dtype == DType::Int8 ? detail::halide_buffer(k_cache.scales) : Halide::Runtime::Buffer<float>()),
          v_scale(v_cache.dtype == DType::Int8 ? detail::halide_buffer(v_cache.scales) : Halide::Runtime::Buffer<float>()),
          sinks(detail::halide_buffer(sinks_by_kv_head(queries, k_cache.dim(1), head_sinks))),
          len(const_cast<int32_t *>(kv_len.data()), static_cast<int>(kv_len.size())),
          has_sinks(head_sinks != nullptr),
          softcap(score_softcap > 0.0f ? score_softcap : 1.0f),
          has_softcap(score_softcap > 0.0f) {}
};

// Runs the kernel of the cache's storage type (checked by check_cache) with `args` and then the
// output: F32, BF16 (BF16Pairs where b.bf16_pairs) or F16, or Int8 (Int8Dots where b.int8_dots)
// with the rows' scales before the output. `fit`: a GPU prefill's (detail::prefill_fit; nothing
// for a decode).
template <typename F32, typename BF16, typename F16, typename Int8, typename BF16Pairs = BF16, typename Int8Dots = Int8,
          typename... Args>
void run_for_cache(AttentionBuffers &b, DType cache, const detail::GpuPrefillFit &fit, Args... args) {
    const auto run = [&](auto kernel, auto... scales) {
        using Kernel = decltype(kernel);
        detail::call_kernel(Kernel::name, detail::kernel_function<Kernel>(fit), args..., scales..., b.out.raw_buffer());
    };
    if (cache == DType::BF16) return b.bf16_pairs ? run(BF16Pairs{}) : run(BF16{});
    if (cache == DType::F16) return run(F16{});
    if (cache == DType::Int8) {
        const auto k_scale = b.k_scale.raw_buffer(), v_scale = b.v_scale.raw_buffer();
        return b.int8_dots ? run(Int8Dots{}, k_scale, v_scale) : run(Int8{}, k_scale, v_scale);
    }
    run(F32{});
}

// The kernels over a bf16 cache whose QK multiplies bf16 pairs and over an int8 cache whose QK
// takes integer dot products; AArch64 builds have none (bf16_pairs_chosen() and
// int8_dots_chosen() are false there), and name the widening ones.
namespace k = detail::kernels;
#if defined(__x86_64__)
using PrefillPairs = k::attention_prefill_bf16_pairs;
using PrefillMaskedPairs = k::attention_prefill_masked_bf16_pairs;
using DecodePairs = k::attention_decode_bf16_pairs;
using DecodeInt8Dots = k::attention_decode_int8_dots;
#else
using PrefillPairs = k::attention_prefill_bf16;
using PrefillMaskedPairs = k::attention_prefill_masked_bf16;
using DecodePairs = k::attention_decode_bf16;
using DecodeInt8Dots = k::attention_decode_int8;
#endif


}  // namespace

void attention_prefill(const ConstTensorView &q, const StoredView &k_cache, const StoredView &v_cache,
                       const std::vector<int32_t> &kv_len, float scale, bool causal,
                       const MaskView *mask, const TensorView &out, const ConstTensorView *sinks,
                       float softcap) {
    require(q.rank() == 4, [&] { return "attention: queries must be [B, Sq, H, D], got " + shape_to_string(q.shape); });
    require(out.shape == q.shape, [&] {
        return "attention: output " + shape_to_string(out.shape) + " differs from queries " + shape_to_string(q.shape);
    });
    const int64_t Sq = q.dim(1);
    check_cache(q, k_cache, v_cache, kv_len, causal ? Sq : 0, "attention");
    check_sinks(q, sinks, "attention");
    check_scores(scale, softcap, "attention");
    if (q.size() == 0) return;

    AttentionBuffers b(q, k_cache, v_cache, kv_len, out, sinks, softcap);
    b.bf16_pairs = detail::bf16_pairs_for(q, k_cache.dtype);
    const int32_t max_len = *std::max_element(kv_len.begin(), kv_len.end());
    const int32_t longest = std::max(max_len, 1);  // the chunk loops end there (see the generator)
    if (!mask) {
        run_for_cache<k::attention_prefill, k::attention_prefill_bf16, k::attention_prefill_f16,
                      k::attention_prefill_int8, PrefillPairs>(
            b, k_cache.dtype, detail::prefill_fit(q.dim(3)), b.q.raw_buffer(), b.k.raw_buffer(), b.v.raw_buffer(), b.len.raw_buffer(),
            longest, scale, causal, b.sinks.raw_buffer(), b.has_sinks, b.softcap, b.has_softcap);
        return;
    }
    require(mask->shape.size() == 4 && mask->shape[0] == q.dim(0) && mask->shape[1] == 1 && mask->shape[2] == Sq &&
                mask->shape[3] >= max_len,
            [&] {
                return "attention: mask " + shape_to_string(mask->shape) + " must be [" + std::to_string(q.dim(0)) +
                       ", 1, " + std::to_string(Sq) + ", >=" + std::to_string(max_len) + "]";
            });
    // Halide's extents and strides are int32: the mask's entries must be counted in one.
    int64_t entries = 0;
    require(!__builtin_mul_overflow(q.dim(0) * Sq, mask->shape[3], &entries) &&
                entries <= std::numeric_limits<int32_t>::max(),
            [&] { return "attention mask " + shape_to_string(mask->shape) + " has more than 2^31 - 1 entries"; });
    halide_dimension_t dims[4] = {
        {0, static_cast<int32_t>(mask->shape[3]), 1, 0},
        {0, static_cast<int32_t>(Sq), static_cast<int32_t>(mask->shape[3]), 0},
        {0, 1, static_cast<int32_t>(Sq * mask->shape[3]), 0},
        {0, static_cast<int32_t>(q.dim(0)), static_cast<int32_t>(Sq * mask->shape[3]), 0}};
    require(mask->data != nullptr, [&] { return "attention mask " + shape_to_string(mask->shape) + " has no data"; });
    Halide::Runtime::Buffer<uint8_t> mask_b(const_cast<uint8_t *>(mask->data), 4, dims);
    run_for_cache<k::attention_prefill_masked, k::attention_prefill_masked_bf16, k::attention_prefill_masked_f16,
                  k::attention_prefill_masked_int8, PrefillMaskedPairs>(
        b, k_cache.dtype, detail::prefill_fit(q.dim(3)), b.q.raw_buffer(), b.k.raw_buffer(), b.v.raw_buffer(), b.len.raw_buffer(), longest,
        scale, causal, b.sinks.raw_buffer(), b.has_sinks, b.softcap, b.has_softcap, mask_b.raw_buffer());
}

void attention_decode(const ConstTensorView &q, const StoredView &k_cache, const StoredView &v_cache,
                      const std::vector<int32_t> &kv_len, float scale, const TensorView &out,
                      const ConstTensorView *sinks, const std::vector<int32_t> *first_key, float softcap) {
    require(q.rank() == 3,
            [&] { return "attention decode: queries must be [B, H, D], got " + shape_to_string(q.shape); });
    require(out.shape == q.shape, [&] {
        return "attention decode: output " + shape_to_string(out.shape) + " differs from queries " +
               shape_to_string(q.shape);
    });
    check_cache(q, k_cache, v_cache, kv_len, 0, "attention decode");
    check_sinks(q, sinks, "attention decode");
    check_scores(scale, softcap, "attention decode");
    std::vector<int32_t> first(kv_len.size(), 0);
    if (first_key) {
        require(first_key->size() == kv_len.size(), [&] {
            return "attention decode: one first key per sequence, got " + std::to_string(first_key->size()) + " for " +
                   std::to_string(kv_len.size()) + " sequences";
        });
        for (size_t b = 0; b < kv_len.size(); b++) {
            require((*first_key)[b] >= 0 && (*first_key)[b] <= kv_len[b], [&] {
                return "attention decode: first key " + std::to_string((*first_key)[b]) + " of sequence " +
                       std::to_string(b) + " outside 0.." + std::to_string(kv_len[b]);
            });
        }
        first = *first_key;
    }
    if (q.size() == 0) return;
    require(current_device() == Device::CPU || q.dim(2) <= kernel_contract::gpu_decode_max_head_dim, [&] {
        return "attention decode: head dim " + std::to_string(q.dim(2)) + " is past the GPU kernel's " +
               std::to_string(kernel_contract::gpu_decode_max_head_dim) + " (its K tile lives in shared memory); run it on the CPU";
    });
    // At least 1: the split-KV stage has a chunk (then fully masked) where no query sees a key, as
    // a GPU launch of zero blocks would fail.
    int32_t longest = 1;
    for (size_t s = 0; s < kv_len.size(); s++) longest = std::max(longest, kv_len[s] - first[s]);
    AttentionBuffers b(q, k_cache, v_cache, kv_len, out, sinks, softcap);
    // Pairs for groups only: where a KV head serves one query head, decode is bound by the cache's
    // bytes and pairs do not pay (docs/perf/log.md, "bf16 pairs in decode").
    b.bf16_pairs = q.dim(1) > k_cache.dim(1) && detail::bf16_pairs_for(q, k_cache.dtype);
    // Integer dots for every group size, MHA included, unlike bf16 pairs (docs/perf/log.md, "int8
    // dot products in decode").
    b.int8_dots = detail::int8_dots_for(q.dim(2), k_cache.dtype);
    Halide::Runtime::Buffer<int32_t> first_b(first.data(), static_cast<int>(first.size()));
    run_for_cache<k::attention_decode, k::attention_decode_bf16, k::attention_decode_f16, k::attention_decode_int8,
                  DecodePairs, DecodeInt8Dots>(
        b, k_cache.dtype, {}, b.q.raw_buffer(), b.k.raw_buffer(), b.v.raw_buffer(), b.len.raw_buffer(),
        first_b.raw_buffer(), longest, scale, b.sinks.raw_buffer(), b.has_sinks, b.softcap, b.has_softcap);
}

}  // namespace hattn
