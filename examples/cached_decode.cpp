// An application's use of hattn: load a cached attention layer from safetensors, prefill a prompt,
// then decode token by token through the KV cache, and check that the result equals one pass over
// the whole sequence. Exits 0 when it does; any hattn::Error is one line on stderr.
#include <algorithm>
#include <cstdio>
#include <random>

#include "example_layer.h"

namespace {

using example::E;

int run() {
    const int64_t B = 2, S = 12, prompt = 5;
    std::mt19937 rng(7);
    const hattn::CachedAttention layer = example::gqa_layer(rng);

    const hattn::Tensor x = example::random_tensor({B, S, E}, rng, 1.0f);
    const hattn::Tensor one_pass = layer.self_attention(x);

    hattn::KVCache cache = layer.make_cache(B, S);
    hattn::Tensor stepped({B, S, E});
    const auto place = [&](const hattn::Tensor &y, int64_t first) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < y.dim(1); s++)
                std::copy_n(y.data() + (b * y.dim(1) + s) * E, E, stepped.data() + (b * S + first + s) * E);
    };
    place(layer.self_attention(x.tokens(0, prompt), &cache), 0);
    for (int64_t t = prompt; t < S; t++) place(layer.decode_step(x.tokens(t, t + 1), cache), t);

    // A full cache refuses one more token, with a message, and keeps what it holds.
    try {
        layer.decode_step(x.tokens(0, 1), cache);
        std::fprintf(stderr, "cached_decode: a full cache accepted another token\n");
        return 1;
    } catch (const hattn::Error &e) {
        std::printf("full cache: %s\n", e.what());
    }

    const double error = example::relative_l2(stepped, one_pass);
    std::printf("prefill %lld + %lld decode steps vs one pass: relative L2 %.2e\n", (long long)prompt,
                (long long)(S - prompt), error);
    return error <= 1e-5 ? 0 : 1;
}

}  // namespace

int main() { return example::main_reporting_errors("cached_decode", run); }
