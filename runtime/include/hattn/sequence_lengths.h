// How many tokens each sequence of a per-batch state holds, and the rules for changing that, kept in
// one place for every state that preallocates `capacity` tokens per sequence (KVCache, DsaState, and
// LatentState through its KVCache). Every check names the state it belongs to and changes nothing
// when it fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hattn {

class SequenceLengths {
public:
    // `owner` starts every error message ("KV cache", "glm_dsa state", ...).
    SequenceLengths(std::string owner, int64_t batch, int64_t capacity);

    const std::string &owner() const { return owner_; }
    int64_t batch() const { return static_cast<int64_t>(lengths_.size()); }
    int64_t capacity() const { return capacity_; }
    const std::vector<int32_t> &values() const { return lengths_; }
    int64_t operator[](int64_t sequence) const { return lengths_[sequence]; }

    // Throws unless `sequence` is one of the batch's ("<owner>: <role> 3 outside batch 2").
    void require_sequence(int64_t sequence, const char *role = "sequence") const;
    // Throws unless every sequence has room for `count` more tokens.
    void require_room(int64_t count) const;
    // Throws unless sequence `sequence` has room for `count` more tokens.
    void require_room(int64_t count, int64_t sequence) const;

    void commit(int64_t count);  // every sequence holds `count` more tokens (checked first)
    void reset();                // every sequence empty
    void reset(int64_t sequence);
    void truncate_to(int64_t length);                    // sequences longer than `length` cut to it
    void truncate_to(int64_t length, int64_t sequence);  // the same for one sequence
    // Checks that sequence `source` of `from` may be copied into sequence `target` here (both in
    // their batches, the source no longer than this capacity) and returns its length; set it with
    // assign() once the rows are copied.
    int64_t check_assign(int64_t target, const SequenceLengths &from, int64_t source) const;
    void assign(int64_t target, int64_t length);

private:
    std::string owner_;
    int64_t capacity_;
    std::vector<int32_t> lengths_;
};

}  // namespace hattn
