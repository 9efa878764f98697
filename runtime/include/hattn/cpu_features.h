// What this CPU offers hattn's kernels, as Halide's feature check sees it.
#pragma once

#include <string>
#include <vector>

namespace hattn {

// Names of the instruction-set features relevant to hattn's variants that this CPU has (x86:
// Halide's own check; AArch64: getauxval(AT_HWCAP), since Halide 14 detects nothing there).
std::vector<std::string> host_cpu_features();

}  // namespace hattn
