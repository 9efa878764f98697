#include "hattn/int8_group.h"

#include <algorithm>
#include <cmath>

namespace hattn {

float quantize_group(const float *values, int8_t *codes, int64_t count) {
    float largest = 0.0f;
    for (int64_t i = 0; i < count; i++) largest = std::max(largest, std::fabs(values[i]));
    const float scale = largest / 127.0f;
    for (int64_t i = 0; i < count; i++) {
        // |x / s| <= 127 up to rounding of the division; the clamp keeps the code in range.
        codes[i] = scale == 0.0f ? int8_t{0}
                                 : static_cast<int8_t>(std::clamp(std::nearbyint(values[i] / scale), -127.0f, 127.0f));
    }
    return scale;
}

}  // namespace hattn
