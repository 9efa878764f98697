#include "hattn/kv_cache.h"

#include <algorithm>
#include <limits>

#include "hattn/error.h"
#include "sequence_checks.h"

namespace hattn {

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity) {
    require(batch > 0 && kv_heads > 0 && head_dim > 0 && capacity > 0,
            "KV cache: batch, heads, head dim and capacity must be positive, got " +
                shape_to_string({batch, kv_heads, capacity, head_dim}));
    require(capacity <= std::numeric_limits<int32_t>::max(), "KV cache: capacity too large");
    k_ = Tensor({batch, kv_heads, capacity, head_dim});
    v_ = Tensor({batch, kv_heads, capacity, head_dim});
    // On a GPU the attention kernels read the cache where it stays: only new rows are uploaded.
    k_.keep_on_device();
    v_.keep_on_device();
    lengths_.assign(batch, 0);
}

void KVCache::check_room(int64_t count) const {
    require(count >= 0, "KV cache: cannot append " + std::to_string(count) + " tokens");
    for (int64_t b = 0; b < batch(); b++) {
        require(lengths_[b] + count <= capacity(),
                "KV cache full: sequence " + std::to_string(b) + " holds " +
                    std::to_string(lengths_[b]) + " of " + std::to_string(capacity()) +
                    " tokens, cannot append " + std::to_string(count));
    }
}

TensorView KVCache::slot(const Tensor &storage, int64_t b, int64_t count) const {
    detail::require_sequence("KV cache", b, batch());
    require(count >= 0 && lengths_[b] + count <= capacity(),
            "KV cache: sequence " + std::to_string(b) + " holds " + std::to_string(lengths_[b]) + " of " +
                std::to_string(capacity()) + " tokens, no slot for " + std::to_string(count));
    const int64_t D = head_dim(), cap = capacity(), H = kv_heads();
    float *start = const_cast<float *>(storage.data()) + (b * H * cap + lengths_[b]) * D;
    return TensorView(start, {1, count, H, D}, {H * cap * D, D, cap * D, 1});
}

TensorView KVCache::key_slot(int64_t b, int64_t count) const { return slot(k_, b, count); }
TensorView KVCache::value_slot(int64_t b, int64_t count) const { return slot(v_, b, count); }

void KVCache::commit(int64_t count) {
    check_room(count);
    for (int64_t b = 0; b < batch(); b++) lengths_[b] += static_cast<int32_t>(count);
}

void KVCache::append(const TensorView &keys, const TensorView &values) {
    write_past_end(keys, values);
    commit(keys.dim(1));
}

void KVCache::write_past_end(const TensorView &keys, const TensorView &values) {
    const Shape expected{batch(), keys.rank() == 4 ? keys.dim(1) : -1, kv_heads(), head_dim()};
    require(keys.rank() == 4 && keys.shape == expected && values.shape == keys.shape,
            "KV cache append: keys " + shape_to_string(keys.shape) + " and values " +
                shape_to_string(values.shape) + " must both be [" + std::to_string(batch()) +
                ", S, " + std::to_string(kv_heads()) + ", " + std::to_string(head_dim()) + "]");
    require(keys.is_contiguous() && values.is_contiguous(), "KV cache append: keys and values must be contiguous");
    const int64_t S = keys.dim(1);
    check_room(S);
    const int64_t row = S * kv_heads() * head_dim();
    for (int64_t b = 0; b < batch(); b++) {
        const Shape one{1, S, kv_heads(), head_dim()};
        copy_into(TensorView(keys.data + b * row, one), key_slot(b, S));
        copy_into(TensorView(values.data + b * row, one), value_slot(b, S));
    }
}

void KVCache::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

void KVCache::reset(int64_t sequence) { truncate_to(0, sequence); }

void KVCache::truncate_to(int64_t length) {
    for (int64_t b = 0; b < batch(); b++) truncate_to(length, b);
}

void KVCache::truncate_to(int64_t length, int64_t sequence) {
    require(length >= 0 && length <= capacity(),
            "KV cache: cannot truncate to " + std::to_string(length) + " tokens (capacity " +
                std::to_string(capacity()) + ")");
    detail::require_sequence("KV cache", sequence, batch());
    int32_t &len = lengths_[sequence];
    len = std::min<int32_t>(len, static_cast<int32_t>(length));
}

void KVCache::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void KVCache::assign_sequence(int64_t target, const KVCache &from, int64_t source) {
    require(from.kv_heads() == kv_heads() && from.head_dim() == head_dim(),
            "KV cache: cannot take a sequence from a cache of " + std::to_string(from.kv_heads()) + " heads x " +
                std::to_string(from.head_dim()) + " into one of " + std::to_string(kv_heads()) + " x " +
                std::to_string(head_dim()));
    detail::require_sequence("KV cache", source, from.batch(), "source sequence");
    detail::require_sequence("KV cache", target, batch());
    const int64_t len = from.lengths_[source];
    detail::require_fits("KV cache", source, len, capacity());
    if (&from == this && source == target) return;
    const int64_t D = head_dim(), from_span = from.capacity() * D, span = capacity() * D;
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&k_, &from.k_}, {&v_, &from.v_}}) {
        for (int64_t h = 0; h < kv_heads(); h++) {
            std::copy_n(rows->data() + (source * kv_heads() + h) * from_span, len * D,
                        to->data() + (target * kv_heads() + h) * span);
        }
    }
    rows_changed(target, 0, len);
    lengths_[target] = static_cast<int32_t>(len);
}

void KVCache::rows_changed(int64_t b, int64_t first, int64_t count) const {
    const int64_t D = head_dim(), cap = capacity();
    for (int64_t h = 0; h < kv_heads(); h++) {
        const int64_t begin = ((b * kv_heads() + h) * cap + first) * D;
        k_.host_changed(begin, begin + count * D);
        v_.host_changed(begin, begin + count * D);
    }
}

TensorView tokens_as_cache(const TensorView &tokens) {
    require(tokens.rank() == 4 && tokens.is_contiguous(),
            "tokens_as_cache: tokens " + shape_to_string(tokens.shape) + " must be contiguous [B, S, Hkv, D]");
    const int64_t B = tokens.dim(0), S = tokens.dim(1), Hkv = tokens.dim(2), D = tokens.dim(3);
    return TensorView(tokens.data, {B, Hkv, S, D}, {S * Hkv * D, D, Hkv * D, 1});
}

}  // namespace hattn
