// The strided_copy kernel, which copy_into runs for device copies of strided views: which views it
// takes (and in what shape), that every variant copies exactly the view's elements and nothing
// else, and that device copies of strided views go through it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/kernels/projection.h"
#include "strided_copy.h"
#include "support/device.h"
#include "support/kernel_checks.h"
#include "support/random.h"

namespace hattn {
namespace {

// A [a, b, c, d] view of a random [a, b, c + 1, d + 3] tensor copied with the kernel into the
// same view of a zero tensor laid out [a, c, b + 2, d] (b and c swapped: no two dims merge), and
// the largest difference from a host copy into the same layout: 0 when every element of the view
// arrived and nothing outside it was written.
double strided_copy_error(int64_t a, int64_t b, int64_t c, int64_t d, uint32_t seed) {
    const Tensor src_full = testing::random_tensor({a, b, c + 1, d + 3}, seed);
    const ConstTensorView src(src_full.data(), {a, b, c, d}, {b * (c + 1) * (d + 3), (c + 1) * (d + 3), d + 3, 1});
    const Shape dst_full_shape{a, c, b + 2, d};
    const Shape dst_strides{c * (b + 2) * d, d, (b + 2) * d, 1};
    Tensor got(dst_full_shape), expected(dst_full_shape);
    detail::copy_with_kernel(src, TensorView(got.data(), {a, b, c, d}, dst_strides));
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            for (int64_t k = 0; k < c; k++)
                std::copy_n(src.data + i * src.strides[0] + j * src.strides[1] + k * src.strides[2], d,
                            expected.data() + i * dst_strides[0] + j * dst_strides[1] + k * dst_strides[2]);
    double worst = 0;
    for (int64_t i = 0; i < got.size(); i++) worst = std::max(worst, double(std::abs(got.data()[i] - expected.data()[i])));
    return worst;
}

// At the generator's estimates, x 128, y 16, z 2048 (as the kernel sees [1, 2048, 16, 128]).
const bool check_registered = testing::register_kernel_check(
    "strided_copy", {[] { return std::max(strided_copy_error(2, 5, 3, 7, 1), strided_copy_error(1, 33, 9, 70, 2)); },
                     0.0, [] { return strided_copy_error(1, 2048, 16, 128, 3); }});

// The merged shape copy_kernel_buffers gives, (extent, source stride, destination stride) per dim.
std::vector<std::array<int64_t, 3>> kernel_dims(const ConstTensorView &src, const TensorView &dst) {
    const auto buffers = detail::copy_kernel_buffers(src, dst);
    std::vector<std::array<int64_t, 3>> dims;
    if (!buffers) return dims;
    for (int i = 0; i < 4; i++) {
        dims.push_back({buffers->first.dim(i).extent(), buffers->first.dim(i).stride(), buffers->second.dim(i).stride()});
    }
    return dims;
}

TEST(StridedCopy, MergesDimsContiguousInBothViews) {
    // [S, H, N] of a [S, H, N + Rd] tensor into a contiguous one: S and H merge (a pitch of N + Rd).
    Tensor wide({6, 4, 12}), narrow({6, 4, 8});
    const ConstTensorView no_rope(wide.data(), {6, 4, 8}, {48, 12, 1});
    using D = std::array<int64_t, 3>;
    EXPECT_EQ(kernel_dims(no_rope, narrow.view()), (std::vector<D>{{8, 1, 1}, {24, 12, 8}, {1, 0, 0}, {1, 0, 0}}));
    // Extent-1 dims leave no trace.
    const ConstTensorView one_row(wide.data(), {1, 6, 1, 8}, {0, 48, 0, 1});
    EXPECT_EQ(kernel_dims(one_row, TensorView(narrow.data(), {1, 6, 1, 8})),
              (std::vector<D>{{8, 1, 1}, {6, 48, 8}, {1, 0, 0}, {1, 0, 0}}));
}

TEST(StridedCopy, LeavesOneRunAndUnfitViewsToHalidesCopy) {
    Tensor a({4, 8}), b({4, 8});
    EXPECT_FALSE(detail::copy_kernel_buffers(a.view(), b.view())) << "one contiguous run: one memcpy";
    const ConstTensorView every_other(a.data(), {4, 4}, {8, 2});
    EXPECT_FALSE(detail::copy_kernel_buffers(every_other, TensorView(b.data(), {4, 4}))) << "inner stride 2";
    // Five dims, none of them mergeable (the destination's order reversed).
    Tensor five({2, 2, 2, 2, 4}), reversed({2, 2, 2, 2, 4});
    const TensorView shuffled(reversed.data(), {2, 2, 2, 2, 4}, {4, 8, 16, 32, 1});
    EXPECT_FALSE(detail::copy_kernel_buffers(five.view(), shuffled)) << "more than 4 dims";
}

// The kernel's threads would race where the views share memory: such copies go run by run, in
// order. (Judged by the spans the views cover: two halves of each row count as overlapping.)
TEST(StridedCopy, LeavesViewsSharingMemoryToHalidesCopy) {
    Tensor t({4, 16}), other({4, 16});
    const ConstTensorView left(t.data(), {4, 8}, {16, 1});
    EXPECT_FALSE(detail::copy_kernel_buffers(left, TensorView(t.data() + 4, {4, 8}, {16, 1})));
    EXPECT_FALSE(detail::copy_kernel_buffers(left, TensorView(t.data() + 8, {4, 8}, {16, 1})));
    EXPECT_TRUE(detail::copy_kernel_buffers(left, TensorView(other.data() + 8, {4, 8}, {16, 1})));
}

TEST(StridedCopy, RefusesViewsItCannotTake) {
    Tensor a({4, 8}), b({4, 8});
    EXPECT_THROW(detail::copy_with_kernel(a.view(), b.view()), Error);
}

class StridedCopyOnGpu : public testing::OnEachGpu {};

// Kernel results held only on the device, copied as a strided view into another device tensor:
// the kernel runs (one launch), and the values are the CPU's.
TEST_P(StridedCopyOnGpu, DeviceCopiesOfStridedViewsRunTheKernel) {
    const Tensor x = testing::random_tensor({6, 16}, 4), w = testing::random_tensor({4 * 12, 16}, 5);
    Tensor y({6, 4 * 12}), copied({6, 4, 8}), expected({6, 4, 8});
    const ConstTensorView no_rope(y.data(), {6, 4, 8}, {48, 12, 1});
    y.keep_on_device(Residency::DeviceOutput);
    copied.keep_on_device(Residency::DeviceOutput);
    // The kernel's last run on the CPU, so that the check below sees this copy's.
    Tensor on_cpu({6, 4, 8});
    detail::copy_with_kernel(no_rope, on_cpu.view());
    ASSERT_NE(last_variant_run("strided_copy"), std::string(device_name(GetParam())) + "_hand");
    {
        const testing::OnDevice on(GetParam());
        project(x.view(), w.view(), nullptr, y.view());
        copy_into(no_rope, copied.view());
        EXPECT_EQ(last_variant_run("strided_copy"), std::string(device_name(GetParam())) + "_hand");
    }
    y.fetch_from_device();
    copy_into(no_rope, expected.view());  // on the host, from the device's results
    copied.fetch_from_device();
    EXPECT_EQ(copied.values(), expected.values());
}

HATTN_INSTANTIATE_ON_EACH_GPU(StridedCopyOnGpu);

}  // namespace
}  // namespace hattn
