# The kernel table: every kernel, once. hattn_kernel() (cmake/hattn_kernel.cmake) builds each
# kernel's variants and records them; the runtime's table of functions, `hattn info` and the
# forced-variant tests are generated from those records. docs/architecture.md, "Adding a kernel".

# f16 on AArch64: Halide 14 emits fcvtl and fcvtn (base ARMv8 instructions) only for targets with
# arm_fp16, which would also allow half arithmetic (ARMv8.2 FP16). The f16 kernels do none, and
# their assembly tests forbid it, so they run on every AArch64 core (CI: qemu's cortex-a53 too).
set(f16_arm ARM_FEATURES arm_fp16)
set(no_half_arithmetic
    "![ \t]([su]cvtf|fcsel|f(add|sub|mul|mla|mls|div|max|min|abs|neg|sqrt|cm|ac|cvtz|cvta|cvtm|cvtp|cvtn[su]|mov|rint|recp|rsqrt)[a-z0-9]*)[ \t][^/]*(h[0-9]+|\\.[248]h)")
set(f16_vector_widen "fcvtl2?[ \t]+v[0-9]+\\.4s, v[0-9]+\\.4h")
hattn_kernel(projection PARAMS weight.type=float32)
hattn_kernel(projection_gemv GENERATOR projection PARAMS gemv=true weight.type=float32)
# Weights kept as stored in 16 bits (a layer's dtype bf16 or f16; uint16 buffers, storage_type.h),
# widened as they are packed or streamed: hand schedules on CPUs, the float32 ones on GPUs.
hattn_kernel(projection_bf16 GENERATOR projection PARAMS weight_type=bf16 weight.type=uint16 HAND_ONLY)
hattn_kernel(projection_gemv_bf16 GENERATOR projection PARAMS gemv=true weight_type=bf16 weight.type=uint16 HAND_ONLY)
hattn_kernel(projection_f16 GENERATOR projection PARAMS weight_type=f16 weight.type=uint16 HAND_ONLY ${f16_arm}
             ASM_CHECKS arm_plain "${f16_vector_widen}" arm_plain "${no_half_arithmetic}")
hattn_kernel(projection_gemv_f16 GENERATOR projection PARAMS gemv=true weight_type=f16 weight.type=uint16 HAND_ONLY
             ${f16_arm} ASM_CHECKS arm_plain "${f16_vector_widen}" arm_plain "${no_half_arithmetic}")
# Halide compiles the sapphirerapids sub-target for LLVM's sapphirerapids CPU, which also has
# AVX512-FP16 and AVX-VNNI (VEX-encoded vpdpbusd on 128 and 256 bits). Zen 4 has neither and Zen 5
# no FP16, although both run this sub-target: none of those instructions may appear in it
# (docs/perf/log.md, "Storage types: what was built"; schedules/x86/projection_bf16_pairs.cpp).
set(sapphirerapids_only "![ \t](vmovw|v[a-z0-9]+[ps]h)[ \t]|{vex}")
# bf16 weights times x in bf16 pairs (vdpbf16ps: twice the products of a float32 FMA), for calls
# past the gemv's rows on CPUs with AVX512-BF16 (the runtime chooses, as for BitLinear's VNNI).
# W is read as uint32 words of two weights ([out, in / 2]); the SSE4.1 entry is the multi-target
# library's fallback, which the runtime does not choose.
hattn_kernel(projection_bf16_pairs GENERATOR projection PARAMS weight_type=bf16 bf16_pairs=true weight.type=uint32
             X86_TARGETS ${HATTN_X86_SAPPHIRERAPIDS_TARGET} x86-64-linux-sse41 ARM_VARIANTS none HAND_ONLY NO_GPU
             ASM_CHECKS x86 "vdpbf16ps" x86 "${sapphirerapids_only}")
# The gemv's (calls of few rows) in bf16 pairs: W's bf16 values as stored (uint16), in blocks of
# 32 inputs (kernel_contract.h), for inputs that are a multiple of them.
hattn_kernel(projection_gemv_bf16_pairs GENERATOR projection PARAMS gemv=true weight_type=bf16 bf16_pairs=true
             weight.type=uint16 X86_TARGETS ${HATTN_X86_SAPPHIRERAPIDS_TARGET} x86-64-linux-sse41 ARM_VARIANTS none
             HAND_ONLY NO_GPU ASM_CHECKS x86 "vdpbf16ps" x86 "${sapphirerapids_only}")
# A bf16 or f16 layer's activations rounded in place where a kernel stored them (on a GPU, without
# bringing them to the host): integer operations (bf16: the vector adds of rounding half up on
# AArch64), or the conversion instructions where the target has them (f16: fcvtn on AArch64).
hattn_kernel(round_to_bf16 GENERATOR round_values PARAMS to=bf16 HAND_ONLY ASM_CHECKS arm_plain "add[ \t]+v[0-9]+\\.4s")
hattn_kernel(round_to_f16 GENERATOR round_values PARAMS to=f16 HAND_ONLY ${f16_arm}
             ASM_CHECKS arm_plain "fcvtn[ \t]+v[0-9]+\\.4h, v[0-9]+\\.4s" arm_plain "${no_half_arithmetic}")
hattn_kernel(rope)
hattn_kernel(rope_interleaved GENERATOR rope PARAMS interleaved=true)
# On a GPU: block tiles, small block tiles for devices with less shared memory a block, and the
# rows schedule for other head dims (kernel_contract.h; docs/perf/cuda.md). Mullapudi2016 fails
# on these generators in Halide 14 (docs/perf/log.md, "Autoscheduled and tuned schedules").
set(f32_cache k_cache.type=float32 v_cache.type=float32)
set(gpu_prefill GPU_SMALL_TILES_PARAMS tiles=small GPU_ROWS_PARAMS tiles=rows)
hattn_kernel(attention_prefill PARAMS ${f32_cache} ${gpu_prefill} NO_MULLAPUDI)
hattn_kernel(attention_prefill_masked GENERATOR attention_prefill PARAMS masked=true ${f32_cache} ${gpu_prefill}
             NO_MULLAPUDI)
hattn_kernel(attention_decode PARAMS ${f32_cache} NO_MULLAPUDI)
# The same over caches of 16-bit values (kv_dtype bf16, f16; uint16 buffers, storage_type.h), read
# in place and widened as they are read: hand schedules on CPUs, the float32 ones on GPUs. bf16
# widens with a shift, f16 with fcvtl on AArch64 (CUDA loads halves) and elsewhere with bit moves
# and a multiply (schedules::widen_to_f32): Halide 14 emits no F16C.
# The assembly shows the widening: the decode's vectors of keys (shll by 16 for bf16, fcvtl for
# f16), the prefill's scalars broadcast to a query tile.
foreach (type IN ITEMS bf16 f16)
    if (type STREQUAL "bf16")
        set(cache kv_type=bf16 k_cache.type=uint16 v_cache.type=uint16)
        set(vector_widen "shll[ \t]+v[0-9]+\\.4s, v[0-9]+\\.4h, #16")
        set(scalar_widen "lsl[ \t]+w[0-9]+, w[0-9]+, #16")
        set(checks ASM_CHECKS)
        set(arm "")
    else ()
        set(cache kv_type=f16 k_cache.type=uint16 v_cache.type=uint16)
        set(vector_widen "${f16_vector_widen}")
        set(scalar_widen "fcvt[ \t]+s[0-9]+, h[0-9]+")
        set(checks ASM_CHECKS arm_plain "${no_half_arithmetic}")
        set(arm ${f16_arm})
    endif ()
    hattn_kernel(attention_prefill_${type} GENERATOR attention_prefill PARAMS ${cache} HAND_ONLY ${gpu_prefill}
                 ${arm} ${checks} arm_plain "${scalar_widen}")
    hattn_kernel(attention_prefill_masked_${type} GENERATOR attention_prefill PARAMS masked=true ${cache}
                 HAND_ONLY ${gpu_prefill} ${arm} ${checks} arm_plain "${scalar_widen}")
    hattn_kernel(attention_decode_${type} GENERATOR attention_decode PARAMS ${cache} HAND_ONLY ${arm}
                 ${checks} arm_plain "${vector_widen}")
endforeach ()
# A bf16 cache's QK in bf16 pairs (vdpbf16ps), as projection_bf16_pairs: for queries of bf16 values
# (a bf16 layer's) and even head dims, on CPUs with AVX512-BF16 (the runtime chooses). PV keeps
# float32 products: its probabilities are not stored values, so rounding them is not the spec's.
set(cache kv_type=bf16 k_cache.type=uint16 v_cache.type=uint16 bf16_pairs=true)
set(pairs_targets X86_TARGETS ${HATTN_X86_SAPPHIRERAPIDS_TARGET} x86-64-linux-sse41 ARM_VARIANTS none HAND_ONLY NO_GPU
    ASM_CHECKS x86 "vdpbf16ps" x86 "${sapphirerapids_only}")
hattn_kernel(attention_prefill_bf16_pairs GENERATOR attention_prefill PARAMS ${cache} ${pairs_targets})
hattn_kernel(attention_prefill_masked_bf16_pairs GENERATOR attention_prefill PARAMS masked=true ${cache}
             ${pairs_targets})
hattn_kernel(attention_decode_bf16_pairs GENERATOR attention_decode PARAMS ${cache} ${pairs_targets})
# Over int8 caches (kv_dtype int8): codes widened and multiplied by their row's scale as they are
# read (spec/attention.md section 5), without a dequantised copy.
set(cache kv_type=int8 k_cache.type=int8 v_cache.type=int8)
hattn_kernel(attention_prefill_int8 GENERATOR attention_prefill PARAMS ${cache} HAND_ONLY ${gpu_prefill})
hattn_kernel(attention_prefill_masked_int8 GENERATOR attention_prefill PARAMS masked=true ${cache} HAND_ONLY
             ${gpu_prefill})
hattn_kernel(attention_decode_int8 GENERATOR attention_decode PARAMS ${cache} HAND_ONLY
             ASM_CHECKS arm_plain "scvtf[ \t]+v[0-9]+\\.4s")
# QK in integer dot products (VNNI's vpdpbusd, u8 x s8) over queries quantised per head, on CPUs
# with AVX512-VNNI for the contract's head dims (the runtime chooses, as for BitLinear's u8 x s8).
hattn_kernel(attention_decode_int8_dots GENERATOR attention_decode PARAMS ${cache} int8_dots=true
             X86_TARGETS ${HATTN_X86_SAPPHIRERAPIDS_TARGET} x86-64-linux-sse41 ARM_VARIANTS none HAND_ONLY NO_GPU
             ASM_CHECKS x86 "vpdpbusd" x86 "${sapphirerapids_only}")
hattn_kernel(cca_qk_latent)
# Row norms scale whole vectors (fmul) after scalar sums: no fused multiply-add to look for.
hattn_kernel(rms_norm GENERATOR row_norm ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
hattn_kernel(layer_norm GENERATOR row_norm PARAMS layer_norm=true ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
# A DSA state holds its indexer keys and the latent's rotary part in the layer's dtype, the
# latent's R values in its kv_dtype (spec/attention.md section 5): the kernels read them in place,
# widened as they are read (an int8 code times its group's scale).
hattn_kernel(dsa_index_scores PARAMS ik.type=float32)
hattn_kernel(dsa_index_scores_bf16 GENERATOR dsa_index_scores PARAMS key_type=bf16 ik.type=uint16 HAND_ONLY)
hattn_kernel(dsa_index_scores_f16 GENERATOR dsa_index_scores PARAMS key_type=f16 ik.type=uint16 HAND_ONLY ${f16_arm}
             ASM_CHECKS arm_plain "fmla[ \t]+v[0-9]+\\.4s" arm_plain "${no_half_arithmetic}")
# A bf16 layer's indexer in bf16 pairs (vdpbf16ps), as the attention's QK: its queries are bf16
# values, and the runtime chooses this variant on CPUs with AVX512-BF16.
hattn_kernel(dsa_index_scores_bf16_pairs GENERATOR dsa_index_scores PARAMS key_type=bf16 ik.type=uint16 bf16_pairs=true
             ${pairs_targets})
# On a GPU, PV gathers 8 selected keys' values at a time (key_step).
hattn_kernel(dsa_sparse_attention PARAMS keys.type=float32 values.type=float32 GPU_PARAMS key_step=8)
# The absorbed form (decode, and a CPU's prefill): one latent head read by every query head, a
# variant per pair of storage types, dsa_latent_attention_<latent>_<rotary> (f32 and f32 unnamed).
set(buffer_type_f32 float32)
set(buffer_type_bf16 uint16)
set(buffer_type_f16 uint16)
set(buffer_type_int8 int8)
foreach (latent IN ITEMS f32 bf16 f16 int8)
    foreach (rotary IN ITEMS f32 bf16 f16)
        set(name dsa_latent_attention_${latent}_${rotary})
        set(hand_only HAND_ONLY)
        if (latent STREQUAL "f32" AND rotary STREQUAL "f32")
            set(name dsa_latent_attention)
            set(hand_only "")
        endif ()
        set(arm "")
        if (latent STREQUAL "f16" OR rotary STREQUAL "f16")
            set(arm ${f16_arm} ASM_CHECKS arm_plain "fmla[ \t]+v[0-9]+\\.4s" arm_plain "${no_half_arithmetic}")
        endif ()
        hattn_kernel(${name} GENERATOR dsa_sparse_attention
                     PARAMS shared_kv=true latent_type=${latent} rotary_type=${rotary}
                            keys.type=${buffer_type_${latent}} values.type=${buffer_type_${latent}}
                     ${hand_only} GPU_PARAMS key_step=8 ${arm})
    endforeach ()
endforeach ()
# A bf16 layer's bf16 latent, its logits in bf16 pairs (vdpbf16ps), as the indexer's: its queries
# (q_abs) are bf16 values, and the runtime chooses this variant on CPUs with AVX512-BF16.
hattn_kernel(dsa_latent_attention_bf16_bf16_pairs GENERATOR dsa_sparse_attention
             PARAMS shared_kv=true latent_type=bf16 rotary_type=bf16 bf16_pairs=true keys.type=uint16
                    values.type=uint16 ${pairs_targets})
# copy_into's device copies of strided views. A copy: 128-bit stores on AArch64, no FMAs.
hattn_kernel(strided_copy ASM_CHECKS arm_plain "str[ \t]+q[0-9]+")
# BitLinear's activation quantisation, ahead of either product form.
hattn_kernel(bitlinear_quantize ASM_CHECKS arm_plain "fmul[ \t]+v[0-9]+\\.4s")
# BitLinear's integer products: s8 x s8 (vpmaddwd; sdot on AArch64 dotprod) and u8 x s8 (VNNI).
hattn_kernel(bitlinear_s8s8 GENERATOR bitlinear PARAMS dot_form=s8s8 ARM_VARIANTS plain dotprod
             ASM_CHECKS x86 "vpmaddwd" arm_dotprod "sdot[ \t]+v")
hattn_kernel(bitlinear_u8s8 GENERATOR bitlinear PARAMS dot_form=u8s8 ARM_VARIANTS none
             X86_TARGETS ${HATTN_X86_SAPPHIRERAPIDS_TARGET} ${HATTN_X86_TARGETS}
             ASM_CHECKS x86 "vpdpbusd" x86 "${sapphirerapids_only}")
