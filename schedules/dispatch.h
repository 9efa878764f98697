// Chooses the schedule family for a generator's target. Generators call schedules::apply() from
// schedule(); each family implements one `schedule(Kernel &, const Target &)` per kernel in its own
// folder (x86/, arm/, gpu/: CUDA and OpenCL), so tuning one target never touches an algorithm or
// another target. A generator's header declares them with HATTN_SCHEDULED (schedules/scheduled.h),
// and is included before this file.
#pragma once

#include "Halide.h"
#include "generators/common/storage_type.h"
#include "kernel_contract.h"

namespace hattn::schedules {

// A projection's register tile, in rows of x by outputs: the tiles x and W are packed in.
struct ProjectionTile {
    int rows, outputs;
};

// The prefill's query tile (queries that share each K/V chunk load), its key chunk, and the keys
// its QK register tile takes per step, which the CPU algorithm's scores are written in
// (Merge::RunningRows).
struct PrefillTile {
    int queries, key_chunk, key_step;
};

// Besides the schedules, each family chooses the tiles that an algorithm takes as parameters
// (where a generator leaves one to the family).
namespace x86 {
PrefillTile prefill_tile(const Halide::Target &t);
int decode_key_chunk(const Halide::Target &t);
ProjectionTile projection_tile(const Halide::Target &t, bool bf16_pairs);
}  // namespace x86
namespace arm {
PrefillTile prefill_tile(const Halide::Target &t);
int decode_key_chunk(const Halide::Target &t);
ProjectionTile projection_tile(const Halide::Target &t);
}  // namespace arm
namespace gpu {
PrefillTile prefill_tile(kernel_contract::GpuPrefillTileKind kind);
int decode_key_chunk(const Halide::Target &t);
ProjectionTile projection_tile(const Halide::Target &t);
// The attention's exp as the GPU does it in hardware (the CPU families take Halide's fast_exp).
Halide::Expr fast_exp(const Halide::Expr &x, const Halide::Target &t);
}  // namespace gpu

template <typename Generator>
void apply(Generator &g, const Halide::Target &t) {
    if (t.has_gpu_feature()) {
        gpu::schedule(g, t);
    } else if (t.arch == Halide::Target::ARM) {
        arm::schedule(g, t);
    } else {
        x86::schedule(g, t);
    }
}

// The prefill's tile for the target's family (a GPU's of the kind its variant takes).
inline PrefillTile prefill_tile(const Halide::Target &t, kernel_contract::GpuPrefillTileKind kind) {
    if (t.has_gpu_feature()) return gpu::prefill_tile(kind);
    if (t.arch == Halide::Target::ARM) return arm::prefill_tile(t);
    return x86::prefill_tile(t);
}

// The keys of one decode chunk (a split-KV task) for the target's family.
inline int decode_key_chunk(const Halide::Target &t) {
    if (t.has_gpu_feature()) return gpu::decode_key_chunk(t);
    if (t.arch == Halide::Target::ARM) return arm::decode_key_chunk(t);
    return x86::decode_key_chunk(t);
}

// The attention's exp (probabilities, running rescale) for the target: Halide's polynomial
// fast_exp (exact enough, and vectorised on CPUs), or an approximation the GPU does in hardware.
inline Halide::Expr fast_exp(const Halide::Expr &x, const Halide::Target &t) {
    if (t.has_gpu_feature()) return gpu::fast_exp(x, t);
    return Halide::fast_exp(x);
}

// Whether Halide 14 converts halves with the instructions made for it: CUDA's cvt, and AArch64's
// fcvtl and fcvtn, which it emits only for targets with arm_fp16 (base ARMv8 instructions; the
// kernels that ask for it do no half arithmetic, which that feature would also allow). On x86 it
// emits integer operations even with F16C, and OpenCL's half type is an optional extension.
inline bool f16_converted_natively(const Halide::Target &t) {
    return t.has_feature(Halide::Target::CUDA) ||
           (t.arch == Halide::Target::ARM && t.has_feature(Halide::Target::ARMFp16));
}

// A stored element (the float32 value, or a 16-bit value's bits as uint16) widened to float32.
// bf16 is a shift. Where halves are not converted natively, the half's bits are moved into
// float32's places (f16_placed) and one multiply by f16_rebias restores the exponent's bias, exact
// for every finite half, subnormal ones too.
constexpr float f16_rebias = 0x1p112f;  // 2^(127 - 15)

// An f16's bits (uint16) in float32's places: its value / f16_rebias. Sign-extended and shifted
// (the extension carries the sign to bit 31; the mask clears its copies in the exponent).
inline Halide::Expr f16_placed(const Halide::Expr &stored) {
    using namespace Halide;
    const Expr placed = cast<int32_t>(reinterpret<int16_t>(stored)) << 13;
    return reinterpret<float>(placed & Internal::make_const(Int(32), int32_t(0x8fffe000)));
}

inline Halide::Expr widen_to_f32(const Halide::Expr &stored, StorageType type, const Halide::Target &t) {
    using namespace Halide;
    if (type == StorageType::F32) return stored;
    if (type == StorageType::Int8) return cast<float>(stored);  // the code; its row's scale is the caller's
    if (type == StorageType::BF16) return reinterpret<float>(cast<uint32_t>(stored) << 16);
    if (f16_converted_natively(t)) return cast<float>(reinterpret(Float(16), stored));
    return f16_placed(stored) * f16_rebias;
}

// The factor the attention's K and V reads leave out of an f16 cache's values on CPUs that widen
// halves with integer operations, where a group's heads share each value: the scores and
// probabilities take it once a row (ChunkedAttentionInputs::rebias), which spares the products a
// multiply a value. 1 elsewhere.
inline float attention_rebias(StorageType type, const Halide::Target &t) {
    return type == StorageType::F16 && !t.has_gpu_feature() && !f16_converted_natively(t) ? f16_rebias : 1.0f;
}

// A cache element as the attention reads it: widened, less attention_rebias.
inline Halide::Expr attention_read(const Halide::Expr &stored, StorageType type, const Halide::Target &t) {
    return attention_rebias(type, t) != 1.0f ? f16_placed(stored) : widen_to_f32(stored, type, t);
}

// The projection's register tile for the target's family (bf16_pairs: x86 only).
inline ProjectionTile projection_tile(const Halide::Target &t, bool bf16_pairs) {
    if (t.has_gpu_feature()) return gpu::projection_tile(t);
    if (t.arch == Halide::Target::ARM) return arm::projection_tile(t);
    return x86::projection_tile(t, bf16_pairs);
}

}  // namespace hattn::schedules
