// A Hugging Face model's config.json read as the cached attention layer's config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hattn/config.h"
#include "hattn/layers/cached_attention.h"

namespace hattn::detail {

// The attention of layer `layer` (when the model's layers differ by index, it is needed) of the
// model types CachedAttentionConfig::from lists; others are refused by name.
CachedAttentionConfig hugging_face_attention_config(const ConfigReader &config, std::optional<int64_t> layer);

// How a model's layers differ by index where a rule says it (every p-th layer, p - 1, 2p - 1, ...,
// reads otherwise than the others): p; 1 where every layer reads alike; 0 where a list in the
// config (layer_types, no_rope_layers) says it.
int64_t hugging_face_layer_period(const ConfigReader &config);

// What the config states that the model's attention ignores on purpose, as transformers does
// (Gemma 3's attn_logit_softcapping): a line each, naming the key and why.
std::vector<std::string> hugging_face_unused_keys(const ConfigReader &config);

}  // namespace hattn::detail
