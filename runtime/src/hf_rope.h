// RoPE as a Hugging Face config.json states it, for the attention layers that read HF keys.
#pragma once

#include "hattn/config.h"
#include "hattn/kernels/rope.h"

namespace hattn::detail {

struct HfRope {
    double theta;
    RopeScaling scaling;
};

// `rope_theta` (else `fallback`), which transformers 5 writes inside `rope_parameters` and 4 wrote
// beside `rope_scaling`, and the scaling either object names: default, linear or llama3. Any other
// (yarn, dynamic, longrope, ...) is refused, naming the key.
HfRope hf_rope(const ConfigReader &config, double fallback);

}  // namespace hattn::detail
