#include "hattn/kernel_table.h"

#include "halide_call.h"

namespace hattn {

bool can_use_target(const KernelTarget &target) {
    detail::prepare_halide_runtime();  // so that HATTN_MAX_ISA applies here too
    constexpr int words = (halide_target_feature_end + 63) / 64;
    uint64_t bits[words] = {};
    for (halide_target_feature_t f : target.features) bits[f / 64] |= uint64_t(1) << (f % 64);
    return halide_can_use_target_features(words, bits) != 0;
}

const KernelTarget &selected_target(const KernelVariant &variant) {
    for (const KernelTarget &t : variant.targets) {
        if (can_use_target(t)) return t;
    }
    return variant.targets.back();
}

}  // namespace hattn
