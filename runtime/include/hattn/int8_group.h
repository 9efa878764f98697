// The int8 cache type (spec/attention.md section 5): a group of values stored as signed 8-bit codes
// c and one float32 scale s, value = c * s, with s = max |x| / 127 over the group and
// c = round(x / s), to nearest, ties to even (a zero group stores s = 0 and zero codes).
#pragma once

#include <cstdint>

namespace hattn {

// Stores `count` values as codes and returns their scale.
float quantize_group(const float *values, int8_t *codes, int64_t count);

}  // namespace hattn
