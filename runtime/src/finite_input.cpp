#include "finite_input.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "hattn/error.h"

namespace hattn::detail {

namespace {

std::string element_text(const Tensor &t, const float *bad) {
    return "element " + std::to_string(bad - t.data()) + " is " + (std::isnan(*bad) ? "NaN" : "infinite");
}

float largest_magnitude(const Tensor &t) {
    float largest = 0.0f;
    for (int64_t i = 0; i < t.size(); i++) largest = std::max(largest, std::fabs(t.data()[i]));
    return largest;
}

}  // namespace

const float *first_non_finite(const Tensor &t) {
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
    if (largest != exponent) return nullptr;
    return std::find_if(values, values + t.size(), [](float v) { return !std::isfinite(v); });
}

void require_finite(const std::string &what, const Tensor &t, const char *kind) {
    if (const float *bad = first_non_finite(t)) {
        throw Error(what + ": " + element_text(t, bad) + "; " + kind + " must be finite");
    }
}

void throw_overflow(const std::string &layer, const Result &result, const float *bad, const std::string &origin) {
    throw Error(layer + ": " + result.what + " overflowed float32 (" + element_text(*result.values, bad) +
                ") from finite inputs and weights; " + origin);
}

std::string magnitudes(const Tensor &input, std::initializer_list<std::pair<const char *, const Linear *>> weights) {
    float largest = 0.0f;
    const char *where = nullptr;
    for (const auto &[name, linear] : weights) {
        if (linear->ternary()) continue;
        const Tensor weight = linear->widened_weight();
        for (const Tensor *t : {&weight, linear->bias() ? &*linear->bias() : nullptr}) {
            const float magnitude = t ? largest_magnitude(*t) : 0.0f;
            if (magnitude > largest) largest = magnitude, where = name;
        }
    }
    std::ostringstream text;
    text << "the input's largest magnitude is " << largest_magnitude(input);
    if (where) text << ", the largest weight " << largest << " (in " << where << ")";
    return text.str();
}

}  // namespace hattn::detail
