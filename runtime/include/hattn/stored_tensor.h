// An owning tensor in a storage type (spec/attention.md section 5): f32, bf16 or f16 values,
// contiguous row-major in PyTorch order. A layer's outputs in its dtype come back as one, and
// view() hands it, or a caller's own 16-bit memory as a StoredView, to the next layer.
#pragma once

#include <cstdint>
#include <vector>

#include "hattn/dtype.h"
#include "hattn/tensor.h"

namespace hattn {

class StoredTensor {
public:
    StoredTensor() = default;
    // Zeros. Throws Error for int8, a cache type whose codes need scales.
    StoredTensor(DType dtype, Shape shape);
    // `values` (any strides) rounded to `dtype` as storing them rounds (hattn/half.h).
    static StoredTensor rounded(DType dtype, const ConstTensorView &values);

    DType dtype() const { return dtype_; }
    const Shape &shape() const { return shape_; }
    int rank() const { return static_cast<int>(shape_.size()); }
    int64_t dim(int i) const { return i >= 0 && i < rank() ? shape_[i] : detail::no_such_dimension(i, shape_); }
    int64_t size() const { return element_count(shape_); }
    int64_t bytes() const { return size() * static_cast<int64_t>(dtype_size(dtype_)); }
    // The elements as stored: float for f32, bf16 or f16 bits (uint16_t) for those.
    void *data() { return words_.data(); }
    const void *data() const { return words_.data(); }

    StoredView view() const;
    Tensor widened() const;  // the values in float32 (exact)

private:
    DType dtype_ = DType::F32;
    Shape shape_;
    std::vector<uint32_t> words_;  // the elements, several to a word, so that f32 ones are aligned
};

}  // namespace hattn
