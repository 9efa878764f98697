// The kernels are compiled assuming no NaN or Inf (fast-math): an input holding one would give
// meaningless output, and a cache fed one would stay poisoned, rather than an error. Every layer
// call and every case file refuses such input, naming where it is; and every layer checks its
// output, since finite inputs and weights can still overflow float32.
#pragma once

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

// A layer's results, checked before its cache or state takes the call's tokens, so that a refused
// call leaves them as they were: the output, and the rows the call commits (new keys, values,
// latents), which later calls read even where this call's output does not depend on them. Each is
// {what, tensor}; tensors kept on a GPU (their host values unset) are passed over. Throws
// "<layer>: <what> overflowed float32 (element 0 is NaN) ...; " + origin(), origin() saying where
// it first appeared, built only then.
struct Result {
    const char *what;
    const Tensor *values;
};
void throw_overflow(const std::string &layer, const Result &result, const float *bad, const std::string &origin);
template <typename Origin>
void require_finite_results(const char *layer, std::initializer_list<Result> results, Origin &&origin) {
    for (const Result &r : results) {
        if (r.values->is_resident()) continue;
        if (const float *bad = first_non_finite(*r.values)) throw_overflow(layer, r, bad, origin());
    }
}


// For origin(): "the input's largest magnitude is 3e+38, the largest weight 2.5 (in q_proj)".
// BitLinear projections (ternary) are passed over.
std::string magnitudes(const Tensor &input, std::initializer_list<std::pair<const char *, const Linear *>> weights);

}  // namespace hattn::detail
