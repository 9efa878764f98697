// What the examples share: layers with random weights, written to a safetensors file and loaded
// back the way an application loads a checkpoint, and a comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <system_error>

#include <unistd.h>

#include "hattn/error.h"
#include "hattn/layers/cached_attention.h"
#include "hattn/safetensors_writer.h"

namespace example {

constexpr int64_t E = 64;  // hidden size: 8 query heads share 2 KV heads of dimension 8

inline hattn::Tensor random_tensor(const hattn::Shape &shape, std::mt19937 &rng, float amplitude) {
    hattn::Tensor t(shape);
    std::uniform_real_distribution<float> uniform(-amplitude, amplitude);
    for (int64_t i = 0; i < t.size(); i++) t.data()[i] = uniform(rng);
    return t;
}

// ||a - b|| / ||b||, or infinity where a holds a NaN or an infinity (so any bound rejects it).
inline double relative_l2(const hattn::Tensor &a, const hattn::Tensor &b) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < b.values().size(); i++) {
        if (!std::isfinite(a.values()[i])) return INFINITY;
        diff += std::pow(double(a.values()[i]) - b.values()[i], 2);
        norm += std::pow(double(b.values()[i]), 2);
    }
    return std::sqrt(diff / norm);
}

// A layer of `config` whose weights, `tensors`, are written to a temporary file and opened under
// `prefix` the way an application opens a checkpoint (the file is removed once the layer has
// loaded what it needs).
inline hattn::CachedAttention layer_from_file(const hattn::ConfigReader &config,
                                              const std::map<std::string, hattn::Tensor> &tensors,
                                              const std::string &prefix = "") {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("hattn_example_" + std::to_string(::getpid()) + ".safetensors")).string();
    struct Remove {  // also after a failed or partial write
        std::string path;
        ~Remove() {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
        }
    } remove{path};
    hattn::write_safetensors(path, tensors);
    return hattn::CachedAttention(config, hattn::Weights::open(path, prefix));
}

// A GQA layer with RoPE under the seed's names.
inline hattn::CachedAttention gqa_layer(std::mt19937 &rng) {
    const hattn::ConfigReader config = hattn::ConfigReader::parse(R"({
        "embedding_dimension": 64, "number_of_heads": 8, "head_dimension": 8, "number_of_key_value_heads": 2,
        "attention_type": "grouped_query", "bias": false, "rope_base": 10000.0})",
                                                                  "example");
    const float a = 1.0f / std::sqrt(float(E));
    return layer_from_file(config, {{"query_projection.weight", random_tensor({64, E}, rng, a)},
                                    {"key_projection.weight", random_tensor({16, E}, rng, a)},
                                    {"value_projection.weight", random_tensor({16, E}, rng, a)},
                                    {"output_projection.weight", random_tensor({E, 64}, rng, a)}});
}

// An example's main: run() and its exit status, any hattn::Error one line on stderr.
inline int main_reporting_errors(const char *name, int (*run)()) {
    try {
        return run();
    } catch (const hattn::Error &e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 1;
    }
}

}  // namespace example
