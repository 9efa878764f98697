// The kernels are compiled assuming no NaN or Inf (fast-math): an input holding one would give
// meaningless output, and a cache fed one would stay poisoned, rather than an error. Every layer
// call and every case file refuses such input, naming where it is.
#pragma once

#include <string>

#include "hattn/tensor.h"

namespace hattn::detail {

// Throws "<what>: element 13 is NaN; inputs must be finite" for the first non-finite value
// (`kind`: "inputs", or "weights" for a layer's weights as loaded).
void require_finite(const std::string &what, const Tensor &t, const char *kind = "inputs");

}  // namespace hattn::detail
