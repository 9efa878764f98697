// Tensors in PyTorch order (outermost first, row-major).
//
// hattn never copies a caller's data to hand it to a kernel: a TensorView describes memory the
// caller owns, and the kernels see the same memory with Halide's reversed dimension order
// ([B, S, E] becomes the Halide buffer (E, S, B); runtime/src/halide_view.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hattn/dtype.h"

namespace hattn {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape &shape);  // "[2, 7, 64]"
int64_t element_count(const Shape &shape);

namespace detail {
[[noreturn]] int64_t no_such_dimension(int dim, const Shape &shape);  // throws hattn::Error
}  // namespace detail

// Non-owning view of float32 memory in PyTorch dimension order. Strides are in elements; an empty
// stride list means contiguous row-major. `TensorView` may be written through (outputs, caches);
// `ConstTensorView` only read (inputs, and what a const object shows), and every TensorView
// converts to one.
template <typename T>
struct BasicTensorView {
    T *data = nullptr;
    Shape shape;
    Shape strides;

    BasicTensorView() = default;
    BasicTensorView(T *data, Shape shape);
    BasicTensorView(T *data, Shape shape, Shape strides);
    // TensorView -> ConstTensorView, never the other way.
    template <typename U, typename = std::enable_if_t<std::is_same_v<T, const U>>>
    BasicTensorView(const BasicTensorView<U> &writable)  // NOLINT: implicit by design
        : data(writable.data), shape(writable.shape), strides(writable.strides) {}

    int rank() const { return static_cast<int>(shape.size()); }
    int64_t dim(int i) const { return i >= 0 && i < rank() ? shape[i] : detail::no_such_dimension(i, shape); }
    int64_t size() const { return element_count(shape); }
    bool is_contiguous() const;
    // Elements [begin, end) of dimension `dim`: the same memory, with explicit strides.
    BasicTensorView crop(int dim, int64_t begin, int64_t end) const;
};

using TensorView = BasicTensorView<float>;
using ConstTensorView = BasicTensorView<const float>;
extern template struct BasicTensorView<float>;
extern template struct BasicTensorView<const float>;

// A read-only view of elements in any storage type (hattn/dtype.h): f32 memory, or a cache's
// 16-bit or int8 rows, which the kernels read in place. Shape and strides count elements, as in a
// TensorView; every ConstTensorView is one of f32. Int8 codes come with their rows' float32
// scales (spec/attention.md section 5): `scales` has the shape without its last dimension.
struct StoredView {
    const void *data = nullptr;
    DType dtype = DType::F32;
    Shape shape;
    Shape strides;
    ConstTensorView scales;  // int8 only
    // int8: the values of the last dimension that share a scale, the last group perhaps fewer; 0:
    // all of them (scales then have one dimension fewer than the codes, else [..., groups]).
    int64_t scale_group = 0;

    StoredView() = default;
    StoredView(const void *data, DType dtype, Shape shape, Shape strides);
    StoredView(const ConstTensorView &view)  // NOLINT: implicit by design
        : data(view.data), dtype(DType::F32), shape(view.shape), strides(view.strides) {}
    StoredView(const TensorView &view)  // NOLINT: implicit by design
        : data(view.data), dtype(DType::F32), shape(view.shape), strides(view.strides) {}

    int rank() const { return static_cast<int>(shape.size()); }
    int64_t dim(int i) const { return i >= 0 && i < rank() ? shape[i] : detail::no_such_dimension(i, shape); }
    int64_t size() const { return element_count(shape); }
    // (An int8 view's last dimension, whose values share a scale, is not cropped.)
    StoredView crop(int dim, int64_t begin, int64_t end) const;
    // The f32 view of the same memory; throws unless dtype is F32.
    ConstTensorView as_f32(const char *what) const;
};

// src's values, widened to float32, into dst (the same shape; any strides; host memory only; f32
// sources go through copy_into).
void widen_into(const StoredView &src, const TensorView &dst);

// Copies src into dst element by element; both views must have the same shape, any strides, and
// must not overlap (a copy within one buffer goes through a tensor of its own).
// Resident memory stays consistent: a copy into it reaches its device copy, and a copy from kernel
// results kept on a GPU (Residency::DeviceOutput) runs there.
void copy_into(const ConstTensorView &src, const TensorView &dst);

namespace detail {
// Whether a view can be read: it has data (or no elements) and no strides or one per dimension.
bool is_well_formed(const ConstTensorView &view);
// Throws hattn::Error, naming `what` and the problem, where it cannot.
void require_well_formed(const ConstTensorView &view, const char *what);
class ResidentRegion;
}  // namespace detail

// How a resident tensor's device copy (Tensor::keep_on_device) relates to its host values.
enum class Residency {
    Mirror,        // the host values are the truth; the device copy follows the host's changes
    // The same for values kernels only read (weights, tables): CPU kernels, which give no sign of
    // what they wrote, are not taken to have written them.
    ReadOnly,
    // Kernels' results stay on the device until fetch_from_device(); the initial host values are
    // not uploaded (a layer's intermediate results, a benchmark's output).
    DeviceOutput,
};

// Owning float32 tensor, contiguous row-major.
class Tensor {
public:
    Tensor();
    explicit Tensor(Shape shape);  // zero-filled
    // Values unspecified (zeros, or what reused memory held; see hattn/memory.h): for outputs that a
    // kernel overwrites whole, which then skip the zero fill.
    struct Unset {};
    static constexpr Unset unset{};
    Tensor(Shape shape, Unset);
    Tensor(Shape shape, std::vector<float> values);
    Tensor(const Tensor &other);  // a copy is resident when the original is
    Tensor(Tensor &&other) noexcept;
    Tensor &operator=(const Tensor &other);
    Tensor &operator=(Tensor &&other) noexcept;
    ~Tensor();

    const Shape &shape() const { return shape_; }
    int rank() const { return static_cast<int>(shape_.size()); }
    int64_t dim(int i) const { return i >= 0 && i < rank() ? shape_[i] : detail::no_such_dimension(i, shape_); }
    int64_t size() const { return static_cast<int64_t>(values_.size()); }
    float *data() { return values_.data(); }
    const float *data() const { return values_.data(); }
    // Read-only: the shape says how many values there are, so they are written only through data().
    const std::vector<float> &values() const { return values_; }

    TensorView view() { return TensorView(values_.data(), shape_); }
    ConstTensorView view() const { return ConstTensorView(values_.data(), shape_); }

    // The same values under another shape with the same element count.
    Tensor reshaped(Shape shape) const;

    // Tokens [begin, end) of a [B, S, ...] tensor, as a new [B, end - begin, ...] tensor.
    Tensor tokens(int64_t begin, int64_t end) const;

    // Keeps a copy of the values on the GPU across kernel calls when a GPU is the device (see
    // hattn/device.h); costs nothing on the CPU. A resident tensor must not change size.
    void keep_on_device(Residency residency = Residency::Mirror);
    bool is_resident() const { return resident_ != nullptr; }
    // Writers of a resident tensor's values through data() report the elements [begin, end) they
    // changed, so that the device copy is refreshed; kernel outputs are tracked without this.
    void host_changed(int64_t begin, int64_t end) const;
    // DeviceOutput: copies the kernels' results from the device into the values.
    void fetch_from_device();

private:
    // Brings kernel results held only on a device (Residency::DeviceOutput) to the values before
    // the host reads them for a copy.
    const Tensor &host_current() const;

    Shape shape_;
    std::vector<float> values_;
    std::unique_ptr<detail::ResidentRegion> resident_;
};

}  // namespace hattn
