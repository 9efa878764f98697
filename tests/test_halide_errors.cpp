// A Halide runtime error reaches the caller as one hattn::Error; the process does not abort.
#include <gtest/gtest.h>

#include "halide_call.h"
#include "hattn/error.h"
#include "hattn/tensor.h"
#include "kernel_variants.h"

namespace hattn {
namespace {

TEST(HalideErrors, BecomeOneHattnError) {
    // A bias shorter than the weight's output count: the kernel's bounds check fails inside Halide.
    Tensor x({2, 4}), w({3, 4}), b({2}), y({2, 3});
    auto xb = detail::halide_buffer(x.view()), wb = detail::halide_buffer(w.view());
    auto bb = detail::halide_buffer(b.view()), yb = detail::halide_buffer(y.view());
    try {
        detail::call_kernel("projection", detail::projection_kernel(), xb.raw_buffer(),
                            wb.raw_buffer(), bb.raw_buffer(), yb.raw_buffer());
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), Error::Kind::Internal);
        const std::string message = e.what();
        EXPECT_NE(message.find("projection kernel failed"), std::string::npos) << message;
        EXPECT_NE(message.find("bias"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace hattn
