#include "hattn/sequence_lengths.h"

#include <algorithm>
#include <limits>

#include "hattn/error.h"

namespace hattn {

namespace {
std::string str(int64_t v) { return std::to_string(v); }
}  // namespace

SequenceLengths::SequenceLengths(std::string owner, int64_t batch, int64_t capacity)
    : owner_(std::move(owner)), capacity_(capacity) {
    require(batch > 0 && capacity > 0, [&] {
        return owner_ + ": batch and capacity must be positive, got batch " + str(batch) + ", capacity " +
               str(capacity);
    });
    // Lengths are int32 because the kernels take them so; a batch is a buffer extent, int32 too.
    require(capacity <= std::numeric_limits<int32_t>::max(),
            [&] { return owner_ + ": capacity " + str(capacity) + " too large"; });
    require(batch <= std::numeric_limits<int32_t>::max(),
            [&] { return owner_ + ": batch " + str(batch) + " too large"; });
    lengths_.assign(batch, 0);
}

void SequenceLengths::require_sequence(int64_t sequence, const char *role) const {
    require(sequence >= 0 && sequence < batch(),
            [&] { return owner_ + ": " + role + " " + str(sequence) + " outside batch " + str(batch()); });
}

void SequenceLengths::require_room(int64_t count, int64_t sequence) const {
    require_sequence(sequence);
    require(count >= 0, [&] { return owner_ + ": cannot append " + str(count) + " tokens"; });
    require(count <= capacity_ - lengths_[sequence], [&] {  // (a sum could overflow)
        return owner_ + " full: sequence " + str(sequence) + " holds " + str(lengths_[sequence]) + " of " +
               str(capacity_) + " tokens, cannot append " + str(count);
    });
}

void SequenceLengths::require_room(int64_t count) const {
    for (int64_t b = 0; b < batch(); b++) require_room(count, b);
}

void SequenceLengths::commit(int64_t count) {
    require_room(count);
    for (int32_t &length : lengths_) length += static_cast<int32_t>(count);
}

void SequenceLengths::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

void SequenceLengths::reset(int64_t sequence) { truncate_to(0, sequence); }

void SequenceLengths::truncate_to(int64_t length) {
    for (int64_t b = 0; b < batch(); b++) truncate_to(length, b);
}

void SequenceLengths::truncate_to(int64_t length, int64_t sequence) {
    require(length >= 0 && length <= capacity_, [&] {
        return owner_ + ": cannot truncate to " + str(length) + " tokens (capacity " + str(capacity_) + ")";
    });
    require_sequence(sequence);
    lengths_[sequence] = std::min<int32_t>(lengths_[sequence], static_cast<int32_t>(length));
}

int64_t SequenceLengths::check_assign(int64_t target, const SequenceLengths &from, int64_t source) const {
    // Named by this state: the caller asked it, not the source, to take the sequence.
    require(source >= 0 && source < from.batch(),
            [&] { return owner_ + ": source sequence " + str(source) + " outside batch " + str(from.batch()); });
    require_sequence(target);
    const int64_t length = from.lengths_[source];
    require(length <= capacity_, [&] {
        return owner_ + ": source sequence " + str(source) + " holds " + str(length) +
               " tokens, more than the capacity " + str(capacity_);
    });
    return length;
}

void SequenceLengths::assign(int64_t target, int64_t length) {
    require_sequence(target);
    require(length >= 0 && length <= capacity_,
            [&] { return owner_ + ": cannot hold " + str(length) + " tokens (capacity " + str(capacity_) + ")"; });
    lengths_[target] = static_cast<int32_t>(length);
}

}  // namespace hattn
