// Continuous batching with hattn: a batch of slots decodes one token per sequence per step. When a
// request finishes, its slot is free; the next request is prefilled in a cache of its own and moved
// into the slot (KVCache::assign_sequence), and the batch decodes on without waiting for the
// others. Each request's outputs must equal its run alone. Exits 0 when they do.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "example_layer.h"

namespace {

using example::E;

struct Request {
    int64_t prompt;       // tokens prefilled at once
    hattn::Tensor input;  // [1, n, E]: the prompt, then one token per decode step
    hattn::Tensor output;  // [1, n, E]
};

void copy_token(const hattn::Tensor &from, int64_t from_row, hattn::Tensor &to, int64_t to_row) {
    std::copy_n(from.data() + from_row * E, E, to.data() + to_row * E);
}

// The request alone: prefill its prompt, then decode the rest.
hattn::Tensor run_alone(const hattn::CachedAttention &layer, const Request &r, int64_t capacity) {
    const int64_t n = r.input.dim(1);
    hattn::KVCache cache = layer.make_cache(1, capacity);
    hattn::Tensor out({1, n, E});
    const hattn::Tensor first = layer.self_attention(r.input.tokens(0, r.prompt), &cache);
    std::copy_n(first.data(), first.size(), out.data());
    for (int64_t t = r.prompt; t < n; t++) copy_token(layer.decode_step(r.input.tokens(t, t + 1), cache), 0, out, t);
    return out;
}

int run() {
    std::mt19937 rng(11);
    const hattn::CachedAttention layer = example::gqa_layer(rng);
    const int64_t slots = 2, capacity = 32;
    std::vector<Request> requests;
    for (auto [prompt, total] : {std::pair<int64_t, int64_t>{3, 7}, {5, 6}, {2, 9}, {4, 5}, {6, 8}}) {
        requests.push_back({prompt, example::random_tensor({1, total, E}, rng, 1.0f), hattn::Tensor({1, total, E})});
    }

    hattn::KVCache batch = layer.make_cache(slots, capacity);
    std::vector<int> request_in(slots, -1);  // the request each slot serves, -1: free
    std::vector<int64_t> next(slots, 0);     // that request's next token
    size_t admitted = 0;
    int steps = 0;
    const auto free_slot = [&](int64_t s) {
        request_in[s] = -1;
        batch.reset(s);
        if (batch.lengths()[s] != 0) throw hattn::Error("continuous_batching: reset left tokens in slot " + std::to_string(s));
    };
    while (true) {
        for (int64_t s = 0; s < slots; s++) {
            if (request_in[s] >= 0 || admitted == requests.size()) continue;
            Request &r = requests[admitted];
            hattn::KVCache own = layer.make_cache(1, capacity);
            const hattn::Tensor y = layer.self_attention(r.input.tokens(0, r.prompt), &own);
            std::copy_n(y.data(), y.size(), r.output.data());
            batch.assign_sequence(s, own);
            request_in[s] = static_cast<int>(admitted++);
            next[s] = r.prompt;
            if (next[s] == r.input.dim(1)) free_slot(s);  // a request with nothing to decode
        }
        if (std::all_of(request_in.begin(), request_in.end(), [](int r) { return r < 0; })) break;

        // One step for the whole batch; a free slot decodes zeros and is emptied again after.
        hattn::Tensor x({slots, 1, E});
        for (int64_t s = 0; s < slots; s++) {
            if (request_in[s] >= 0) copy_token(requests[request_in[s]].input, next[s], x, s);
        }
        const hattn::Tensor y = layer.decode_step(x, batch);
        steps++;
        for (int64_t s = 0; s < slots; s++) {
            if (request_in[s] < 0) {
                free_slot(s);  // the zeros it decoded are not kept
                continue;
            }
            Request &r = requests[request_in[s]];
            copy_token(y, s, r.output, next[s]++);
            if (next[s] == r.input.dim(1)) free_slot(s);  // finished
        }
    }

    double worst = 0;
    for (const Request &r : requests) worst = std::max(worst, example::relative_l2(r.output, run_alone(layer, r, capacity)));
    std::printf("%zu requests through %lld slots in %d decode steps: worst relative L2 against each alone %.2e\n",
                requests.size(), (long long)slots, steps, worst);
    return worst <= 1e-5 ? 0 : 1;
}

}  // namespace

int main() { return example::main_reporting_errors("continuous_batching", run); }
