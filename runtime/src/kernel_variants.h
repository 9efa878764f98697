// Which compiled variant of each kernel runs. The kernels, their variants and the types of their
// functions come from the kernel table (kernel_functions.h, generated from generators/kernels.cmake).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "halide_call.h"
#include "hattn/kernel_table.h"
#include "hattn/tensor.h"
#include "kernel_functions.h"  // generated: a struct per kernel in hattn::detail::kernels

namespace hattn::detail {

// The shared (CUDA) or local (OpenCL) memory a block may take on the device kernels run on, in
// bytes, set when each API is probed (OpenCL: the least of its devices'); 0 where unknown.
inline std::atomic<int64_t> cuda_shared_bytes_per_block{0}, opencl_local_bytes_per_block{0};
// Why the GPU prefill's block tiles, and its small block tiles, cannot run this head dim on a
// device allowing a block shared_bytes (0: unknown, taken as enough); "" where they can. On a GPU,
// head dims whose block tiles do not fit run the small tiles; head dims without block tiles
// (kernel_contract.h), or whose small tiles do not fit either, run the rows schedule.
struct GpuPrefillFit {
    std::string tiles_refused, small_tiles_refused;
};
GpuPrefillFit gpu_prefill_fit(int64_t head_dim, int64_t shared_bytes);
// The same on the current device (nothing refused on the CPU).
GpuPrefillFit prefill_fit(int64_t head_dim);

// The entries of one kernel in kernel_variants(): [first, first + count).
struct VariantRange {
    const char *kernel;
    size_t first, count;
};

// The index in kernel_variants() of the variant of the kernel to run now (variant_to_run),
// recorded as this thread's choice and as the last run (last_variant_run).
size_t choose_variant(const VariantRange &range, const GpuPrefillFit &fit = {});

// The function to run now of Kernel, a struct of kernel_functions.h:
// kernel_function<kernels::projection>().
template <typename Kernel>
typename Kernel::Fn kernel_function(const GpuPrefillFit &fit = {}) {
    return Kernel::functions[choose_variant({Kernel::name, Kernel::first, Kernel::count}, fit) - Kernel::first];
}

// Calls the variant of Kernel chosen now on the current device: run_kernel<kernels::rope>(...).
template <typename Kernel, typename... Args>
void run_kernel(Args... args) {
    call_kernel(Kernel::name, kernel_function<Kernel>(), args...);
}

// The variant this thread last chose for `kernel`, or null.
const KernelVariant *variant_chosen_on_this_thread(const std::string &kernel);

// Whether bf16 products run in pairs (projection_bf16_pairs, the attention and DSA indexer
// *_bf16_pairs kernels) on this CPU: bf16_dot_form(), by default where their AVX-512 BF16
// sub-target can run.
bool bf16_pairs_chosen();

// Whether queries q (any view, the head dim last) may multiply keys of type `keys` in bf16 pairs:
// bf16 keys, an even head dim, bf16_pairs_chosen(), and queries that are bf16 values already (a
// bf16 layer's: pairs round them, and the spec rounds only stored values), which it reads last.
bool bf16_pairs_for(const ConstTensorView &q, DType keys);

struct BitLinearChoice {
    const char *name;
    kernels::bitlinear_s8s8::Fn kernel;
    bool u8s8;  // the u8 x s8 form (codes Wq + 1, corrected by sum_k xq)
};
// u8 x s8 where its VNNI sub-target can run (x86), else s8 x s8; integer_dot_form() overrides.
BitLinearChoice bitlinear_kernel();

// Whether an int8 cache's decode QK runs in integer dot products (attention_decode_int8_dots, u8 x
// s8 over queries quantised per head): on the CPU, where its VNNI sub-target can run (x86), as
// integer_dot_form() allows.
bool int8_dots_chosen();
// Whether a decode over keys of type `keys` and this head dim takes them: int8 keys,
// int8_dots_chosen(), and a head dim of the kernel contract's.
bool int8_dots_for(int64_t head_dim, DType keys);

}  // namespace hattn::detail
