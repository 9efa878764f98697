#include "hattn/stored_tensor.h"

#include <string>

#include "hattn/error.h"
#include "hattn/half.h"

namespace hattn {

StoredTensor::StoredTensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
    require(dtype != DType::Int8, [] { return std::string("a StoredTensor holds f32, bf16 or f16 values, not int8 codes"); });
    words_.assign(static_cast<size_t>((bytes() + 3) / 4), 0u);
}

StoredTensor StoredTensor::rounded(DType dtype, const ConstTensorView &values) {
    detail::require_well_formed(values, "StoredTensor::rounded");
    StoredTensor t(dtype, values.shape);
    if (dtype == DType::F32) {
        copy_into(values, TensorView(static_cast<float *>(t.data()), values.shape));
        return t;
    }
    uint16_t *bits = static_cast<uint16_t *>(t.data());
    if (values.is_contiguous()) {
        to_bits(dtype, values.data, bits, t.size());
        return t;
    }
    Tensor contiguous(values.shape, Tensor::unset);
    copy_into(values, contiguous.view());
    to_bits(dtype, contiguous.data(), bits, t.size());
    return t;
}

StoredView StoredTensor::view() const { return StoredView(data(), dtype_, shape_, {}); }

Tensor StoredTensor::widened() const {
    Tensor t(shape_, Tensor::unset);
    widen_into(view(), t.view());
    return t;
}

}  // namespace hattn
