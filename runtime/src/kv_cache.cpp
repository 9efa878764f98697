#include "hattn/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <utility>

#include "device_residency.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/int8_group.h"

namespace hattn {

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, std::string name, DType dtype)
    : KVCache(batch, kv_heads, head_dim, capacity, capacity, std::move(name), dtype) {}

KVCache::KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, int64_t rows, std::string name,
                 DType dtype)
    : lengths_(std::move(name), batch, capacity), first_position_(batch, 0), dtype_(dtype), head_dim_(head_dim) {
    require(kv_heads > 0 && head_dim > 0, [&] {
        return lengths_.owner() + ": heads and head dim must be positive, got " +
               shape_to_string({batch, kv_heads, capacity, head_dim});
    });
    const int64_t per_word = int64_t(sizeof(float)) / int64_t(dtype_size(dtype));
    require(head_dim % per_word == 0, [&] {
        return lengths_.owner() + ": a cache of " + type_name(dtype) + " values with head dim " +
               std::to_string(head_dim) + " is not supported (bf16 and f16 need an even head dim, int8 a multiple of 4)";
    });
    // 16-bit and int8 rows are held several values to a float32 word, so that the rows' moves,
    // forks and copies are the f32 cache's own (they never look inside a row).
    k_ = Tensor({batch, kv_heads, rows, head_dim / per_word});
    v_ = Tensor({batch, kv_heads, rows, head_dim / per_word});
    if (dtype == DType::Int8) {  // a scale per row, moved with it
        k_scale_ = Tensor({batch, kv_heads, rows, 1});
        v_scale_ = Tensor({batch, kv_heads, rows, 1});
    }
    // On a GPU the attention kernels read the cache where it stays: only new rows are uploaded.
    for (Tensor *storage : storages()) storage->keep_on_device();
}

KVCache KVCache::sliding(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, Sliding s,
                         std::string name, DType dtype) {
    require(s.window > 0 && s.rollback >= 0, [&] {
        return name + ": a sliding cache's window must be positive and its rollback not negative, got " +
               std::to_string(s.window) + " and " + std::to_string(s.rollback);
    });
    // (A window past every position is a config's way of saying none: a cache that never forgets.)
    int64_t kept;
    require(!__builtin_add_overflow(s.window - 1, s.rollback, &kept), [&] {
        return name + ": a sliding cache's window " + std::to_string(s.window) + " - 1 + rollback " +
               std::to_string(s.rollback) + " overflows";
    });
    // Rows past the capacity would never be used: such a cache never forgets.
    s.rows = std::min(s.rows, capacity);
    require(s.kept() < s.rows || s.rows == capacity, [&] {
        return name + ": a sliding cache must keep fewer tokens than its rows, got " + std::to_string(s.kept()) +
               " kept (window " + std::to_string(s.window) + " - 1 + rollback " + std::to_string(s.rollback) + ") in " +
               std::to_string(s.rows) + " rows";
    });
    KVCache cache(batch, kv_heads, head_dim, capacity, s.rows, std::move(name), dtype);
    cache.sliding_ = s;
    return cache;
}

void KVCache::check_room(int64_t count) const { lengths_.require_room(count); }

bool KVCache::fits(int64_t b, int64_t count) const { return count <= rows() - (lengths_[b] - first_position_[b]); }

bool KVCache::fits_in_rows(int64_t count) const {
    for (int64_t b = 0; b < batch(); b++) {
        if (count < 0 || !fits(b, count)) return false;
    }
    return true;
}

void KVCache::move_to_row_0(int64_t b, int64_t first) {
    assert(first >= first_position_[b] && first <= lengths_[b]);
    const int64_t from = first - first_position_[b], count = lengths_[b] - first;
    if (from > 0 && count > 0) {
        // Through a copy of their own: the rows may overlap where they go.
        for (Tensor *storage : storages()) {
            const ConstTensorView sequence = std::as_const(*storage).view().crop(0, b, b + 1);
            Tensor moved({1, kv_heads(), count, storage->dim(3)}, Tensor::unset);
            copy_into(sequence.crop(2, from, from + count), moved.view());
            copy_into(moved.view(), storage->view().crop(0, b, b + 1).crop(2, 0, count));
        }
    }
    first_position_[b] = static_cast<int32_t>(first);
}

void KVCache::require_rows(int64_t b, int64_t count) const {
    require(fits(b, count), [&] {
        return lengths_.owner() + ": sequence " + std::to_string(b) + " cannot take " + std::to_string(count) +
               " tokens in place: it holds " + std::to_string(lengths_[b] - first_position_[b]) + " of its " +
               std::to_string(rows()) + " rows (append moves the kept ones to row 0)";
    });
}

std::vector<Tensor *> KVCache::storages() {
    if (dtype_ == DType::Int8) return {&k_, &v_, &k_scale_, &v_scale_};
    return {&k_, &v_};
}

StoredView KVCache::stored(const Tensor &storage) const {
    if (dtype_ == DType::F32) return storage.view();
    const int64_t H = kv_heads(), R = rows(), D = head_dim();
    StoredView view(storage.data(), dtype_, {batch(), H, R, D}, {H * R * D, R * D, D, 1});
    if (dtype_ == DType::Int8) view.scales = ConstTensorView((&storage == &k_ ? k_scale_ : v_scale_).data(), {batch(), H, R});
    return view;
}

void KVCache::store_rows(Tensor &storage, int64_t b, int64_t row, const ConstTensorView &rows_of_b) {
    const int64_t n = rows_of_b.dim(2);
    if (dtype_ == DType::F32) {
        copy_into(rows_of_b, storage.view().crop(0, b, b + 1).crop(2, row, row + n));
        return;
    }
    // Rounded once, here, as the spec rounds a value where it is stored: on the host, so that rows
    // a GPU kernel wrote come down first, and the stored rows go up before the next kernel reads them.
    const int64_t H = kv_heads(), R = rows(), D = head_dim();
    detail::host_reads(rows_of_b);
    const auto stored = [&](Tensor &t) { detail::host_wrote(t.view().crop(0, b, b + 1).crop(2, row, row + n)); };
    stored(storage);
    if (dtype_ == DType::Int8) {
        stored(&storage == &k_ ? k_scale_ : v_scale_);
        int8_t *codes = reinterpret_cast<int8_t *>(storage.data()) + b * H * R * D;
        float *scales = (&storage == &k_ ? k_scale_ : v_scale_).data() + b * H * R;
        std::vector<float> group(D);
        for (int64_t h = 0; h < H; h++) {
            for (int64_t r = 0; r < n; r++) {
                const float *in = rows_of_b.data + h * rows_of_b.strides[1] + r * rows_of_b.strides[2];
                for (int64_t d = 0; d < D; d++) group[d] = in[d * rows_of_b.strides[3]];
                scales[h * R + row + r] = quantize_group(group.data(), codes + (h * R + row + r) * D, D);
            }
        }
        return;
    }
    uint16_t *first = reinterpret_cast<uint16_t *>(storage.data()) + b * H * R * D;
    const Shape steps = rows_of_b.strides;
    for (int64_t h = 0; h < H; h++) {
        for (int64_t r = 0; r < n; r++) {
            const float *in = rows_of_b.data + h * steps[1] + r * steps[2];
            uint16_t *out = first + (h * R + row + r) * D;
            if (steps[3] == 1) {
                to_bits(dtype_, in, out, D);
            } else {
                for (int64_t d = 0; d < D; d++) to_bits(dtype_, in + d * steps[3], out + d, 1);
            }
        }
    }
}

TensorView KVCache::slot(Tensor &storage, int64_t b, int64_t count) {
    require(dtype_ == DType::F32, [&] {
        return lengths_.owner() + ": a cache of " + type_name(dtype_) +
               " values has no f32 slots (append and write_past_end round the rows they store)";
    });
    lengths_.require_room(count, b);
    require_rows(b, count);
    const int64_t D = head_dim(), R = rows(), H = kv_heads();
    float *start = storage.data() + (b * H * R + lengths_[b] - first_position_[b]) * D;
    return TensorView(start, {1, count, H, D}, {H * R * D, D, R * D, 1});
}

TensorView KVCache::key_slot(int64_t b, int64_t count) { return slot(k_, b, count); }
TensorView KVCache::value_slot(int64_t b, int64_t count) { return slot(v_, b, count); }

void KVCache::commit(int64_t count) {
    lengths_.require_room(count);  // first: a full cache's overflow in the lengths' words
    for (int64_t b = 0; b < batch(); b++) require_rows(b, count);
    lengths_.commit(count);
}

void KVCache::append(const ConstTensorView &keys, const ConstTensorView &values) {
    check_tokens(keys, values);
    const int64_t S = keys.dim(1);
    check_room(S);
    for (int64_t b = 0; b < batch(); b++) {
        if (fits(b, S)) {
            write_in_place(b, keys, values);
            continue;
        }
        // A sliding cache whose rows cannot take the new tokens: it keeps the last kept() of its
        // tokens and the new ones (fewer than its rows).
        const int64_t end = lengths_[b] + S, first = end - sliding_->kept(), new_from = std::max<int64_t>(first, lengths_[b]);
        move_to_row_0(b, std::min<int64_t>(first, lengths_[b]));
        first_position_[b] = static_cast<int32_t>(first);
        for (auto [storage, t] : {std::pair{&k_, &keys}, {&v_, &values}}) {
            store_rows(*storage, b, new_from - first, tokens_as_cache(*t).crop(0, b, b + 1).crop(2, new_from - lengths_[b], S));
        }
    }
    commit(S);
}

void KVCache::write_in_place(int64_t b, const ConstTensorView &keys, const ConstTensorView &values) {
    const int64_t S = keys.dim(1);
    lengths_.require_room(S, b);
    require_rows(b, S);
    const int64_t row = lengths_[b] - first_position_[b];
    store_rows(k_, b, row, tokens_as_cache(keys).crop(0, b, b + 1));
    store_rows(v_, b, row, tokens_as_cache(values).crop(0, b, b + 1));
}

void KVCache::check_tokens(const ConstTensorView &keys, const ConstTensorView &values) const {
    require(detail::is_well_formed(keys) && detail::is_well_formed(values), [&] {
        return lengths_.owner() + " append: keys and values must be views with data and one stride per dimension";
    });
    const Shape expected{batch(), keys.rank() == 4 ? keys.dim(1) : -1, kv_heads(), head_dim()};
    require(keys.rank() == 4 && keys.shape == expected && values.shape == keys.shape, [&] {
        return lengths_.owner() + " append: keys " + shape_to_string(keys.shape) + " and values " +
               shape_to_string(values.shape) + " must both be [" + std::to_string(batch()) + ", S, " +
               std::to_string(kv_heads()) + ", " + std::to_string(head_dim()) + "]";
    });
    require(keys.is_contiguous() && values.is_contiguous(),
            [&] { return lengths_.owner() + " append: keys and values must be contiguous"; });
    // Rows read from the cache's own storage could be overwritten (or moved, in a sliding cache)
    // before they are copied.
    const auto within_storage = [&](const ConstTensorView &t) {
        const auto overlaps = [&](const Tensor &storage) {
            const std::less<const float *> before;  // (an order over unrelated pointers too)
            return before(t.data, storage.data() + storage.size()) && before(storage.data(), t.data + t.size());
        };
        return t.size() > 0 && (overlaps(k_) || overlaps(v_));
    };
    require(!within_storage(keys) && !within_storage(values), [&] {
        return lengths_.owner() + " append: keys and values must not lie in the cache's own storage (copy them first)";
    });
}

void KVCache::write_past_end(const ConstTensorView &keys, const ConstTensorView &values) {
    check_tokens(keys, values);
    const int64_t S = keys.dim(1);
    check_room(S);
    for (int64_t b = 0; b < batch(); b++) require_rows(b, S);
    for (int64_t b = 0; b < batch(); b++) write_in_place(b, keys, values);
}

void KVCache::reset() {
    lengths_.reset();
    std::fill(first_position_.begin(), first_position_.end(), 0);
}

void KVCache::reset(int64_t sequence) {
    lengths_.reset(sequence);
    first_position_[sequence] = 0;
}

void KVCache::truncate_to(int64_t length) {
    for (int64_t b = 0; b < batch(); b++) check_truncate(length, b);
    lengths_.truncate_to(length);
    for (int64_t b = 0; b < batch(); b++) restart_if_empty(b);
}

void KVCache::truncate_to(int64_t length, int64_t sequence) {
    check_truncate(length, sequence);
    lengths_.truncate_to(length, sequence);
    restart_if_empty(sequence);
}

void KVCache::check_truncate(int64_t length, int64_t b) const {
    lengths_.require_sequence(b);
    // (A length outside the capacity is refused by the lengths, in their words.)
    if (!sliding_ || length <= 0 || length >= lengths_[b] || first_position_[b] == 0) return;
    require(length - (sliding_->window - 1) >= first_position_[b], [&] {
        return lengths_.owner() + ": cannot truncate sequence " + std::to_string(b) + " to " + std::to_string(length) +
               " tokens: it holds them from position " + std::to_string(first_position_[b]) +
               " on, and its window needs the " + std::to_string(sliding_->window - 1) + " before the end";
    });
}

void KVCache::restart_if_empty(int64_t b) {
    if (lengths_[b] == 0) first_position_[b] = 0;
}

void KVCache::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void KVCache::assign_sequence(int64_t target, const KVCache &from, int64_t source) {
    require(from.kv_heads() == kv_heads() && from.head_dim() == head_dim() && from.dtype() == dtype(), [&] {
        return lengths_.owner() + ": cannot take a sequence from a cache of " + std::to_string(from.kv_heads()) +
               " heads x " + std::to_string(from.head_dim()) + " " + type_name(from.dtype()) + " into one of " +
               std::to_string(kv_heads()) + " x " + std::to_string(head_dim()) + " " + type_name(dtype());
    });
    const int64_t len = lengths_.check_assign(target, from.lengths_, source);
    if (&from == this && source == target) return;
    // This cache takes the most of its tokens that the source holds and the rows take; it needs
    // them all, or a sliding cache the window - 1 before the end.
    const int64_t held_from = from.first_position_[source];
    const int64_t first = std::max({int64_t{0}, len - rows(), int64_t{held_from}});
    const int64_t needed_from = sliding_ ? std::max<int64_t>(0, len - (sliding_->window - 1)) : 0;
    require(first <= needed_from, [&] {
        return lengths_.owner() + ": source sequence " + std::to_string(source) + " holds its " + std::to_string(len) +
               " tokens from position " + std::to_string(held_from) + " on; this cache needs them from " +
               std::to_string(needed_from) + " on";
    });
    std::vector<std::pair<Tensor *, const Tensor *>> moved{{&k_, &from.k_}, {&v_, &from.v_}};
    if (dtype_ == DType::Int8) moved.insert(moved.end(), {{&k_scale_, &from.k_scale_}, {&v_scale_, &from.v_scale_}});
    for (auto [to, rows_of] : moved) {
        const ConstTensorView source_rows =
            rows_of->view().crop(0, source, source + 1).crop(2, first - held_from, len - held_from);
        copy_into(source_rows, to->view().crop(0, target, target + 1).crop(2, 0, len - first));
    }
    lengths_.assign(target, len);
    first_position_[target] = static_cast<int32_t>(first);
}

ConstTensorView tokens_as_cache(const ConstTensorView &tokens) {
    require(tokens.rank() == 4 && tokens.is_contiguous(), [&] {
        return "tokens_as_cache: tokens " + shape_to_string(tokens.shape) + " must be contiguous [B, S, Hkv, D]";
    });
    const int64_t B = tokens.dim(0), S = tokens.dim(1), Hkv = tokens.dim(2), D = tokens.dim(3);
    return ConstTensorView(tokens.data, {B, Hkv, S, D}, {S * Hkv * D, D, Hkv * D, 1});
}

ConditioningCache::ConditioningCache(KVCache kv) : kv_(std::move(kv)) {
    const auto &first = kv_.first_positions();
    require(std::all_of(first.begin(), first.end(), [](int32_t p) { return p == 0; }), [&] {
        return kv_.name() +
               ": a conditioning cache holds its sequences from position 0; this one has forgotten "
               "tokens (a sliding cache)";
    });
}

}  // namespace hattn
