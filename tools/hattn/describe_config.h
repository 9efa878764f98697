// hattn inspect CONFIG.json: what the cached_attention layer reads from a model's config, layer by
// layer, so that a user sees how each layer will run (or the one line that refuses it) before
// loading any weights.
#pragma once

#include <string>

namespace hattn::cli {

// Prints the config's attention, grouping consecutive layers that read the same; throws
// hattn::Error (one line) where the layer refuses the config.
void describe_attention_config(const std::string &path);

}  // namespace hattn::cli
