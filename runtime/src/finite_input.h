// The kernels are compiled assuming no NaN or Inf (fast-math): an input holding one would give
// meaningless output, and a cache fed one would stay poisoned, rather than an error. Every layer
// call and every case file refuses such input, naming where it is; and every layer checks its
// output, since finite inputs and weights can still overflow float32.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "hattn/layers/linear.h"
#include "hattn/tensor.h"

namespace hattn::detail {

// The first NaN or infinite value of t, or null.
const float *first_non_finite(const Tensor &t);

// Throws "<what>: element 13 is NaN; inputs must be finite" for the first non-finite value
// (`kind`: "inputs", or "weights" for a layer's weights as loaded).
void require_finite(const std::string &what, const Tensor &t, const char *kind = "inputs");

// A layer's output y, checked before any cache or state takes the call's tokens, so that a
// refused call leaves them as they were. Throws "<layer>: the output overflowed float32 (element
// 0 is NaN) ...; " + origin(), origin() saying where it first appeared, built only then.
void require_finite_output(const std::string &layer, const Tensor &y, const std::function<std::string()> &origin);

// For origin(): "the input's largest magnitude is 3e+38, the largest weight 2.5 (in q_proj)".
// BitLinear projections (ternary) are passed over.
std::string magnitudes(const Tensor &input, std::initializer_list<std::pair<const char *, const Linear *>> weights);

}  // namespace hattn::detail
