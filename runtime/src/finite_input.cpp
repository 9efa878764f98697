#include "finite_input.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "hattn/error.h"

namespace hattn::detail {

void require_finite(const std::string &what, const Tensor &t, const char *kind) {
    // A float is NaN or infinite exactly when its exponent bits are all set. The largest exponent
    // over the tensor is an integer reduction, which the compiler vectorises (a search for the
    // first bad value stops early and does not): a layer's whole input is checked in a fraction of
    // the time its first projection takes. The search runs only when there is something to find.
    constexpr uint32_t exponent = 0x7f800000u;
    const float *values = t.data();
    uint32_t largest = 0;
    for (int64_t i = 0; i < t.size(); i++) {
        uint32_t bits;
        std::memcpy(&bits, values + i, sizeof bits);
        largest = std::max(largest, bits & exponent);
    }
    if (largest != exponent) return;
    const float *bad = std::find_if(values, values + t.size(), [](float v) { return !std::isfinite(v); });
    throw Error(what + ": element " + std::to_string(bad - values) + " is " + (std::isnan(*bad) ? "NaN" : "infinite") +
                "; " + kind + " must be finite");
}

}  // namespace hattn::detail
