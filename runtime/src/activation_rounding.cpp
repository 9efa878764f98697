#include "activation_rounding.h"

#include "device_residency.h"
#include "host_parallel.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/int8_group.h"

#include <algorithm>
#include <vector>

namespace hattn::detail {

// Both round on the host: on a GPU a kernel's result comes down first and goes up again after.
void store_as(DType dtype, Tensor &t) {
    if (dtype == DType::F32) return;
    host_reads(t.view());
    // In blocks on the kernels' threads: a layer's activations are megabytes, and one core reads
    // memory at a fraction of the machine's bandwidth.
    constexpr int64_t block = int64_t(1) << 16;
    const int64_t n = t.size();
    parallel_for(static_cast<int>((n + block - 1) / block), [&](int i) {
        const int64_t first = int64_t(i) * block;
        round_to(dtype, t.data() + first, std::min(block, n - first));
    });
    host_wrote(t.view());
}

void store_as_int8_groups(Tensor &t, int64_t width, int64_t group) {
    host_reads(t.view());
    host_wrote(t.view());
    std::vector<int8_t> codes(group);
    for (int64_t row = 0; row < t.size() / width; row++) {
        for (int64_t first = 0; first < width; first += group) {
            float *values = t.data() + row * width + first;
            const int64_t n = std::min(group, width - first);
            const float scale = quantize_group(values, codes.data(), n);
            for (int64_t i = 0; i < n; i++) values[i] = float(codes[i]) * scale;
        }
    }
}

const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy) {
    if (dtype == DType::F32) return x;
    copy = x;
    store_as(dtype, *copy);
    return *copy;
}

}  // namespace hattn::detail
