// RoPE as a Hugging Face config.json states it, for the attention layers that read HF keys.
#pragma once

#include <optional>
#include <string>

#include "hattn/config.h"
#include "hattn/kernels/rope.h"

namespace hattn::detail {

struct HfRope {
    double theta;
    double partial_rotary_factor;
    RopeScaling scaling;  // Type::None unless the caller allows scaling
};

// What a layer takes from its model's config.json.
struct HfRopeDefaults {
    double theta;                        // when rope_theta is absent
    double partial_rotary_factor = 1.0;  // when partial_rotary_factor is absent
    bool scaling_allowed = false;        // linear, llama3 and yarn rope types (else only the default)
    // transformers 5 may nest rope_parameters per layer type: the type whose entry to read
    // ("hybrid" for ZAYA), or "" where the model has one type.
    std::string layer_type;
    // longrope and dynamic too: a layer that picks its table per call (by the call's last position)
    bool per_call_allowed = false;
    // The config class's original_max_position_embeddings where the config leaves it out (Phi-3:
    // 4096); none: max_position_embeddings.
    std::optional<double> original_context = std::nullopt;
    // Dynamic scaling's alpha (Hunyuan's rotary embedding; transformers' others ignore the key).
    bool reads_alpha = false;
};

// The object that says a config's RoPE: transformers 5's rope_parameters (its entry for
// `layer_type` where nested by layer type), else 4's rope_scaling; none where neither is given.
std::optional<ConfigReader> rope_object(const ConfigReader &config, const std::string &layer_type = "");

// `rope_theta` and `partial_rotary_factor` at the top level, or (transformers 5) inside
// `rope_parameters`, and the scaling named there or in transformers 4's `rope_scaling` (both
// with a scaling: refused). A scaling the layer does not implement (longrope and dynamic unless
// per_call_allowed, any when !scaling_allowed, other types) is refused, naming the key.
HfRope hf_rope(const ConfigReader &config, const HfRopeDefaults &defaults);

}  // namespace hattn::detail
