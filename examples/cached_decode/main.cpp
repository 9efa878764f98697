// An application's use of hattn: load a cached attention layer from safetensors, prefill a prompt,
// then decode token by token through the KV cache, and check that the result equals one pass over
// the whole sequence. Exits 0 when it does; any hattn::Error is one line on stderr.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include <unistd.h>

#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/safetensors_writer.h"

namespace {

hattn::Tensor random_tensor(const hattn::Shape &shape, std::mt19937 &rng, float amplitude) {
    hattn::Tensor t(shape);
    std::uniform_real_distribution<float> uniform(-amplitude, amplitude);
    for (float &v : t.values()) v = uniform(rng);
    return t;
}

// ||a - b|| / ||b||
double relative_l2(const hattn::Tensor &a, const hattn::Tensor &b) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < b.values().size(); i++) {
        diff += std::pow(double(a.values()[i]) - b.values()[i], 2);
        norm += std::pow(double(b.values()[i]), 2);
    }
    return std::sqrt(diff / norm);
}

int run(const std::string &weights_path) {
    const int64_t E = 64, B = 2, S = 12, prompt = 5;
    std::mt19937 rng(7);
    // GQA: 8 query heads share 2 KV heads of dimension 8, with RoPE, under the seed's names.
    const hattn::ConfigReader config = hattn::ConfigReader::parse(R"({
        "embedding_dimension": 64, "number_of_heads": 8, "head_dimension": 8, "number_of_key_value_heads": 2,
        "attention_type": "grouped_query", "bias": false, "rope_base": 10000.0})",
                                                                  "example");
    const float a = 1.0f / std::sqrt(float(E));
    hattn::write_safetensors(weights_path, {{"query_projection.weight", random_tensor({64, E}, rng, a)},
                                            {"key_projection.weight", random_tensor({16, E}, rng, a)},
                                            {"value_projection.weight", random_tensor({16, E}, rng, a)},
                                            {"output_projection.weight", random_tensor({E, 64}, rng, a)}});
    hattn::CachedAttention layer(hattn::CachedAttentionConfig::from(config),
                                 hattn::Weights::open(weights_path));

    const hattn::Tensor x = random_tensor({B, S, E}, rng, 1.0f);
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

    const double error = relative_l2(stepped, one_pass);
    std::printf("prefill %lld + %lld decode steps vs one pass: relative L2 %.2e\n", (long long)prompt,
                (long long)(S - prompt), error);
    return error <= 1e-5 ? 0 : 1;
}

}  // namespace

int main() {
    const std::string weights = (std::filesystem::temp_directory_path() /
                                 ("cached_decode_" + std::to_string(::getpid()) + ".safetensors")).string();
    int status = 1;
    try {
        status = run(weights);
    } catch (const hattn::Error &e) {
        std::fprintf(stderr, "cached_decode: %s\n", e.what());
    }
    std::filesystem::remove(weights);
    return status;
}
