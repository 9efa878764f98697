#include "hattn/cpu_features.h"

#include "HalideRuntime.h"

#include "hattn/kernel_table.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace hattn {

std::vector<std::string> host_cpu_features() {
    std::vector<std::string> found;
#if defined(__x86_64__)
    const std::pair<const char *, halide_target_feature_t> features[] = {
        {"sse41", halide_target_feature_sse41},
        {"avx", halide_target_feature_avx},
        {"f16c", halide_target_feature_f16c},
        {"fma", halide_target_feature_fma},
        {"avx2", halide_target_feature_avx2},
        {"avx512", halide_target_feature_avx512},
        {"avx512_skylake", halide_target_feature_avx512_skylake},
        {"avx512_cannonlake", halide_target_feature_avx512_cannonlake},
        {"avx512_sapphirerapids", halide_target_feature_avx512_sapphirerapids},
    };
    for (const auto &[name, feature] : features) {
        if (can_use_target(KernelTarget{name, {feature}})) found.push_back(name);
    }
#elif defined(__aarch64__)
    const unsigned long hwcap = getauxval(AT_HWCAP);
    found.push_back("neon");
    if (hwcap & HWCAP_ASIMDDP) found.push_back("arm_dot_prod");
    if (hwcap & HWCAP_FPHP) found.push_back("arm_fp16");
    if (hwcap & HWCAP_SVE) found.push_back("sve");
#endif
    return found;
}

}  // namespace hattn
