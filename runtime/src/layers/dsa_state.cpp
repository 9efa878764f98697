#include <algorithm>
#include <limits>
#include <string>

#include "hattn/error.h"
#include "hattn/layers/dsa_attention.h"

namespace hattn {

DsaState::DsaState(int64_t batch, int64_t capacity, int64_t latent_width, int64_t index_dim) : capacity_(capacity) {
    require(batch > 0 && capacity > 0, "glm_dsa: state batch and capacity must be positive, got batch " +
                                           std::to_string(batch) + ", capacity " + std::to_string(capacity));
    require(capacity <= std::numeric_limits<int32_t>::max(), "glm_dsa: state capacity too large");
    lengths_.assign(batch, 0);
    latent_ = Tensor({batch, capacity, latent_width});
    index_keys_ = Tensor({batch, capacity, index_dim});
    // On a GPU both caches stay on the device; each step uploads only its new rows.
    latent_.keep_on_device();
    index_keys_.keep_on_device();
}

void DsaState::check_sequence(int64_t sequence, const char *call) const {
    require(sequence >= 0 && sequence < batch(), std::string("glm_dsa state ") + call + ": sequence " +
                                                     std::to_string(sequence) + " outside batch " + std::to_string(batch()));
}

void DsaState::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

void DsaState::truncate_to(int64_t length) {
    for (int64_t b = 0; b < batch(); b++) truncate_to(length, b);
}

void DsaState::truncate_to(int64_t length, int64_t sequence) {
    require(length >= 0 && length <= capacity_, "glm_dsa state: cannot truncate to " + std::to_string(length) +
                                                    " tokens (capacity " + std::to_string(capacity_) + ")");
    check_sequence(sequence, "truncate");
    lengths_[sequence] = std::min<int32_t>(lengths_[sequence], static_cast<int32_t>(length));
}

void DsaState::fork(int64_t source, int64_t target) {
    check_sequence(source, "fork");
    check_sequence(target, "fork");
    if (source == target) return;
    const int64_t len = lengths_[source];
    for (Tensor *rows : {&latent_, &index_keys_}) {
        const int64_t width = rows->dim(2), per_sequence = capacity_ * width;
        std::copy_n(rows->data() + source * per_sequence, len * width, rows->data() + target * per_sequence);
        rows->host_changed(target * per_sequence, target * per_sequence + len * width);
    }
    lengths_[target] = static_cast<int32_t>(len);
}

}  // namespace hattn
