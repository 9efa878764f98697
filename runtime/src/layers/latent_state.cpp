#include <algorithm>
#include <string>
#include <utility>

#include "hattn/error.h"
#include "hattn/layers/latent_attention.h"

namespace hattn {

LatentState::LatentState(LayerIdentity maker, KVCache kv, Tensor qk_history, Tensor first_value)
    : maker_(maker), kv_(std::move(kv)), qk_history_(std::move(qk_history)), first_value_(std::move(first_value)) {
    if (first_value_.size() > 0) {
        prev_value_ = Tensor({batch(), first_value_.size()});
        for (int64_t b = 0; b < batch(); b++) clear_rows(b);
    }
    // On a GPU the state's rows are read and written there, and mirrored to the host.
    qk_history_.keep_on_device();
    prev_value_.keep_on_device();
}

void LatentState::clear_rows(int64_t sequence) {
    const int64_t history = history_floats(), half = first_value_.size();
    std::fill_n(qk_history_.data() + sequence * history, history, 0.0f);
    qk_history_.host_changed(sequence * history, (sequence + 1) * history);
    if (half == 0) return;
    std::copy_n(first_value_.data(), half, prev_value_.data() + sequence * half);
    prev_value_.host_changed(sequence * half, (sequence + 1) * half);
}

void LatentState::reset() {
    kv_.reset();
    for (int64_t b = 0; b < batch(); b++) clear_rows(b);
}

void LatentState::reset(int64_t sequence) {
    kv_.reset(sequence);  // checks the sequence first
    clear_rows(sequence);
}

void LatentState::fork(int64_t source, int64_t target) { assign_sequence(target, *this, source); }

void LatentState::assign_sequence(int64_t target, const LatentState &from, int64_t source) {
    // Another layer's rows differ in width, or in what they mean where the widths agree.
    require(from.maker_ == maker_, "latent state: cannot take a sequence from a state another layer made");
    kv_.assign_sequence(target, from.kv_, source);  // checks the sequences first (its messages name the latent state)
    if (&from == this && source == target) return;
    for (auto [to, rows] : {std::pair<Tensor *, const Tensor *>{&qk_history_, &from.qk_history_},
                            {&prev_value_, &from.prev_value_}}) {
        const int64_t n = to->size() / batch();
        if (n == 0) continue;
        std::copy_n(rows->data() + source * n, n, to->data() + target * n);
        to->host_changed(target * n, (target + 1) * n);
    }
}

}  // namespace hattn
