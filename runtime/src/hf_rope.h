// The RoPE base of a Hugging Face config.json, as the attention layers that read HF keys take it.
#pragma once

#include "hattn/config.h"

namespace hattn::detail {

// `rope_theta` (else `fallback`), which transformers 5 writes inside `rope_parameters` and 4 wrote
// beside `rope_scaling`. Either object may name a scaling type (llama3, yarn, linear, ...), which
// these layers do not implement: anything but the default is refused, naming the key.
double hf_rope_theta(const ConfigReader &config, double fallback);

}  // namespace hattn::detail
