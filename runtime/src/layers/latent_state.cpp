#include <algorithm>

#include "hattn/layers/latent_attention.h"

namespace hattn {

LatentState::LatentState(KVCache kv, Tensor qk_history, Tensor first_value)
    : kv_(std::move(kv)), qk_history_(std::move(qk_history)), first_value_(std::move(first_value)) {
    if (first_value_.size() > 0) {
        prev_value_ = Tensor({batch(), first_value_.size()});
        for (int64_t b = 0; b < batch(); b++) clear_rows(b);
    }
    // On a GPU the state's rows are read and written there, and mirrored to the host.
    qk_history_.keep_on_device();
    prev_value_.keep_on_device();
}

void LatentState::clear_rows(int64_t sequence) {
    const int64_t history = qk_history_.size() / batch(), half = first_value_.size();
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
    kv_.truncate_to(0, sequence);  // checks the sequence first
    clear_rows(sequence);
}

void LatentState::fork(int64_t source, int64_t target) {
    kv_.fork(source, target);  // checks both sequences first
    for (Tensor *rows : {&qk_history_, &prev_value_}) {
        if (rows->size() == 0 || source == target) continue;
        const int64_t n = rows->size() / batch();
        std::copy_n(rows->data() + source * n, n, rows->data() + target * n);
        rows->host_changed(target * n, (target + 1) * n);
    }
}

}  // namespace hattn
