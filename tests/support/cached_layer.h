// A seed-named cached attention layer with seeded random weights, and its float64 reference's
// weights, for the layer's tests.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "hattn/layers/cached_attention.h"
#include "hattn/safetensors_writer.h"
#include "reference/cached_attention.h"
#include "support/random.h"
#include "support/temp_dir.h"

namespace hattn::testing {

struct Shape4 {
    int64_t E, H, Hkv, D;
    bool bias;
    std::optional<double> rope_base;
};

// A layer with seeded random weights, written to and loaded from a safetensors file.
struct TestLayer {
    reference::CachedAttentionWeights ref;
    std::optional<CachedAttention> layer;
    std::map<std::string, Tensor> tensors;  // the weights under the seed's names

    explicit TestLayer(Shape4 s, uint32_t seed = 1) {
        ref.E = s.E, ref.H = s.H, ref.Hkv = s.Hkv, ref.D = s.D, ref.rope_base = s.rope_base;
        auto scaled = [](Shape shape, uint32_t sd) {
            Tensor t = random_tensor(shape, sd);
            for (int64_t i = 0; i < t.size(); i++) t.data()[i] *= 0.3f;
            return t;
        };
        ref.wq = scaled({s.H * s.D, s.E}, seed);
        ref.wk = scaled({s.Hkv * s.D, s.E}, seed + 1);
        ref.wv = scaled({s.Hkv * s.D, s.E}, seed + 2);
        ref.wo = scaled({s.E, s.H * s.D}, seed + 3);
        tensors = {{"query_projection.weight", ref.wq},
                   {"key_projection.weight", ref.wk},
                   {"value_projection.weight", ref.wv},
                   {"output_projection.weight", ref.wo}};
        if (s.bias) {
            ref.bq = scaled({s.H * s.D}, seed + 4);
            ref.bk = scaled({s.Hkv * s.D}, seed + 5);
            ref.bv = scaled({s.Hkv * s.D}, seed + 6);
            ref.bo = scaled({s.E}, seed + 7);
            tensors.insert({{"query_projection.bias", *ref.bq}, {"key_projection.bias", *ref.bk},
                            {"value_projection.bias", *ref.bv}, {"output_projection.bias", *ref.bo}});
        }
        TempDir dir;
        write_safetensors(dir.file("w.safetensors"), tensors);
        CachedAttentionConfig config;
        config.embedding_dimension = s.E, config.heads = s.H, config.kv_heads = s.Hkv;
        config.head_dimension = s.D, config.bias = config.output_bias = s.bias, config.rope_base = s.rope_base;
        layer.emplace(config, Weights::open(dir.file("w.safetensors")));
    }

    // The same weights under another config (a window, another scale).
    CachedAttention with_config(const CachedAttentionConfig &config) const {
        TempDir dir;
        write_safetensors(dir.file("w.safetensors"), tensors);
        return CachedAttention(config, Weights::open(dir.file("w.safetensors")));
    }
};

}  // namespace hattn::testing
