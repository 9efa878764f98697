// Which compiled variant of each kernel runs: the one place that names the generated functions.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

struct halide_buffer_t;

namespace hattn::detail {

// (x, weight, bias, clip, y)
using ProjectionKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, float,
                                 halide_buffer_t *);
ProjectionKernel projection_kernel();
ProjectionKernel projection_gemv_kernel();  // for calls with few rows (see project())

// (x, cos_table, sin_table, start, y)
using RopeKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                           halide_buffer_t *, halide_buffer_t *);
RopeKernel rope_kernel();
RopeKernel rope_interleaved_kernel();

// (q, k_cache, v_cache, kv_len, longest_visible, scale, causal, sinks, has_sinks, softcap,
//  has_softcap, out)
using AttentionPrefillKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                       halide_buffer_t *, int32_t, float, bool, halide_buffer_t *, bool,
                                       float, bool, halide_buffer_t *);
// On a GPU, head dims whose block tiles need more shared memory a block than the device allows run
// the small block tiles; head dims without block tiles (kernel_contract.h), or whose small tiles
// do not fit either, run the rows schedule.
AttentionPrefillKernel attention_prefill_kernel(int64_t head_dim);
// The shared (CUDA) or local (OpenCL) memory a block may take on the device kernels run on, in
// bytes, set when each API is probed (OpenCL: the least of its devices'); 0 where unknown.
inline std::atomic<int64_t> cuda_shared_bytes_per_block{0}, opencl_local_bytes_per_block{0};
// Why the GPU prefill's block tiles, and its small block tiles, cannot run this head dim on a
// device allowing a block shared_bytes (0: unknown, taken as enough); "" where they can.
struct GpuPrefillFit {
    std::string tiles_refused, small_tiles_refused;
};
GpuPrefillFit gpu_prefill_fit(int64_t head_dim, int64_t shared_bytes);
// (q, k_cache, v_cache, kv_len, longest_visible, scale, causal, sinks, has_sinks, softcap,
//  has_softcap, mask, out)
using AttentionPrefillMaskedKernel = int (*)(halide_buffer_t *, halide_buffer_t *,
                                             halide_buffer_t *, halide_buffer_t *, int32_t, float, bool,
                                             halide_buffer_t *, bool, float, bool, halide_buffer_t *,
                                             halide_buffer_t *);
AttentionPrefillMaskedKernel attention_prefill_masked_kernel(int64_t head_dim);
// (q, k_cache, v_cache, kv_len, first_key, longest_visible, scale, sinks, has_sinks, softcap,
//  has_softcap, out)
using AttentionDecodeKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                      halide_buffer_t *, halide_buffer_t *, int32_t, float, halide_buffer_t *, bool,
                                      float, bool, halide_buffer_t *);
// On a GPU, head dims past kernel_contract::gpu_decode_max_head_dim are refused, saying so.
AttentionDecodeKernel attention_decode_kernel(int64_t head_dim);

// (qk, conv0_w, conv0_b, conv1_w, conv1_b, key_scale, cos, sin, start, qk_mean, norm_eps, q, k)
using CcaQkLatentKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                  halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                  halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, bool, float,
                                  halide_buffer_t *, halide_buffer_t *);
CcaQkLatentKernel cca_qk_latent_kernel();

// (x, weight_scale, xq, xq_sum, row_scale)
using BitLinearQuantizeKernel = int (*)(halide_buffer_t *, float, halide_buffer_t *, halide_buffer_t *,
                                        halide_buffer_t *);
BitLinearQuantizeKernel bitlinear_quantize_kernel();
// (xq, packed, correction, row_scale, y)
using BitLinearKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                halide_buffer_t *);
// (iq, ik, head_w, kv_len, scale, scores)
using DsaIndexScoresKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                     float, halide_buffer_t *);
DsaIndexScoresKernel dsa_index_scores_kernel();
// (q, keys, values, indices, scale, out)
using DsaSparseAttentionKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                         halide_buffer_t *, float, halide_buffer_t *);
DsaSparseAttentionKernel dsa_sparse_attention_kernel();
DsaSparseAttentionKernel dsa_sparse_attention_shared_kernel();  // keys and values of one head

// (in, out): copy_into's strided device copies (strided_copy.h)
using StridedCopyKernel = int (*)(halide_buffer_t *, halide_buffer_t *);
StridedCopyKernel strided_copy_kernel();

// (x, weight, bias, eps, y)
using RowNormKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, float, halide_buffer_t *);
RowNormKernel rms_norm_kernel();
RowNormKernel layer_norm_kernel();

// The family ("x86", "x86_auto", ...) of the variant this thread last chose for `kernel`, or "".
std::string family_chosen_on_this_thread(const std::string &kernel);

struct BitLinearChoice {
    const char *name;
    BitLinearKernel kernel;
    bool u8s8;  // the u8 x s8 form (codes Wq + 1, corrected by sum_k xq)
};
// u8 x s8 where its VNNI sub-target can run (x86), else s8 x s8; integer_dot_form() overrides.
BitLinearChoice bitlinear_kernel();

}  // namespace hattn::detail
