// Caches of keys and values for attention (spec/attention.md §1).
//
// KVCache is the generation cache: preallocated for a batch with a capacity, laid out
// [B, Hkv, capacity, D] so the attention kernels read it in place. Sequences may hold different
// lengths (ragged batches). Appending writes the new tokens in place, never moving old ones; an
// append that would exceed the capacity throws and leaves the cache unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hattn/sequence_lengths.h"
#include "hattn/tensor.h"

namespace hattn {

class KVCache {
public:
    // `name` starts the cache's error messages (a model with a cache per layer may say which).
    KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, std::string name = "KV cache");

    int64_t batch() const { return k_.dim(0); }
    int64_t kv_heads() const { return k_.dim(1); }
    int64_t capacity() const { return k_.dim(2); }
    int64_t head_dim() const { return k_.dim(3); }
    const std::vector<int32_t> &lengths() const { return lengths_.values(); }

    // The storage [B, Hkv, capacity, D]; tokens past a sequence's length are not part of it.
    ConstTensorView keys() const { return k_.view(); }
    ConstTensorView values() const { return v_.view(); }

    // Appends externally computed keys and values [B, S, Hkv, D] (contiguous, already rotated) to every
    // sequence. Throws, changing nothing, on a shape mismatch or when a sequence would overflow.
    void append(const ConstTensorView &keys, const ConstTensorView &values);

    void reset();                     // every sequence empty
    void reset(int64_t sequence);     // one sequence empty
    void truncate_to(int64_t length);  // every sequence longer than `length` is cut to it
    void truncate_to(int64_t length, int64_t sequence);  // the same for one sequence
    void fork(int64_t source, int64_t target);  // sequence `target` becomes a copy of `source`
    // Sequence `target` becomes a copy of sequence `source` of another cache of the same heads and
    // head dim (any batch or capacity that holds it); like an assignment, the target comes first.
    // Continuous batching: prefill a new prompt in a cache of its own, then move it into the slot
    // of a sequence that finished.
    void assign_sequence(int64_t target, const KVCache &from, int64_t source = 0);

    // For layers writing in place: throws unless every sequence has room for `count` more tokens.
    void check_room(int64_t count) const;
    // Where sequence b's next `count` tokens go, as a [1, count, Hkv, D] view (the layout a
    // projection produces) into the storage. Write it with kernels or copy_into, which keep the
    // cache's device copy current (a kernel on a GPU writes the rows there, in place).
    TensorView key_slot(int64_t b, int64_t count);
    TensorView value_slot(int64_t b, int64_t count);
    // Writes keys and values [B, S, Hkv, D] (contiguous) into every sequence's slot, past its end,
    // without making them part of it: for layers that attend first and commit() once everything
    // has succeeded. Throws, changing nothing, where append would.
    void write_past_end(const ConstTensorView &keys, const ConstTensorView &values);
    // Makes the `count` tokens written past each sequence's end part of it.
    void commit(int64_t count);

private:
    TensorView slot(Tensor &storage, int64_t b, int64_t count);
    // Tells the device copies that sequence b's rows [first, first + count) changed on the host.
    void rows_changed(int64_t b, int64_t first, int64_t count) const;

    Tensor k_, v_;
    SequenceLengths lengths_;
};

// New tokens [B, S, Hkv, D] (a projection's layout) seen as a cache's storage [B, Hkv, S, D]: a
// strided view of the same memory, for attention over exactly these tokens without a cache.
ConstTensorView tokens_as_cache(const ConstTensorView &tokens);

// The conditioning cache: keys and values of a static context for cross-attention, computed once
// and never appended to.
class ConditioningCache {
public:
    explicit ConditioningCache(KVCache kv) : kv_(std::move(kv)) {}
    const KVCache &kv() const { return kv_; }

private:
    KVCache kv_;
};

}  // namespace hattn
