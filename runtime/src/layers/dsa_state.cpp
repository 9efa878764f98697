#include <algorithm>
#include <string>
#include <utility>

#include "hattn/error.h"
#include "hattn/layers/dsa_attention.h"

namespace hattn {

DsaState::DsaState(LayerIdentity maker, int64_t batch, int64_t capacity, StorageTypes types, int64_t latent_dim,
                   int64_t rotary_dim, int64_t index_dim)
    : maker_(maker),
      lengths_("glm_dsa state", batch, capacity),
      latent_(types.kv_dtype, batch, capacity, latent_dim, int8_group),
      rotary_(types.dtype, batch, capacity, rotary_dim),
      index_keys_(types.dtype, batch, capacity, index_dim) {}

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
    for (auto [to, rows] : {std::pair<StoredRows *, const StoredRows *>{&latent_, &from.latent_},
                            {&rotary_, &from.rotary_},
                            {&index_keys_, &from.index_keys_}}) {
        to->copy_rows(target, *rows, source, len);
    }
    lengths_.assign(target, len);
}

}  // namespace hattn
