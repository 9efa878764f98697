// Caches of keys and values for attention (spec/attention.md §1).
//
// KVCache is the generation cache: preallocated for a batch with a capacity, laid out
// [B, Hkv, rows, D] so the attention kernels read it in place. Sequences may hold different
// lengths (ragged batches). Appending writes the new tokens in place; an append that would exceed
// the capacity throws and leaves the cache unchanged.
//
// A full cache has a row per token of its capacity, and row r holds position r. A sliding
// window's cache (KVCache::sliding) has fewer rows than its capacity: it keeps each sequence's
// last tokens, those that a sliding window's next queries see, and forgets earlier ones when it
// needs their rows. Row r then holds position first_positions()[b] + r.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hattn/sequence_lengths.h"
#include "hattn/tensor.h"

namespace hattn {

class KVCache {
public:
    // `name` starts the cache's error messages (a model with a cache per layer may say which).
    // Its rows hold `dtype` values (kv_dtype: f32; bf16 and f16 with an even head dim; int8 codes
    // with a float32 scale per row, with a head dim a multiple of 4), rounded once where they are
    // stored (spec/attention.md section 5).
    KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, std::string name = "KV cache",
            DType dtype = DType::F32);
    // What a sliding cache keeps. When an append needs rows, a sequence keeps its last
    // window - 1 + rollback tokens (kept(): fewer than `rows`), which move to row 0, and forgets
    // the earlier ones: it copies kept() rows once per rows - kept() tokens.
    struct Sliding {
        int64_t window = 1;    // the queries to come see at most the last `window` tokens, theirs included
        int64_t rows = 0;      // per sequence; at most the capacity (a cache with that many never forgets)
        // Tokens kept beyond the window's, so that truncate_to can go back that far from the length
        // an append left (speculative decoding's rejected draft tokens).
        int64_t rollback = 0;
        int64_t kept() const { return window - 1 + rollback; }
    };
    // A cache of sequences of up to `capacity` tokens, held in s.rows rows each.
    static KVCache sliding(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, Sliding s,
                           std::string name = "KV cache", DType dtype = DType::F32);

    int64_t batch() const { return k_.dim(0); }
    int64_t kv_heads() const { return k_.dim(1); }
    int64_t capacity() const { return lengths_.capacity(); }  // tokens per sequence
    int64_t rows() const { return k_.dim(2); }                 // rows per sequence: the capacity unless sliding
    int64_t head_dim() const { return head_dim_; }
    DType dtype() const { return dtype_; }
    const std::vector<int32_t> &lengths() const { return lengths_.values(); }
    const std::string &name() const { return lengths_.owner(); }  // as its errors name it
    // What a sliding cache keeps; none for a full one.
    const std::optional<Sliding> &sliding_params() const { return sliding_; }
    // The position each sequence's row 0 holds: 0 unless a sliding cache forgot earlier tokens.
    const std::vector<int32_t> &first_positions() const { return first_position_; }

    // The storage [B, Hkv, rows, D]: sequence b's tokens [first_positions()[b], lengths()[b]) in
    // its first rows; rows past them are not part of it. (Attention kernels called on a sliding
    // cache directly take lengths() - first_positions() as its sequences' lengths.)
    StoredView keys() const { return stored(k_); }
    StoredView values() const { return stored(v_); }

    // Appends externally computed keys and values [B, S, Hkv, D] (contiguous, already rotated) to every
    // sequence. Throws, changing nothing, on a shape mismatch or when a sequence would overflow.
    // A sliding cache takes any S within its capacity: when a sequence's rows cannot take the new
    // tokens, it keeps the last kept() of its tokens and the new ones, from row 0. Only append
    // forgets tokens and moves rows.
    void append(const ConstTensorView &keys, const ConstTensorView &values);

    void reset();                     // every sequence empty
    void reset(int64_t sequence);     // one sequence empty
    // Every sequence longer than `length` is cut to it. A sliding cache must still hold the
    // window - 1 tokens before it: a sequence can go back as far as it holds tokens past those.
    void truncate_to(int64_t length);
    void truncate_to(int64_t length, int64_t sequence);  // the same for one sequence
    void fork(int64_t source, int64_t target);  // sequence `target` becomes a copy of `source`
    // Sequence `target` becomes a copy of sequence `source` of another cache of the same heads and
    // head dim (any batch or capacity that holds it, full or sliding where the source still holds
    // every token the target keeps); like an assignment, the target comes first.
    // Continuous batching: prefill a new prompt in a cache of its own, then move it into the slot
    // of a sequence that finished.
    void assign_sequence(int64_t target, const KVCache &from, int64_t source = 0);

    // For layers writing in place: throws unless every sequence has room for `count` more tokens
    // within the capacity; fits_in_rows() says whether a sliding cache's rows take them too.
    void check_room(int64_t count) const;
    // Whether every sequence's rows take `count` more tokens after the ones it holds, so that the
    // slots and write_past_end() can take them (always, within the capacity, for a full cache).
    bool fits_in_rows(int64_t count) const;
    // Where sequence b's next `count` tokens go, as a [1, count, Hkv, D] view (the layout a
    // projection produces) into the storage. Write it with kernels or copy_into, which keep the
    // cache's device copy current (a kernel on a GPU writes the rows there, in place). f32 caches only.
    TensorView key_slot(int64_t b, int64_t count);
    TensorView value_slot(int64_t b, int64_t count);
    // Writes keys and values [B, S, Hkv, D] (contiguous) into every sequence's slot, past its end,
    // without making them part of it: for layers that attend first and commit() once everything
    // has succeeded. Throws, changing nothing, where append would or where the rows cannot take
    // S more (fits_in_rows).
    void write_past_end(const ConstTensorView &keys, const ConstTensorView &values);
    // Makes the `count` tokens written past each sequence's end part of it (checked against the
    // capacity and the rows first).
    void commit(int64_t count);

private:
    KVCache(int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity, int64_t rows, std::string name,
            DType dtype);
    TensorView slot(Tensor &storage, int64_t b, int64_t count);
    StoredView stored(const Tensor &storage) const;  // the elements of k_ or v_
    std::vector<Tensor *> storages();                // what holds the rows: k_, v_ and any scales
    // Sequence b's rows [row, row + n) of k_ or v_ take rows_of_b [1, Hkv, n, D], rounded to dtype_.
    void store_rows(Tensor &storage, int64_t b, int64_t row, const ConstTensorView &rows_of_b);
    // Whether sequence b's rows take `count` more tokens after its own, and a check that they do.
    bool fits(int64_t b, int64_t count) const;
    void require_rows(int64_t b, int64_t count) const;
    // Sequence b's tokens from position `first` on (which it holds) move to row 0.
    void move_to_row_0(int64_t b, int64_t first);
    void check_tokens(const ConstTensorView &keys, const ConstTensorView &values) const;
    // Sequence b's part of keys and values [B, S, Hkv, D] into its slot (which fits).
    void write_in_place(int64_t b, const ConstTensorView &keys, const ConstTensorView &values);
    void check_truncate(int64_t length, int64_t b) const;
    void restart_if_empty(int64_t b);

    Tensor k_, v_;
    SequenceLengths lengths_;
    std::optional<Sliding> sliding_;
    std::vector<int32_t> first_position_;
    Tensor k_scale_, v_scale_;  // int8: [B, Hkv, rows, 1]
    DType dtype_ = DType::F32;
    int64_t head_dim_ = 0;
};

// New tokens [B, S, Hkv, D] (a projection's layout) seen as a cache's storage [B, Hkv, S, D]: a
// strided view of the same memory, for attention over exactly these tokens without a cache.
ConstTensorView tokens_as_cache(const ConstTensorView &tokens);

// The conditioning cache: keys and values of a static context for cross-attention, computed once
// and never appended to.
class ConditioningCache {
public:
    // Cross-attention reads every sequence from row 0: a cache whose sequences start later (a
    // sliding one that has forgotten tokens) is refused.
    explicit ConditioningCache(KVCache kv);
    const KVCache &kv() const { return kv_; }

private:
    KVCache kv_;
};

}  // namespace hattn
