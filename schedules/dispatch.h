// Chooses the schedule family for a generator's target. Generators call schedules::apply() from
// schedule(); each family implements one `schedule(Kernel &, const Target &)` per kernel in its own
// folder, so tuning one target never touches an algorithm or another target.
#pragma once

#include "Halide.h"

// Every scheduled generator, once. A new kernel adds its class here and one `schedule()` per
// family folder.
#define HATTN_SCHEDULED_GENERATORS(X) \
    X(Projection)                     \
    X(AttentionPrefill)               \
    X(AttentionDecode)                \
    X(Rope)                           \
    X(CcaQkLatent)                    \
    X(BitLinear)                      \
    X(BitLinearQuantize)              \
    X(DsaIndexScores)                 \
    X(DsaSparseAttention)             \
    X(RowNorm)                        \
    X(StridedCopy)

namespace hattn {
#define HATTN_DECLARE_GENERATOR(G) class G;
HATTN_SCHEDULED_GENERATORS(HATTN_DECLARE_GENERATOR)
#undef HATTN_DECLARE_GENERATOR
}  // namespace hattn

namespace hattn::schedules {

// A projection's register tile, in rows of x by outputs: the tiles x and W are packed in.
struct ProjectionTile {
    int rows, outputs;
};

// The prefill's query tile (queries that share each K/V chunk load) and the keys its QK register
// tile takes per step, which the CPU algorithm's scores are written in (Merge::RunningRows).
struct PrefillTile {
    int queries, keys;
};

// Besides the schedules, each family chooses the tiles that an algorithm takes as parameters
// (where a generator leaves one to the family).
#define HATTN_DECLARE_SCHEDULE(G) void schedule(G &g, const Halide::Target &t);
#define HATTN_DECLARE_FAMILY                           \
    HATTN_SCHEDULED_GENERATORS(HATTN_DECLARE_SCHEDULE) \
    PrefillTile prefill_tile(const Halide::Target &t); \
    int decode_key_chunk(const Halide::Target &t);     \
    ProjectionTile projection_tile(const Halide::Target &t);
namespace x86 {
HATTN_DECLARE_FAMILY
}
namespace arm {
HATTN_DECLARE_FAMILY
}
namespace cuda {
HATTN_DECLARE_FAMILY
// The attention's exp as the GPU does it in hardware (the CPU families take Halide's fast_exp).
Halide::Expr fast_exp(const Halide::Expr &x, const Halide::Target &t);
}
#undef HATTN_DECLARE_FAMILY
#undef HATTN_DECLARE_SCHEDULE

template <typename Generator>
void apply(Generator &g, const Halide::Target &t) {
    if (t.has_gpu_feature()) {
        cuda::schedule(g, t);
    } else if (t.arch == Halide::Target::ARM) {
        arm::schedule(g, t);
    } else {
        x86::schedule(g, t);
    }
}

// The prefill's tile for the target's family.
inline PrefillTile prefill_tile(const Halide::Target &t) {
    if (t.has_gpu_feature()) return cuda::prefill_tile(t);
    if (t.arch == Halide::Target::ARM) return arm::prefill_tile(t);
    return x86::prefill_tile(t);
}

// The keys of one decode chunk (a split-KV task) for the target's family.
inline int decode_key_chunk(const Halide::Target &t) {
    if (t.has_gpu_feature()) return cuda::decode_key_chunk(t);
    if (t.arch == Halide::Target::ARM) return arm::decode_key_chunk(t);
    return x86::decode_key_chunk(t);
}

// The attention's exp (probabilities, running rescale) for the target: Halide's polynomial
// fast_exp (exact enough, and vectorised on CPUs), or an approximation the GPU does in hardware.
inline Halide::Expr fast_exp(const Halide::Expr &x, const Halide::Target &t) {
    if (t.has_gpu_feature()) return cuda::fast_exp(x, t);
    return Halide::fast_exp(x);
}

// The projection's register tile for the target's family.
inline ProjectionTile projection_tile(const Halide::Target &t) {
    if (t.has_gpu_feature()) return cuda::projection_tile(t);
    if (t.arch == Halide::Target::ARM) return arm::projection_tile(t);
    return x86::projection_tile(t);
}

}  // namespace hattn::schedules
