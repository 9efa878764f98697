#include "activation_rounding.h"

#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/int8_group.h"

#include <algorithm>
#include <vector>

namespace hattn::detail {

void require_types_on_device(const StorageTypes &types, const char *layer) {
    require((types.dtype == DType::F32 && types.kv_dtype == DType::F32) || current_device() == Device::CPU, [&] {
        return std::string(layer) + ": dtype " + type_name(types.dtype) + ", kv_dtype " + type_name(types.kv_dtype) +
               " on a GPU are not supported yet (storage types other than f32 run on the CPU)";
    });
}

void store_as(DType dtype, Tensor &t, const char *layer) {
    if (dtype == DType::F32) return;
    require(current_device() == Device::CPU, [&] {
        return std::string(layer) + ": dtype " + type_name(dtype) + " on a GPU is not supported yet (16-bit activations run on the CPU)";
    });
    round_to(dtype, t.data(), t.size());
}

void store_as_int8_groups(Tensor &t, int64_t width, int64_t group) {
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

const Tensor &converted_input(DType dtype, const Tensor &x, std::optional<Tensor> &copy, const char *layer) {
    if (dtype == DType::F32) return x;
    copy = x;
    store_as(dtype, *copy, layer);
    return *copy;
}

}  // namespace hattn::detail
