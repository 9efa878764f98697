#include "hattn/kv_cache.h"

#include <algorithm>
#include <utility>

#include "hattn/error.h"

namespace hattn {

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, std::string name)
    : lengths_(std::move(name), batch, capacity) {
    require(kv_heads > 0 && head_dim > 0, lengths_.owner() + ": heads and head dim must be positive, got " +
                                              shape_to_string({batch, kv_heads, capacity, head_dim}));
    k_ = Tensor({batch, kv_heads, capacity, head_dim});
    v_ = Tensor({batch, kv_heads, capacity, head_dim});
    // On a GPU the attention kernels read the cache where it stays: only new rows are uploaded.
    k_.keep_on_device();
    v_.keep_on_device();
}

void KVCache::check_room(int64_t count) const { lengths_.require_room(count); }

TensorView KVCache::slot(Tensor &storage, int64_t b, int64_t count) {
    lengths_.require_room(count, b);
    const int64_t D = head_dim(), cap = capacity(), H = kv_heads();
    float *start = storage.data() + (b * H * cap + lengths_[b]) * D;
    return TensorView(start, {1, count, H, D}, {H * cap * D, D, cap * D, 1});
}

TensorView KVCache::key_slot(int64_t b, int64_t count) { return slot(k_, b, count); }
TensorView KVCache::value_slot(int64_t b, int64_t count) { return slot(v_, b, count); }

void KVCache::commit(int64_t count) { lengths_.commit(count); }

void KVCache::append(const ConstTensorView &keys, const ConstTensorView &values) {
    write_past_end(keys, values);
    commit(keys.dim(1));
}

void KVCache::write_past_end(const ConstTensorView &keys, const ConstTensorView &values) {
    const Shape expected{batch(), keys.rank() == 4 ? keys.dim(1) : -1, kv_heads(), head_dim()};
    require(keys.rank() == 4 && keys.shape == expected && values.shape == keys.shape,
            lengths_.owner() + " append: keys " + shape_to_string(keys.shape) + " and values " +
                shape_to_string(values.shape) + " must both be [" + std::to_string(batch()) +
                ", S, " + std::to_string(kv_heads()) + ", " + std::to_string(head_dim()) + "]");
    require(keys.is_contiguous() && values.is_contiguous(), lengths_.owner() + " append: keys and values must be contiguous");
    const int64_t S = keys.dim(1);
    check_room(S);
    const int64_t row = S * kv_heads() * head_dim();
    for (int64_t b = 0; b < batch(); b++) {
        const Shape one{1, S, kv_heads(), head_dim()};
        copy_into(ConstTensorView(keys.data + b * row, one), key_slot(b, S));
        copy_into(ConstTensorView(values.data + b * row, one), value_slot(b, S));
    }
}

void KVCache::reset() { lengths_.reset(); }
void KVCache::reset(int64_t sequence) { lengths_.reset(sequence); }
void KVCache::truncate_to(int64_t length) { lengths_.truncate_to(length); }
void KVCache::truncate_to(int64_t length, int64_t sequence) { lengths_.truncate_to(length, sequence); }

void KVCache::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void KVCache::assign_sequence(int64_t target, const KVCache &from, int64_t source) {
    require(from.kv_heads() == kv_heads() && from.head_dim() == head_dim(),
            lengths_.owner() + ": cannot take a sequence from a cache of " + std::to_string(from.kv_heads()) + " heads x " +
                std::to_string(from.head_dim()) + " into one of " + std::to_string(kv_heads()) + " x " +
                std::to_string(head_dim()));
    const int64_t len = lengths_.check_assign(target, from.lengths_, source);
    if (&from == this && source == target) return;
    const int64_t D = head_dim(), from_span = from.capacity() * D, span = capacity() * D;
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&k_, &from.k_}, {&v_, &from.v_}}) {
        for (int64_t h = 0; h < kv_heads(); h++) {
            std::copy_n(rows->data() + (source * kv_heads() + h) * from_span, len * D,
                        to->data() + (target * kv_heads() + h) * span);
        }
    }
    rows_changed(target, 0, len);
    lengths_.assign(target, len);
}

void KVCache::rows_changed(int64_t b, int64_t first, int64_t count) const {
    const int64_t D = head_dim(), cap = capacity();
    for (int64_t h = 0; h < kv_heads(); h++) {
        const int64_t begin = ((b * kv_heads() + h) * cap + first) * D;
        k_.host_changed(begin, begin + count * D);
        v_.host_changed(begin, begin + count * D);
    }
}

ConstTensorView tokens_as_cache(const ConstTensorView &tokens) {
    require(tokens.rank() == 4 && tokens.is_contiguous(),
            "tokens_as_cache: tokens " + shape_to_string(tokens.shape) + " must be contiguous [B, S, Hkv, D]");
    const int64_t B = tokens.dim(0), S = tokens.dim(1), Hkv = tokens.dim(2), D = tokens.dim(3);
    return ConstTensorView(tokens.data, {B, Hkv, S, D}, {S * Hkv * D, D, Hkv * D, 1});
}

}  // namespace hattn
