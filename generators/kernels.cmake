# Every kernel, once. hattn_kernel() expands each into its per-target variants.
hattn_kernel(projection)
hattn_kernel(projection_gemv GENERATOR projection PARAMS gemv=true)
hattn_kernel(rope)
hattn_kernel(rope_interleaved GENERATOR rope PARAMS interleaved=true)
# On a GPU a block is a tile of 64 query rows walking chunks of 64 keys through shared memory,
# for the head dims in kernel_contract.h; the small tiles (32 query rows) run on devices that
# allow a block too little shared memory for those (an A100 at D >= 96). The `rows` schedule (a
# thread per query row, its chunk of scores in local memory) stays beside them, for other head
# dims and devices with too little shared memory for either (the runtime picks it) and
# `--schedule rows`: on the H200 it measured 34 to 173 times slower than the block tiles of
# d7ba98f (docs/perf/cuda.md). Halide 14's Mullapudi2016 stops with an
# internal error (a missing map entry) once the attention kernels read the sinks input in a
# softmax state's first definition.
hattn_kernel(attention_prefill GPU_PARAMS query_tile=64 key_chunk=64
             GPU_SMALL_TILES_PARAMS query_tile=32 key_chunk=64
             GPU_ROWS_PARAMS query_tile=1 key_chunk=32 NO_MULLAPUDI)
hattn_kernel(attention_prefill_masked GENERATOR attention_prefill PARAMS masked=true
             GPU_PARAMS query_tile=64 key_chunk=64 GPU_SMALL_TILES_PARAMS query_tile=32 key_chunk=64
             GPU_ROWS_PARAMS query_tile=1 key_chunk=32 NO_MULLAPUDI)
hattn_kernel(attention_decode NO_MULLAPUDI)
hattn_kernel(cca_qk_latent)
# Row norms scale whole vectors (fmul) after scalar sums: no fused multiply-add to look for.
hattn_kernel(rms_norm GENERATOR row_norm ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
hattn_kernel(layer_norm GENERATOR row_norm PARAMS layer_norm=true ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
hattn_kernel(dsa_index_scores)
# On a GPU, PV gathers 8 selected keys' values at a time (key_step).
hattn_kernel(dsa_sparse_attention GPU_PARAMS key_step=8)
# The absorbed form (decode, and a CPU's prefill): one latent head read by every query head.
hattn_kernel(dsa_sparse_attention_shared GENERATOR dsa_sparse_attention PARAMS shared_kv=true GPU_PARAMS key_step=8)
# copy_into's device copies of strided views (runtime/src/strided_copy.cpp). A copy: 128-bit
# stores on AArch64, no FMAs to look for.
hattn_kernel(strided_copy ASM_CHECKS arm_plain "str[ \t]+q[0-9]+")
# BitLinear's activation quantisation, ahead of either product form.
hattn_kernel(bitlinear_quantize ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
# BitLinear's integer products: s8 x s8 (vpmaddwd; sdot on AArch64 dotprod) and u8 x s8 (VNNI).
hattn_kernel(bitlinear_s8s8 GENERATOR bitlinear PARAMS dot_form=s8s8 ARM_VARIANTS plain dotprod
             ASM_CHECKS x86 "vpmaddwd" arm_dotprod "sdot[ \t]+v")
hattn_kernel(bitlinear_u8s8 GENERATOR bitlinear PARAMS dot_form=u8s8 ARM_VARIANTS none
             X86_TARGETS ${HATTN_X86_VNNI_TARGET} ${HATTN_X86_TARGETS} ASM_CHECKS x86 "vpdpbusd")
