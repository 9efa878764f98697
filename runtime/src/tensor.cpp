#include "hattn/tensor.h"

#include "device_residency.h"
#include "halide_view.h"
#include "memory_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

#include "hattn/error.h"
#include "hattn/half.h"

namespace hattn {

std::string shape_to_string(const Shape &shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); i++) {
        if (i > 0) out += ", ";
        out += std::to_string(shape[i]);
    }
    return out + "]";
}

int64_t element_count(const Shape &shape) {
    // The other extents' product is checked whatever order a zero comes in: a view's row-major
    // strides are products of them, so [0, 2^62, 2^62] is refused as [2^62, 2^62, 0] is.
    int64_t count = 1;
    bool empty = false;
    for (int64_t extent : shape) {
        require(extent >= 0, [&] { return "shape " + shape_to_string(shape) + " has a negative dimension"; });
        empty |= extent == 0;
        require(extent == 0 || !__builtin_mul_overflow(count, extent, &count),
                [&] { return "element count of shape " + shape_to_string(shape) + " overflows int64"; });
    }
    return empty ? 0 : count;
}

int64_t detail::no_such_dimension(int dim, const Shape &shape) {
    throw Error("dimension " + std::to_string(dim) + " of a tensor " + shape_to_string(shape) + " does not exist");
}

template <typename T>
BasicTensorView<T>::BasicTensorView(T *data_, Shape shape_) : data(data_), shape(std::move(shape_)) {}

// No strides (row-major) or one per dimension: the layouts a view can describe. A view's fields
// are public, so what reads one checks again (detail::require_well_formed).
static bool strides_fit(const Shape &shape, const Shape &strides) {
    return strides.empty() || strides.size() == shape.size();
}

template <typename T>
BasicTensorView<T>::BasicTensorView(T *data_, Shape shape_, Shape strides_)
    : data(data_), shape(std::move(shape_)), strides(std::move(strides_)) {
    require(strides_fit(shape, strides), [&] {
        return "tensor of shape " + shape_to_string(shape) + " has " + std::to_string(strides.size()) + " strides";
    });
}

// Row-major strides of `shape`, in elements. Checked even for zero-sized shapes, whose element
// count fits while the strides of their other dimensions may not.
static Shape contiguous_strides(const Shape &shape) {
    Shape strides(shape.size());
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        require(shape[i] >= 0, [&] { return "shape " + shape_to_string(shape) + " has a negative dimension"; });
        strides[i] = stride;
        require(!__builtin_mul_overflow(stride, shape[i], &stride),
                [&] { return "strides of shape " + shape_to_string(shape) + " overflow int64"; });
    }
    return strides;
}

template <typename T>
bool BasicTensorView<T>::is_contiguous() const {
    if (strides.empty()) return true;
    if (!strides_fit(shape, strides)) return false;  // malformed: not a layout (require_well_formed says so)
    const Shape expected = contiguous_strides(shape);
    for (size_t i = 0; i < shape.size(); i++) {
        // A dimension of extent 1 is never stepped over, so its stride does not change the layout.
        if (shape[i] != 1 && strides[i] != expected[i]) return false;
    }
    return true;
}

template <typename T>
BasicTensorView<T> BasicTensorView<T>::crop(int dim, int64_t begin, int64_t end) const {
    require(dim >= 0 && dim < rank() && begin >= 0 && begin <= end && end <= shape[dim], [&] {
        return "crop [" + std::to_string(begin) + ", " + std::to_string(end) + ") of dimension " + std::to_string(dim) +
               " is outside shape " + shape_to_string(shape);
    });
    require(strides_fit(shape, strides), [&] {
        return "crop: a view of shape " + shape_to_string(shape) + " has " + std::to_string(strides.size()) +
               " strides (none, or one per dimension)";
    });
    Shape steps = strides.empty() ? contiguous_strides(shape) : strides;
    Shape cropped = shape;
    cropped[dim] = end - begin;
    T *first = data + begin * steps[dim];  // before `steps` moves into the result
    return BasicTensorView(first, std::move(cropped), std::move(steps));
}

template struct BasicTensorView<float>;
template struct BasicTensorView<const float>;

bool detail::is_well_formed(const ConstTensorView &view) {
    return strides_fit(view.shape, view.strides) && (view.data != nullptr || view.size() == 0);
}

void detail::require_well_formed(const ConstTensorView &view, const char *what) {
    if (is_well_formed(view)) return;
    // Which of the two it is.
    require(strides_fit(view.shape, view.strides), [&] {
        return std::string(what) + ": a tensor view of " + shape_to_string(view.shape) + " has " +
               std::to_string(view.strides.size()) + " strides";
    });
    // A null host pointer would also make Halide take a kernel call for a bounds query: it would
    // compute nothing and report success.
    throw Error(std::string(what) + ": a tensor view of " + shape_to_string(view.shape) + " has no data");
}

namespace {

// Halide's dimensions (reversed) of a view's shape and strides, checked to fit its 32-bit fields.
std::vector<halide_dimension_t> halide_dimensions(const Shape &shape, const Shape &strides) {
    // (A malformed stride list is refused by the callers, after the extents' own checks.)
    const Shape steps = strides.size() == shape.size() ? strides : contiguous_strides(shape);
    constexpr int64_t int32_max = std::numeric_limits<int32_t>::max();
    constexpr int64_t int32_min = std::numeric_limits<int32_t>::min();
    const int r = static_cast<int>(shape.size());
    std::vector<halide_dimension_t> dims(r);
    for (int i = 0; i < r; i++) {
        const int torch_dim = r - 1 - i;
        const int64_t extent = shape[torch_dim];
        const int64_t stride = steps[torch_dim];
        auto where = [&] {
            return " in dimension " + std::to_string(torch_dim) + " of shape " + shape_to_string(shape);
        };
        require(extent >= 0, [&] { return "negative extent " + std::to_string(extent) + where(); });
        require(extent <= int32_max, [&] {
            return "extent " + std::to_string(extent) + where() + " exceeds INT32_MAX (Halide buffers are 32-bit)";
        });
        require(stride >= int32_min && stride <= int32_max, [&] {
            return "stride " + std::to_string(stride) + where() + " does not fit in int32 (Halide buffers are 32-bit)";
        });
        dims[i] = halide_dimension_t(0, static_cast<int32_t>(extent), static_cast<int32_t>(stride));
    }
    return dims;
}

halide_type_t halide_type_of_storage(DType dtype) {
    switch (dtype) {
    // 16-bit values as their bits: the kernels' buffers are uint16 (generators/common/storage_type.h).
    case DType::F16:
    case DType::BF16: return halide_type_t(halide_type_uint, 16);
    case DType::Int8: return halide_type_t(halide_type_int, 8);
    case DType::F32: break;
    }
    return halide_type_t(halide_type_float, 32);
}

}  // namespace

Halide::Runtime::Buffer<float> detail::halide_buffer(const ConstTensorView &view) {
    std::vector<halide_dimension_t> dims = halide_dimensions(view.shape, view.strides);
    require_well_formed(view, "kernel call");
    // Halide's buffers have no read-only form; a kernel writes only the buffers of its outputs,
    // which callers pass as writable views.
    return Halide::Runtime::Buffer<float>(const_cast<float *>(view.data), dims);
}

Halide::Runtime::Buffer<void> detail::halide_storage_buffer(const StoredView &view) {
    std::vector<halide_dimension_t> dims = halide_dimensions(view.shape, view.strides);
    require_well_formed(ConstTensorView(static_cast<const float *>(view.data), view.shape, view.strides), "kernel call");
    return Halide::Runtime::Buffer<void>(halide_type_of_storage(view.dtype), const_cast<void *>(view.data),
                                         static_cast<int>(dims.size()), dims.data());
}

StoredView::StoredView(const void *data, DType dtype, Shape shape, Shape strides)
    : data(data), dtype(dtype), shape(std::move(shape)), strides(std::move(strides)) {}

StoredView StoredView::crop(int dim, int64_t begin, int64_t end) const {
    // The f32 view's crop does the checks and the stride arithmetic, in elements.
    const ConstTensorView cropped =
        ConstTensorView(static_cast<const float *>(data), shape, strides).crop(dim, begin, end);
    const int64_t offset = cropped.data - static_cast<const float *>(data);
    StoredView part(static_cast<const char *>(data) + offset * int64_t(dtype_size(dtype)), dtype, cropped.shape,
                    cropped.strides);
    if (dtype == DType::Int8) {
        require(dim < rank() - 1, "crop: an int8 view's rows share their scales; its last dimension is not cropped");
        part.scales = scales.crop(dim, begin, end);
        part.scale_group = scale_group;
    }
    return part;
}

ConstTensorView StoredView::as_f32(const char *what) const {
    require(dtype == DType::F32, [&] {
        return std::string(what) + ": holds " + type_name(dtype) + " values, read here as f32 only";
    });
    return ConstTensorView(static_cast<const float *>(data), shape, strides);
}

void widen_into(const StoredView &src, const TensorView &dst) {
    if (src.dtype == DType::F32) return copy_into(src.as_f32("widen_into"), dst);
    require(src.shape == dst.shape, [&] {
        return "widen_into: source " + shape_to_string(src.shape) + " and destination " + shape_to_string(dst.shape) +
               " differ";
    });
    const Shape from = src.strides.empty() ? contiguous_strides(src.shape) : src.strides;
    const Shape to = dst.strides.empty() ? contiguous_strides(dst.shape) : dst.strides;
    if (src.dtype != DType::Int8 && from == contiguous_strides(src.shape) && dst.is_contiguous()) {
        // Both contiguous: one loop the compiler vectorises (a layer's typed input, whole).
        const uint16_t *bits = static_cast<const uint16_t *>(src.data);
        const int64_t n = src.size();
        if (src.dtype == DType::BF16) {
            for (int64_t i = 0; i < n; i++) {
                const uint32_t word = uint32_t(bits[i]) << 16;
                std::memcpy(dst.data + i, &word, sizeof word);
            }
        } else {
            for (int64_t i = 0; i < n; i++) dst.data[i] = from_f16_bits(bits[i]);
        }
        return;
    }
    const Shape scale_steps = src.scales.strides.empty() ? contiguous_strides(src.scales.shape) : src.scales.strides;
    const int r = src.rank();
    std::vector<int64_t> index(r, 0);
    for (int64_t n = 0, count = src.size(); n < count; n++) {
        int64_t a = 0, b = 0, row = 0;
        for (int i = 0; i < r; i++) a += index[i] * from[i], b += index[i] * to[i];
        float value;
        if (src.dtype == DType::Int8) {
            for (int i = 0; i < r - 1; i++) row += index[i] * scale_steps[i];
            if (src.scale_group > 0) row += index[r - 1] / src.scale_group * scale_steps[r - 1];
            value = float(static_cast<const int8_t *>(src.data)[a]) * src.scales.data[row];
        } else {
            const uint16_t bits = static_cast<const uint16_t *>(src.data)[a];
            value = src.dtype == DType::BF16 ? from_bf16_bits(bits) : from_f16_bits(bits);
        }
        dst.data[b] = value;
        for (int i = r - 1; i >= 0 && ++index[i] == src.shape[i]; i--) index[i] = 0;
    }
}

Tensor::Tensor() = default;
Tensor::~Tensor() {
    resident_.reset();  // before the memory it describes goes
    detail::give_floats(std::move(values_));
}
Tensor::Tensor(Tensor &&other) noexcept = default;  // the values' memory, and so its region, moves

Tensor::Tensor(const Tensor &other) : shape_(other.shape_), values_((other.host_current(), other.values_)) {
    if (other.resident_) keep_on_device(other.resident_->residency());
}

const Tensor &Tensor::host_current() const {
    if (resident_) resident_->fetch();
    return *this;
}

Tensor &Tensor::operator=(const Tensor &other) {
    if (this != &other) *this = Tensor(other);
    return *this;
}

Tensor &Tensor::operator=(Tensor &&other) noexcept {
    resident_.reset();  // before the memory it describes goes
    shape_ = std::move(other.shape_);
    detail::give_floats(std::move(values_));
    values_ = std::move(other.values_);
    resident_ = std::move(other.resident_);
    return *this;
}

void Tensor::keep_on_device(Residency residency) {
    if (resident_ && resident_->residency() == residency) return;
    host_current();  // what only a device held is not dropped with the old region
    resident_.reset();
    if (!values_.empty()) resident_ = std::make_unique<detail::ResidentRegion>(values_.data(), size(), residency);
}

void Tensor::host_changed(int64_t begin, int64_t end) const {
    if (resident_) resident_->host_changed(begin, end);
}

void Tensor::fetch_from_device() {
    if (resident_) resident_->fetch();
}

namespace {

// A shape too large for the machine (a cache of a billion tokens) is the caller's to change: one
// line naming it, rather than a bare std::bad_alloc from somewhere inside.
std::vector<float> allocate_values(const Shape &shape, bool zeroed) {
    const int64_t count = element_count(shape);
    try {
        return detail::take_floats(static_cast<size_t>(count), zeroed);
    } catch (const std::bad_alloc &) {
    } catch (const std::length_error &) {
    }
    constexpr int64_t floats_per_gib = int64_t{1} << 28;
    const int64_t gib = count / floats_per_gib + (count % floats_per_gib != 0);
    throw Error("tensor of shape " + shape_to_string(shape) + " needs " + std::to_string(gib) +
                " GiB, more memory than can be allocated");
}

}  // namespace

Tensor::Tensor(Shape shape) : shape_(std::move(shape)), values_(allocate_values(shape_, true)) {}

Tensor::Tensor(Shape shape, Unset) : shape_(std::move(shape)), values_(allocate_values(shape_, false)) {}

Tensor::Tensor(Shape shape, std::vector<float> values)
    : shape_(std::move(shape)), values_(std::move(values)) {
    const int64_t expected = element_count(shape_);
    require(static_cast<int64_t>(values_.size()) == expected, [&] {
        return "tensor of shape " + shape_to_string(shape_) + " needs " + std::to_string(expected) + " values, got " +
               std::to_string(values_.size());
    });
}

Tensor Tensor::reshaped(Shape shape) const {
    const int64_t count = element_count(shape);
    require(count == size(), [&] {
        return "cannot reshape " + shape_to_string(shape_) + " (" + std::to_string(size()) + " elements) to " +
               shape_to_string(shape) + " (" + std::to_string(count) + " elements)";
    });
    return Tensor(std::move(shape), host_current().values_);
}

namespace {

void copy_dims(const float *src, const int64_t *src_strides, float *dst, const int64_t *dst_strides,
               const int64_t *shape, size_t rank) {
    if (rank == 1) {
        for (int64_t i = 0; i < shape[0]; i++) dst[i * dst_strides[0]] = src[i * src_strides[0]];
        return;
    }
    for (int64_t i = 0; i < shape[0]; i++) {
        copy_dims(src + i * src_strides[0], src_strides + 1, dst + i * dst_strides[0], dst_strides + 1,
                  shape + 1, rank - 1);
    }
}

}  // namespace

void copy_into(const ConstTensorView &src, const TensorView &dst) {
    detail::require_well_formed(src, "copy");
    detail::require_well_formed(dst, "copy");
    require(src.shape == dst.shape,
            [&] { return "copy: shapes " + shape_to_string(src.shape) + " and " + shape_to_string(dst.shape) + " differ"; });
    if (src.size() == 0) return;
    const detail::DeviceCopy on_device = detail::copy_on_device(src, dst);
    if (on_device == detail::DeviceCopy::Done) return;
    detail::host_reads(src);
    if (src.shape.empty()) {
        *dst.data = *src.data;
    } else {
        const Shape s = src.strides.empty() ? contiguous_strides(src.shape) : src.strides;
        const Shape d = dst.strides.empty() ? contiguous_strides(dst.shape) : dst.strides;
        copy_dims(src.data, s.data(), dst.data, d.data(), src.shape.data(), src.shape.size());
    }
    // (After a device copy the device holds these values already.)
    if (on_device == detail::DeviceCopy::NotDone) detail::host_wrote(dst);
}

Tensor Tensor::tokens(int64_t begin, int64_t end) const {
    require(rank() >= 2 && 0 <= begin && begin <= end && end <= dim(1), [&] {
        return "tokens [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a tensor " +
               shape_to_string(shape_);
    });
    Shape out_shape = shape_;
    out_shape[1] = end - begin;
    Tensor out(out_shape);
    if (out.size() == 0) return out;
    host_current();
    const int64_t row = size() / (dim(0) * std::max<int64_t>(dim(1), 1));
    for (int64_t b = 0; b < dim(0); b++) {
        std::copy_n(data() + (b * dim(1) + begin) * row, (end - begin) * row,
                    out.data() + b * (end - begin) * row);
    }
    return out;
}

}  // namespace hattn
