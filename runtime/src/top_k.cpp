#include "top_k.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "hattn/error.h"

namespace hattn::detail {

namespace {

// A float's bits as an unsigned integer that orders as the floats do (the sign bit flipped for
// positives, every bit for negatives). -0 is first made +0, so that equal scores share a key.
uint32_t ordered_key(float x) {
    if (x == 0.0f) x = 0.0f;
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

}  // namespace

void top_k_indices(const float *score, int64_t count, int64_t n, int32_t *out) {
    require(n >= 0 && n <= count && count <= std::numeric_limits<int32_t>::max(),
            [&] { return "top-k: cannot take " + std::to_string(n) + " of " + std::to_string(count) + " scores"; });
    if (n == 0) return;
    if (n == count) {
        std::iota(out, out + n, 0);
        return;
    }
    // Rather than rank all `count` scores, find the n-th best in three passes over their keys: a
    // histogram of the keys' top bits (which bin holds the n-th best: every key in a higher bin is
    // better), the n-th best among that bin's keys alone, and then every index at least as good.
    constexpr int histogram_bits = 12, shift = 32 - histogram_bits;
    std::vector<uint32_t> key(count);
    std::array<int64_t, 1 << histogram_bits> histogram{};
    for (int64_t t = 0; t < count; t++) {
        key[t] = ordered_key(score[t]);
        histogram[key[t] >> shift]++;
    }
    uint32_t bin = histogram.size() - 1;
    int64_t above = 0;  // keys in bins above `bin`
    while (above + histogram[bin] < n) above += histogram[bin--];
    std::vector<int32_t> in_bin;
    in_bin.reserve(histogram[bin]);
    for (int64_t t = 0; t < count; t++)
        if (key[t] >> shift == bin) in_bin.push_back(static_cast<int32_t>(t));
    const auto better = [&](int64_t a, int64_t b) { return key[a] != key[b] ? key[a] > key[b] : a > b; };
    const auto nth = in_bin.begin() + (n - above - 1);
    std::nth_element(in_bin.begin(), nth, in_bin.end(), better);
    // The n taken: the n-th best and every index better (a larger key, or an equal key later).
    const uint32_t last_key = key[*nth];
    const int64_t last = *nth;
    int64_t taken = 0;
    for (int64_t t = 0; t < count; t++)
        if (key[t] > last_key || (key[t] == last_key && t >= last)) out[taken++] = static_cast<int32_t>(t);
}

}  // namespace hattn::detail
