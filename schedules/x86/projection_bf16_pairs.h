// The x86 GEMM over bf16 pairs (Projection's bf16_pairs algorithm): AVX512-BF16's vdpbf16ps.
#pragma once

#include "Halide.h"
#include "generators/projection.h"
#include "schedules/cpu/projection_tiled.h"

namespace hattn::schedules::x86 {

void schedule_projection_bf16_pairs(Projection &g, const Halide::Target &t, cpu::ProjectionBlocks blocks);

}  // namespace hattn::schedules::x86
