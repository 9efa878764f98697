#include <algorithm>
#include <string>
#include <utility>

#include "hattn/error.h"
#include "hattn/layers/dsa_attention.h"

namespace hattn {

DsaState::DsaState(LayerIdentity maker, int64_t batch, int64_t capacity, int64_t latent_width, int64_t index_dim)
    : maker_(maker),
      lengths_("glm_dsa state", batch, capacity),
      latent_({batch, capacity, latent_width}),
      index_keys_({batch, capacity, index_dim}) {
    // On a GPU both caches stay on the device; each step uploads only its new rows.
    latent_.keep_on_device();
    index_keys_.keep_on_device();
}

void DsaState::reset() { lengths_.reset(); }
void DsaState::reset(int64_t sequence) { lengths_.reset(sequence); }
void DsaState::truncate_to(int64_t length) { lengths_.truncate_to(length); }
void DsaState::truncate_to(int64_t length, int64_t sequence) { lengths_.truncate_to(length, sequence); }

void DsaState::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void DsaState::assign_sequence(int64_t target, const DsaState &from, int64_t source) {
    // Another layer's rows differ in width, or in what they mean where the widths agree.
    require(from.maker_ == maker_, "glm_dsa state: cannot take a sequence from a state another layer made");
    const int64_t len = lengths_.check_assign(target, from.lengths_, source);
    if (&from == this && source == target) return;
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&latent_, &from.latent_}, {&index_keys_, &from.index_keys_}}) {
        const int64_t width = to->dim(2), first = target * capacity() * width;
        std::copy_n(rows->data() + source * from.capacity() * width, len * width, to->data() + first);
        to->host_changed(first, first + len * width);
    }
    lengths_.assign(target, len);
}

}  // namespace hattn
