// Checks that run through any layer with a per-batch state (KVCache, LatentState, DsaState):
// continuous batching (a sequence prefilled elsewhere moved into a batch's slot gives what it gives
// alone) and one layer shared by threads that each have a state.
#pragma once

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hattn/error.h"
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
    std::function<State(int64_t batch, int64_t capacity)> make_state;
    std::function<Tensor(const Tensor &, State &)> prefill, decode_step;
};

// Two sequences prefill and decode in one state; the second then finishes, and a new prompt,
// prefilled as the second sequence of a state of its own (another capacity), takes its slot; the
// batch decodes on. Returns the worst relative L2 difference between a batch row and its sequence
// run alone.
template <typename State>
double continuous_batching_error(const StatefulLayer<State> &layer, int64_t E, uint32_t seed) {
    const Tensor first = random_tensor({2, 3, E}, seed), prompts = random_tensor({2, 4, E}, seed + 1);
    std::vector<Tensor> before, after;  // decode tokens [2, 1, E] before and after the swap
    for (uint32_t i = 0; i < 2; i++) before.push_back(random_tensor({2, 1, E}, seed + 2 + i));
    for (uint32_t i = 0; i < 3; i++) after.push_back(random_tensor({2, 1, E}, seed + 10 + i));

    State batch = layer.make_state(2, 32);
    layer.prefill(first, batch);
    for (const Tensor &x : before) layer.decode_step(x, batch);
    State newcomers = layer.make_state(2, 12);
    layer.prefill(prompts, newcomers);
    batch.assign_sequence(1, newcomers, 1);

    State kept = layer.make_state(1, 32), alone = layer.make_state(1, 32);
    layer.prefill(sequence(first, 0), kept);
    for (const Tensor &x : before) layer.decode_step(sequence(x, 0), kept);
    layer.prefill(sequence(prompts, 1), alone);
    double worst = 0;
    for (const Tensor &x : after) {
        const Tensor y = layer.decode_step(x, batch);
        worst = std::max(worst, relative_l2(sequence(y, 0), layer.decode_step(sequence(x, 0), kept)));
        worst = std::max(worst, relative_l2(sequence(y, 1), layer.decode_step(sequence(x, 1), alone)));
    }
    return worst;
}

// A decode step on `step` [2, 1, E] and a prefill of `prompt` [2, S, E], after a prompt of 3
// tokens, must both be refused and leave the state as if neither call had been made: returns the
// two messages ("(no error)" where one was not refused), and in `divergence` the difference from
// a state that never saw them.
template <typename State>
std::vector<std::string> refused_call_messages(const StatefulLayer<State> &layer, const Tensor &step, const Tensor &prompt,
                                               uint32_t seed, double &divergence) {
    const int64_t E = step.dim(2);
    const Tensor first = random_tensor({2, 3, E}, seed), next = random_tensor({2, 1, E}, seed + 1);
    State state = layer.make_state(2, 8), clean = layer.make_state(2, 8);
    layer.prefill(first, state);
    layer.prefill(first, clean);
    std::vector<std::string> messages;
    for (auto [x, call] : {std::pair{&step, &layer.decode_step}, {&prompt, &layer.prefill}}) {
        try {
            (*call)(*x, state);
            messages.push_back("(no error)");
        } catch (const Error &e) {
            messages.push_back(e.what());
        }
    }
    EXPECT_EQ(state.lengths(), clean.lengths());
    divergence = relative_l2(layer.decode_step(next, state), layer.decode_step(next, clean));
    return messages;
}

// A decode step whose input holds a NaN and a prefill whose input holds an infinity.
template <typename State>
std::vector<std::string> non_finite_input_messages(const StatefulLayer<State> &layer, int64_t E, uint32_t seed,
                                                   double &divergence) {
    Tensor bad_step = random_tensor({2, 1, E}, seed + 1), bad_prompt = random_tensor({2, 2, E}, seed + 2);
    bad_step.data()[E + 5] = std::nanf("");
    bad_prompt.data()[3] = std::numeric_limits<float>::infinity();
    return refused_call_messages(layer, bad_step, bad_prompt, seed, divergence);
}

// Finite input that overflows float32 in the layer: a decode step whose input is -3e38 throughout,
// and a prefill whose input is 3e38 throughout.
template <typename State>
std::vector<std::string> overflowing_input_messages(const StatefulLayer<State> &layer, int64_t E, uint32_t seed,
                                                    double &divergence) {
    const Tensor huge_step({2, 1, E}, std::vector<float>(2 * E, -3e38f));
    const Tensor huge_prompt({2, 2, E}, std::vector<float>(4 * E, 3e38f));
    return refused_call_messages(layer, huge_step, huge_prompt, seed, divergence);
}

// Threads share the layer, each with a state of its own, and each runs prefill then decode steps
// on a sequence longer than the last thread's, `rounds` times; the layer is fresh, so its RoPE table
// grows while other threads' kernels read it. Returns the worst relative L2 difference from the
// same sequences run on this thread afterwards; an exception on a thread is rethrown here.
template <typename State>
double shared_by_threads_error(const StatefulLayer<State> &layer, int64_t E, uint32_t seed, int threads = 4,
                               int rounds = 3) {
    const auto run = [&](const Tensor &x) {
        State state = layer.make_state(1, 32);
        const int64_t S = x.dim(1), prompt = S / 2;
        Tensor out({1, S, E});
        const Tensor first = layer.prefill(x.tokens(0, prompt), state);
        std::copy_n(first.data(), first.size(), out.data());
        for (int64_t s = prompt; s < S; s++) {
            const Tensor y = layer.decode_step(x.tokens(s, s + 1), state);
            std::copy_n(y.data(), y.size(), out.data() + s * E);
        }
        return out;
    };
    std::vector<Tensor> inputs;
    for (int i = 0; i < threads; i++) inputs.push_back(random_tensor({1, 6 + 5 * i, E}, seed + i));
    std::vector<std::vector<Tensor>> outputs(threads);
    std::vector<std::exception_ptr> errors(threads);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; i++) {
        pool.emplace_back([&, i] {
            try {
                for (int r = 0; r < rounds; r++) outputs[i].push_back(run(inputs[i]));
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (std::thread &t : pool) t.join();
    for (const std::exception_ptr &e : errors) {
        if (e) std::rethrow_exception(e);
    }
    double worst = 0;
    for (int i = 0; i < threads; i++) {
        const Tensor expected = run(inputs[i]);
        for (const Tensor &out : outputs[i]) worst = std::max(worst, relative_l2(out, expected));
    }
    return worst;
}

}  // namespace hattn::testing
