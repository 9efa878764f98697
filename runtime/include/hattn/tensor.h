// Tensors in PyTorch order (outermost first, row-major), and their Halide views.
//
// hattn never copies a caller's data to hand it to a kernel: a TensorView describes memory the
// caller owns, and halide_buffer() wraps the same memory with Halide's reversed dimension order
// ([B, S, E] becomes the Halide buffer (E, S, B)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "HalideBuffer.h"

namespace hattn {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape &shape);  // "[2, 7, 64]"
int64_t element_count(const Shape &shape);

// Non-owning view of float32 memory in PyTorch dimension order. Strides are in elements; an empty
// stride list means contiguous row-major.
struct TensorView {
    float *data = nullptr;
    Shape shape;
    Shape strides;

    TensorView() = default;
    TensorView(float *data, Shape shape);
    TensorView(float *data, Shape shape, Shape strides);

    int rank() const { return static_cast<int>(shape.size()); }
    int64_t dim(int i) const { return shape.at(i); }
    int64_t size() const { return element_count(shape); }
    bool is_contiguous() const;

    // The same memory as a Halide buffer, dimensions reversed. Throws Error if an extent or stride
    // does not fit Halide's 32-bit fields.
    Halide::Runtime::Buffer<float> halide_buffer() const;
};

// Copies src into dst element by element; both views must have the same shape, any strides.
void copy_into(const TensorView &src, const TensorView &dst);

// Owning float32 tensor, contiguous row-major.
class Tensor {
public:
    Tensor() = default;
    explicit Tensor(Shape shape);  // zero-filled
    Tensor(Shape shape, std::vector<float> values);

    const Shape &shape() const { return shape_; }
    int rank() const { return static_cast<int>(shape_.size()); }
    int64_t dim(int i) const { return shape_.at(i); }
    int64_t size() const { return static_cast<int64_t>(values_.size()); }
    float *data() { return values_.data(); }
    const float *data() const { return values_.data(); }
    std::vector<float> &values() { return values_; }
    const std::vector<float> &values() const { return values_; }

    TensorView view() { return TensorView(values_.data(), shape_); }
    // A view of const data; kernels take inputs through non-const Halide buffers but never write them.
    TensorView view() const { return TensorView(const_cast<float *>(values_.data()), shape_); }

    // The same values under another shape with the same element count.
    Tensor reshaped(Shape shape) const;

    // Tokens [begin, end) of a [B, S, ...] tensor, as a new [B, end - begin, ...] tensor.
    Tensor tokens(int64_t begin, int64_t end) const;

private:
    Shape shape_;
    std::vector<float> values_;
};

}  // namespace hattn
