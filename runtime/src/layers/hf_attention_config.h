// A Hugging Face model's config.json read as the cached attention layer's config.
#pragma once

#include <cstdint>
#include <optional>

#include "hattn/config.h"
#include "hattn/layers/cached_attention.h"

namespace hattn::detail {

// The attention of layer `layer` (when the model's layers differ by index, it is needed) of the
// model types CachedAttentionConfig::from lists; others are refused by name.
CachedAttentionConfig hugging_face_attention_config(const ConfigReader &config, std::optional<int64_t> layer);

}  // namespace hattn::detail
