// Forces Halide's multi-target dispatch onto one sub-target: while a ForcedTarget lives, the
// feature check refuses every target that needs a feature the chosen one lacks (AVX-512 masked for
// the AVX2 entry, AVX2 masked for SSE4.1). It records the targets it accepted, so a test can assert
// which sub-target actually ran.
#pragma once

#include <cstdint>
#include <vector>

#include "HalideRuntime.h"
#include "hattn/kernel_table.h"

namespace hattn::testing {

class ForcedTarget {
public:
    explicit ForcedTarget(const KernelTarget &allowed) {
        allowed_ = bits_of(allowed.features);
        allowed_[halide_target_feature_no_runtime / 64] |= bit(halide_target_feature_no_runtime);
        accepted().clear();
        previous_ = halide_set_custom_can_use_target_features(check);
    }
    ~ForcedTarget() { halide_set_custom_can_use_target_features(previous_); }
    ForcedTarget(const ForcedTarget &) = delete;
    ForcedTarget &operator=(const ForcedTarget &) = delete;

    using Bits = std::vector<uint64_t>;
    static Bits bits_of(const std::vector<int> &features) {
        Bits b(words, 0);
        for (int f : features) b[f / 64] |= bit(f);
        return b;
    }
    // Every feature set the dispatch asked about and was granted, in order.
    static std::vector<Bits> &accepted() {
        static std::vector<Bits> a;
        return a;
    }
    // Whether `request` equals `target`'s features, no_runtime aside.
    static bool same_target(Bits request, const KernelTarget &target) {
        request[halide_target_feature_no_runtime / 64] &= ~bit(halide_target_feature_no_runtime);
        return request == bits_of(target.features);
    }

private:
    static constexpr int words = (halide_target_feature_end + 63) / 64;
    static uint64_t bit(int f) { return uint64_t(1) << (f % 64); }
    static inline Bits allowed_;
    static inline halide_can_use_target_features_t previous_ = nullptr;

    static int check(int count, const uint64_t *features) {
        for (int i = 0; i < count && i < words; i++) {
            if (features[i] & ~allowed_[i]) return 0;
        }
        if (!halide_default_can_use_target_features(count, features)) return 0;
        accepted().emplace_back(features, features + count);
        return 1;
    }
};

}  // namespace hattn::testing
