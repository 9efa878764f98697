#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "hattn/error.h"
#include "hattn/layers/dsa_attention.h"
#include "sequence_checks.h"

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

void DsaState::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

void DsaState::reset(int64_t sequence) { truncate_to(0, sequence); }

void DsaState::truncate_to(int64_t length) {
    for (int64_t b = 0; b < batch(); b++) truncate_to(length, b);
}

void DsaState::truncate_to(int64_t length, int64_t sequence) {
    require(length >= 0 && length <= capacity_, "glm_dsa state: cannot truncate to " + std::to_string(length) +
                                                    " tokens (capacity " + std::to_string(capacity_) + ")");
    detail::require_sequence("glm_dsa state", sequence, batch());
    lengths_[sequence] = std::min<int32_t>(lengths_[sequence], static_cast<int32_t>(length));
}

void DsaState::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void DsaState::assign_sequence(int64_t target, const DsaState &from, int64_t source) {
    require(from.latent_.dim(2) == latent_.dim(2) && from.index_keys_.dim(2) == index_keys_.dim(2),
            "glm_dsa state: cannot take a sequence from a state of another layer shape");
    detail::require_sequence("glm_dsa state", source, from.batch(), "source sequence");
    detail::require_sequence("glm_dsa state", target, batch());
    const int64_t len = from.lengths_[source];
    detail::require_fits("glm_dsa state", source, len, capacity_);
    if (&from == this && source == target) return;
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&latent_, &from.latent_}, {&index_keys_, &from.index_keys_}}) {
        const int64_t width = to->dim(2), first = target * capacity_ * width;
        std::copy_n(rows->data() + source * from.capacity_ * width, len * width, to->data() + first);
        to->host_changed(first, first + len * width);
    }
    lengths_[target] = static_cast<int32_t>(len);
}

}  // namespace hattn
