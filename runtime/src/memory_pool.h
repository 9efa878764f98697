// Large buffers kept for reuse between calls (hattn/memory.h is the public side).
//
// A layer call allocates the same tensors and the same Halide scratch (packed GEMM tiles, attention
// chunks) every time. Freed, glibc hands blocks this large back to the system, so every call
// page-faults all of them in again: that was a third of an mha layer prefill (S = 2048, 2 threads),
// and 80% of a GQA prefill kernel, whose per-tile scratch (128 KiB and more) glibc mmaps on every
// tile. Blocks of at least pooled_min_bytes are therefore kept, up to a byte budget, and handed
// out again for requests they fit.
#pragma once

#include <cstddef>
#include <vector>

namespace hattn::detail {

constexpr size_t pooled_min_bytes = size_t(64) << 10;

// Throws if HATTN_MEMORY_POOL_MB is not a number of MiB (then nothing is kept).
void check_memory_pool_setting();

// Halide's allocator hooks (prepare_halide_runtime installs them). Blocks are 128-byte aligned,
// with room to read a little before and after, as halide_malloc promises.
void *pooled_halide_malloc(void *user_context, size_t bytes) noexcept;
void pooled_halide_free(void *user_context, void *ptr) noexcept;

// Storage for a Tensor of n floats. `zeroed` false leaves the values unspecified (a reused block
// keeps what it held): for outputs that a kernel overwrites whole. HATTN_POISON_UNSET=1 fills
// those with NaN instead, so that a test run shows any value read before a kernel wrote it.
std::vector<float> take_floats(size_t n, bool zeroed);
// Takes back a tensor's storage (kept if large enough and within the budget, else freed).
void give_floats(std::vector<float> &&values) noexcept;

}  // namespace hattn::detail
