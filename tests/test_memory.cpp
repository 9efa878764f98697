// The memory hattn keeps for reuse between calls (hattn/memory.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "HalideRuntime.h"
#include "hattn/kernels/projection.h"
#include "hattn/memory.h"
#include "hattn/tensor.h"
#include "memory_pool.h"
#include "support/random.h"

namespace {

using hattn::pooled_memory_bytes;
using hattn::release_pooled_memory;
using hattn::Shape;
using hattn::Tensor;

const Shape four_mib{int64_t(1) << 20};

// The default budget keeps these sizes; a budget set in the environment may keep nothing.
class MemoryPool : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::getenv("HATTN_MEMORY_POOL_MB")) GTEST_SKIP() << "HATTN_MEMORY_POOL_MB is set";
        release_pooled_memory();
    }
};

TEST_F(MemoryPool, LargeTensorStorageIsReusedAndZeroFilled) {
    const float *first = nullptr;
    {
        Tensor a(four_mib);
        a.data()[5] = 3.0f;
        first = a.data();
    }
    EXPECT_GE(pooled_memory_bytes(), size_t(4) << 20);
    const Tensor b(four_mib);
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b.values()[5], 0.0f);  // Tensor(Shape) zero-fills storage it reuses
    EXPECT_EQ(pooled_memory_bytes(), 0u);
}

TEST_F(MemoryPool, StorageMuchLargerThanTheRequestIsNotHandedOut) {
    const float *big = nullptr;
    {
        Tensor a({int64_t(4) << 20});  // 16 MiB
        big = a.data();
    }
    const Tensor small(four_mib);
    EXPECT_NE(small.data(), big);
    EXPECT_GE(pooled_memory_bytes(), size_t(16) << 20);
    release_pooled_memory();
    EXPECT_EQ(pooled_memory_bytes(), 0u);
}

TEST_F(MemoryPool, SmallTensorsAreNotKept) {
    { Tensor t({1000}); }
    EXPECT_EQ(pooled_memory_bytes(), 0u);
}

TEST_F(MemoryPool, KernelScratchIsKeptAndReusedAcrossCalls) {
    // The CPU GEMM packs x (2 MiB) and W (4 MiB) into scratch on every call.
    const Tensor x = hattn::testing::random_tensor({512, 1024}, 1);
    const Tensor w = hattn::testing::random_tensor({1024, 1024}, 2);
    Tensor first({512, 1024}), second({512, 1024});
    hattn::project(x.view(), w.view(), nullptr, first.view());
    const size_t kept = pooled_memory_bytes();
    EXPECT_GE(kept, size_t(2) << 20);
    // Later calls take the kept blocks again: without reuse each call would add `kept` bytes.
    // (Not exactly `kept`: the threads may pair requests and blocks differently.)
    for (int call = 0; call < 4; call++) hattn::project(x.view(), w.view(), nullptr, second.view());
    EXPECT_LE(pooled_memory_bytes(), 2 * kept);
    EXPECT_EQ(first.values(), second.values());
}

TEST_F(MemoryPool, HalideBlocksAreAlignedAndBlocksOfTheDefaultAllocatorGoBackToIt) {
    for (size_t bytes : {size_t(100), size_t(3) << 20}) {
        void *p = hattn::detail::pooled_halide_malloc(nullptr, bytes);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 128, 0u) << bytes;
        hattn::detail::pooled_halide_free(nullptr, p);
    }
    const size_t kept = pooled_memory_bytes();
    EXPECT_GE(kept, size_t(3) << 20);
    // An application's own Halide pipeline, sharing the runtime, frees its default blocks here.
    void *foreign = halide_default_malloc(nullptr, size_t(2) << 20);
    ASSERT_NE(foreign, nullptr);
    hattn::detail::pooled_halide_free(nullptr, foreign);
    EXPECT_EQ(pooled_memory_bytes(), kept);
}

}  // namespace
