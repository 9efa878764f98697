#include <gtest/gtest.h>

#include "support/errors.h"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "halide_view.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/kv_cache.h"
#include "hattn/stored_tensor.h"
#include "hattn/tensor.h"

namespace {

using hattn::Shape;
using hattn::Tensor;
using hattn::TensorView;

using hattn::testing::error_message;
using hattn::testing::expect_contains;

Tensor iota_tensor(Shape shape) {
    Tensor t(std::move(shape));
    std::iota(t.data(), t.data() + t.size(), 0.0f);
    return t;
}

// Element `coords` (Halide order) of a buffer, addressed through its strides as a kernel would.
float &element(const Halide::Runtime::Buffer<float> &buffer, const std::vector<int> &coords) {
    ptrdiff_t offset = 0;
    for (size_t i = 0; i < coords.size(); i++) offset += coords[i] * buffer.dim(int(i)).stride();
    return buffer.data()[offset];
}

TEST(TensorTest, ShapeHelpers) {
    EXPECT_EQ(hattn::shape_to_string({2, 7, 64}), "[2, 7, 64]");
    EXPECT_EQ(hattn::shape_to_string({}), "[]");
    EXPECT_EQ(hattn::element_count({2, 7, 64}), 2 * 7 * 64);
    EXPECT_EQ(hattn::element_count({}), 1);
    EXPECT_EQ(hattn::element_count({3, 0}), 0);
    expect_contains(error_message([] { hattn::element_count({2, -1}); }), "negative");
    expect_contains(error_message([] {
                        hattn::element_count({int64_t(1) << 40, int64_t(1) << 40});
                    }),
                    "overflows");
    // A zero extent first makes no difference: the others' strides would overflow all the same.
    expect_contains(error_message([] { hattn::element_count({0, int64_t(1) << 40, int64_t(1) << 40}); }), "overflows");
}

TEST(TensorTest, HalideBufferReversesDimensionsAndAliases) {
    Tensor t = iota_tensor({2, 3, 4});
    Halide::Runtime::Buffer<float> buffer = hattn::detail::halide_buffer(t.view());
    ASSERT_EQ(buffer.dimensions(), 3);
    EXPECT_EQ(buffer.dim(0).extent(), 4);
    EXPECT_EQ(buffer.dim(0).stride(), 1);
    EXPECT_EQ(buffer.dim(1).extent(), 3);
    EXPECT_EQ(buffer.dim(1).stride(), 4);
    EXPECT_EQ(buffer.dim(2).extent(), 2);
    EXPECT_EQ(buffer.dim(2).stride(), 12);
    EXPECT_EQ(buffer.dim(2).min(), 0);
    EXPECT_EQ(buffer.data(), t.data());

    // Halide (x, y, z) is PyTorch [z, y, x]; a write through the buffer lands in the tensor.
    EXPECT_EQ(element(buffer, {3, 2, 1}), 1 * 12 + 2 * 4 + 3);
    element(buffer, {1, 2, 1}) = -5.0f;
    EXPECT_EQ(t.values()[1 * 12 + 2 * 4 + 1], -5.0f);
}

// Halide takes a null host pointer for a bounds query (computing nothing): a view without data is
// refused before any kernel sees it.
TEST(TensorTest, AViewWithoutDataIsRefused) {
    expect_contains(error_message([] { hattn::detail::halide_buffer(TensorView(nullptr, {2, 3})); }), "has no data");
    EXPECT_NO_THROW(hattn::detail::halide_buffer(TensorView(nullptr, {0, 3})));
    Tensor t({2, 3});
    const hattn::ConstTensorView no_data(nullptr, {2, 3});
    expect_contains(error_message([&] { hattn::copy_into(no_data, t.view()); }),
                    "copy: a tensor view of [2, 3] has no data");
    TensorView short_strides = t.view();
    short_strides.strides = {1};
    expect_contains(error_message([&] { hattn::copy_into(t.view(), short_strides); }),
                    "copy: a tensor view of [2, 3] has 1 strides");
    EXPECT_FALSE(short_strides.is_contiguous());
}

TEST(TensorTest, StridedViewKeepsStrides) {
    Tensor t = iota_tensor({4, 6});
    // The transpose of t, shape [6, 4], as a view of the same memory.
    TensorView transposed(t.data(), {6, 4}, {1, 6});
    EXPECT_FALSE(transposed.is_contiguous());
    Halide::Runtime::Buffer<float> buffer = hattn::detail::halide_buffer(transposed);
    EXPECT_EQ(buffer.dim(0).extent(), 4);
    EXPECT_EQ(buffer.dim(0).stride(), 6);
    EXPECT_EQ(buffer.dim(1).extent(), 6);
    EXPECT_EQ(buffer.dim(1).stride(), 1);
    EXPECT_EQ(element(buffer, {2, 5}), t.values()[2 * 6 + 5]);
}

TEST(TensorTest, CropSelectsARangeOfOneDimension) {
    Tensor t = iota_tensor({2, 3, 4});
    const TensorView middle = t.view().crop(1, 1, 3);  // [2, 2, 4]: rows 1 and 2 of each matrix
    EXPECT_EQ(middle.shape, Shape({2, 2, 4}));
    EXPECT_EQ(middle.strides, Shape({12, 4, 1}));
    EXPECT_EQ(middle.data[1 * 12 + 0 * 4 + 3], t.values()[1 * 12 + 1 * 4 + 3]);
    const TensorView tail = middle.crop(2, 3, 4);  // a crop of a crop: the last column
    EXPECT_EQ(tail.shape, Shape({2, 2, 1}));
    EXPECT_EQ(tail.data[1 * 12 + 1 * 4], t.values()[1 * 12 + 2 * 4 + 3]);
    EXPECT_EQ(t.view().crop(0, 2, 2).size(), 0);
    expect_contains(error_message([&] { t.view().crop(2, 3, 5); }), "outside shape [2, 3, 4]");
    expect_contains(error_message([&] { t.view().crop(3, 0, 1); }), "dimension 3");
    hattn::TensorView short_strides = t.view();
    short_strides.strides = {1};  // a public field: set wrongly, it is named before it is read
    EXPECT_EQ(error_message([&] { short_strides.crop(2, 0, 1); }),
              "crop: a view of shape [2, 3, 4] has 1 strides (none, or one per dimension)");
}

// What a const object shows can only be read: the compiler refuses writes through it.
static_assert(std::is_same_v<decltype(std::declval<const Tensor &>().view()), hattn::ConstTensorView>);
static_assert(std::is_same_v<decltype(std::declval<Tensor &>().view()), TensorView>);
static_assert(std::is_same_v<decltype(std::declval<const hattn::KVCache &>().keys()), hattn::StoredView>);
static_assert(std::is_same_v<decltype(hattn::StoredView::data), const void *>);
// The values never change count (the shape says how many there are): no resizing through values().
static_assert(std::is_same_v<decltype(std::declval<Tensor &>().values()), const std::vector<float> &>);
static_assert(std::is_convertible_v<TensorView, hattn::ConstTensorView>);
static_assert(!std::is_convertible_v<hattn::ConstTensorView, TensorView>);
static_assert(!std::is_constructible_v<TensorView, hattn::ConstTensorView>);
static_assert(std::is_same_v<decltype(std::declval<hattn::ConstTensorView>().crop(0, 0, 0)), hattn::ConstTensorView>);

TEST(TensorTest, AReadOnlyViewIsTheSameMemory) {
    Tensor t = iota_tensor({2, 3});
    const Tensor &shown = t;
    const hattn::ConstTensorView read = shown.view(), from_writable = t.view().crop(1, 1, 3);
    EXPECT_EQ(read.data, t.data());
    EXPECT_EQ(read.shape, t.shape());
    EXPECT_EQ(from_writable.data, t.data() + 1);
    EXPECT_EQ(from_writable.strides, Shape({3, 1}));
    EXPECT_FALSE(from_writable.is_contiguous());
}

TEST(TensorTest, AMissingDimensionIsAnError) {
    const Tensor t({2, 3});
    EXPECT_EQ(error_message([&] { t.dim(2); }), "dimension 2 of a tensor [2, 3] does not exist");
    EXPECT_EQ(error_message([&] { t.view().dim(-1); }), "dimension -1 of a tensor [2, 3] does not exist");
    EXPECT_EQ(t.dim(1), 3);
}

TEST(TensorTest, Contiguity) {
    float data[6] = {};
    EXPECT_TRUE(TensorView(data, {2, 3}).is_contiguous());
    EXPECT_TRUE(TensorView(data, {2, 3}, {3, 1}).is_contiguous());
    // Stepping over a dimension of extent 1 never happens, so its stride is irrelevant.
    EXPECT_TRUE(TensorView(data, {2, 1, 3}, {3, 99, 1}).is_contiguous());
    EXPECT_FALSE(TensorView(data, {2, 3}, {1, 2}).is_contiguous());
    expect_contains(error_message([] { TensorView(nullptr, {2, 3}, {1}); }), "1 strides");
}

TEST(TensorTest, HalideBufferRejects32BitOverflow) {
    expect_contains(error_message([] { hattn::detail::halide_buffer(TensorView(nullptr, {int64_t(1) << 31})); }),
                    "exceeds INT32_MAX");
    expect_contains(error_message([] {
                        hattn::detail::halide_buffer(TensorView(nullptr, {2, 2}, {int64_t(1) << 31, 1}));
                    }),
                    "stride 2147483648 in dimension 0");
    // Extents fit but the outer contiguous stride does not.
    expect_contains(error_message([] {
                        hattn::detail::halide_buffer(TensorView(nullptr, {2, 1 << 16, 1 << 16}));
                    }),
                    "stride 4294967296");
}

TEST(TensorTest, ConstructionChecksValueCount) {
    Tensor zeros({2, 3});
    EXPECT_EQ(zeros.size(), 6);
    EXPECT_EQ(zeros.values(), std::vector<float>(6, 0.0f));
    Tensor t({2, 2}, {1, 2, 3, 4});
    EXPECT_EQ(t.dim(0), 2);
    expect_contains(error_message([] {
                        Tensor({2, 3}, {1, 2, 3, 4, 5});
                    }),
                    "tensor of shape [2, 3] needs 6 values, got 5");
}

// More than the machine can allocate is one line naming the shape, not a bare std::bad_alloc;
// past what a vector can hold (a std::length_error, before any allocation) too.
TEST(TensorTest, AShapeTooLargeToAllocateIsNamed) {
    expect_contains(error_message([] { Tensor({int64_t{1} << 62}, Tensor::unset); }),
                    "tensor of shape [4611686018427387904] needs 17179869184 GiB, more memory than can be allocated");
#ifdef __SANITIZE_ADDRESS__
    GTEST_SKIP() << "ASan's operator new reports a failed allocation and aborts; it never throws std::bad_alloc";
#endif
    EXPECT_EQ(error_message([] {
                  Tensor({int64_t{1} << 40, int64_t{1} << 20});
              }),
              "tensor of shape [1099511627776, 1048576] needs 4294967296 GiB, more memory than can be allocated");
    // A cache is its tensors: one too large is refused the same way.
    expect_contains(error_message([] { hattn::KVCache(1, 1 << 20, 1 << 20, 1 << 20); }),
                    "tensor of shape [1, 1048576, 1048576, 1048576] needs");
}

TEST(TensorTest, Reshaped) {
    const Tensor t = iota_tensor({2, 3});
    const Tensor r = t.reshaped({3, 1, 2});
    EXPECT_EQ(r.shape(), (Shape{3, 1, 2}));
    EXPECT_EQ(r.values(), t.values());
    expect_contains(error_message([] {
                        iota_tensor({2, 3}).reshaped({4, 2});
                    }),
                    "cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)");
}

// A StoredTensor holds its elements in its type: 2 bytes a value for bf16 and f16, rounded as
// storing rounds (hattn/half.h), and read back exactly; a strided source is taken in order.
TEST(StoredTensorTest, HoldsItsValuesRoundedInItsType) {
    const Tensor values({2, 3}, {1.0f, 1.00390625f, -2.5f, 65504.0f, 1e6f, 0.1f});
    for (hattn::DType dtype : {hattn::DType::F32, hattn::DType::BF16, hattn::DType::F16}) {
        const hattn::StoredTensor stored = hattn::StoredTensor::rounded(dtype, values.view());
        EXPECT_EQ(stored.dtype(), dtype);
        EXPECT_EQ(stored.shape(), (Shape{2, 3}));
        EXPECT_EQ(stored.bytes(), 6 * int64_t(hattn::dtype_size(dtype)));
        const Tensor back = stored.widened();
        for (int i = 0; i < 6; i++) EXPECT_EQ(back.data()[i], hattn::round_to(dtype, values.data()[i])) << i;
        const hattn::StoredView view = stored.view();
        EXPECT_EQ(view.data, stored.data());
        EXPECT_EQ(view.dtype, dtype);
    }
    EXPECT_EQ(hattn::StoredTensor::rounded(hattn::DType::F16, values.view()).widened().data()[4], 65504.0f);
    // The transpose of `values`, through a strided view.
    const hattn::ConstTensorView transposed(values.data(), {3, 2}, {1, 3});
    const Tensor t = hattn::StoredTensor::rounded(hattn::DType::BF16, transposed).widened();
    EXPECT_EQ(t.data()[1], hattn::round_to(hattn::DType::BF16, 65504.0f));
    expect_contains(error_message([] { hattn::StoredTensor(hattn::DType::Int8, {2}); }), "int8");
}

}  // namespace
