// Continuous batching through any layer with a per-batch state: the check that moving a sequence
// prefilled elsewhere into a batch's slot (assign_sequence) gives each sequence what it gets alone.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "hattn/tensor.h"
#include "support/compare.h"
#include "support/random.h"

namespace hattn::testing {

// Sequence b of a [B, S, E] tensor, as [1, S, E].
inline Tensor sequence(const Tensor &t, int64_t b) {
    const int64_t n = t.dim(1) * t.dim(2);
    return Tensor({1, t.dim(1), t.dim(2)}, std::vector<float>(t.data() + b * n, t.data() + (b + 1) * n));
}

template <typename State>
struct StatefulLayer {
    std::function<State(int64_t batch)> make_state;
    std::function<Tensor(const Tensor &, State &)> prefill, decode_step;
};

// Two sequences prefill and decode in one state; the second then finishes, and a new prompt,
// prefilled in a state of its own, takes its slot; the batch decodes on. Returns the worst
// relative L2 difference between a batch row and its sequence run alone.
template <typename State>
double continuous_batching_error(const StatefulLayer<State> &layer, int64_t E, uint32_t seed) {
    const Tensor first = random_tensor({2, 3, E}, seed), prompt = random_tensor({1, 4, E}, seed + 1);
    std::vector<Tensor> before, after;  // decode tokens [2, 1, E] before and after the swap
    for (uint32_t i = 0; i < 2; i++) before.push_back(random_tensor({2, 1, E}, seed + 2 + i));
    for (uint32_t i = 0; i < 3; i++) after.push_back(random_tensor({2, 1, E}, seed + 10 + i));

    State batch = layer.make_state(2);
    layer.prefill(first, batch);
    for (const Tensor &x : before) layer.decode_step(x, batch);
    State newcomer = layer.make_state(1);
    layer.prefill(prompt, newcomer);
    batch.assign_sequence(1, newcomer, 0);

    State kept = layer.make_state(1), alone = layer.make_state(1);
    layer.prefill(sequence(first, 0), kept);
    for (const Tensor &x : before) layer.decode_step(sequence(x, 0), kept);
    layer.prefill(prompt, alone);
    double worst = 0;
    for (const Tensor &x : after) {
        const Tensor y = layer.decode_step(x, batch);
        worst = std::max(worst, relative_l2(sequence(y, 0), layer.decode_step(sequence(x, 0), kept)));
        worst = std::max(worst, relative_l2(sequence(y, 1), layer.decode_step(sequence(x, 1), alone)));
    }
    return worst;
}

}  // namespace hattn::testing
