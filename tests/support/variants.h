// Whether this build linked a variant of a kernel, by family ("x86_tuned", "cuda_small_tiles").
#pragma once

#include <algorithm>
#include <string>

#include "hattn/kernel_table.h"

namespace hattn::testing {

inline bool has_variant(const std::string &kernel, const std::string &family) {
    const auto &all = kernel_variants();
    return std::any_of(all.begin(), all.end(),
                       [&](const KernelVariant &v) { return v.kernel == kernel && v.family == family; });
}

}  // namespace hattn::testing
