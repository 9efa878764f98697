#pragma once

#include "generators/cca/qk_latent.h"

namespace hattn::schedules::cpu {

// The grouped conv per block of tokens (its depthwise input computed for that block only), in
// register tiles of 2 vectors of a group's output channels x `tokens` tokens; the outputs
// parallel over tokens.
void schedule_cca_qk_latent(CcaQkLatent &g, const Halide::Target &t, int tokens);

}  // namespace hattn::schedules::cpu
