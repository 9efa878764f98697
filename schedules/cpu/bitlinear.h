#pragma once

#include "generators/bitlinear.h"
#include "generators/bitlinear_quantize.h"

namespace hattn::schedules::cpu {

// How the dot-product unit groups a step of packed bytes: `products` byte products summed into
// each int32 lane (4 for vpdpbusd and sdot, 2 for vpmaddwd), over steps of `bytes` packed bytes
// (a divisor of BitLinear::k_multiple / 4).
struct BitLinearLanes {
    int bytes, products;
};

// Parallel over outputs; every dot product is a vectorised reduction over packed bytes (atomic),
// which the backends lower to their dot-product units.
void schedule_bitlinear(BitLinear &g, const Halide::Target &t, BitLinearLanes step);

// Per row: the peak and the sum as vectorised reductions, the quantised row vectorised.
void schedule_bitlinear_quantize(BitLinearQuantize &g, const Halide::Target &t);

}  // namespace hattn::schedules::cpu
