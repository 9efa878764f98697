// The checks every per-batch state (KVCache, LatentState, DsaState) makes of the sequences a call
// names, worded alike: "<what>: <role> 3 outside batch 2".
#pragma once

#include <cstdint>
#include <string>

#include "hattn/error.h"

namespace hattn::detail {

inline void require_sequence(const std::string &what, int64_t sequence, int64_t batch, const char *role = "sequence") {
    require(sequence >= 0 && sequence < batch,
            what + ": " + role + " " + std::to_string(sequence) + " outside batch " + std::to_string(batch));
}

// Source sequence `source`, of `tokens` tokens, copied into a state of `capacity` per sequence.
inline void require_fits(const std::string &what, int64_t source, int64_t tokens, int64_t capacity) {
    require(tokens <= capacity, what + ": source sequence " + std::to_string(source) + " holds " +
                                    std::to_string(tokens) + " tokens, more than the capacity " +
                                    std::to_string(capacity));
}

}  // namespace hattn::detail
