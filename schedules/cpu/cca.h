#pragma once

#include "generators/cca/qk_latent.h"

namespace hattn::schedules::cpu {

// The grouped conv per block of tokens (its depthwise input computed for that block only),
// vectorised over each group's output channels; the outputs parallel over tokens.
void schedule_cca_qk_latent(CcaQkLatent &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
