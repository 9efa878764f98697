# The Halide targets every kernel is built for. One list per family; the kernel helper, the runtime
# libraries and the `hattn info` table all read these, so a target is named in exactly one place.

# Features every target gets: buffers over 2 GiB (a 32k-token KV cache of a large layer passes that).
set(HATTN_FEATURES large_buffers)

# x86-64: one multi-target library per kernel. Halide's wrapper takes the first entry the CPU can
# run, so the most specific target comes first and the most general last.
set(HATTN_X86_TARGETS
    x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake
    x86-64-linux-sse41-avx-f16c-fma-avx2
    x86-64-linux-sse41)
# The autoscheduled variant is single-target: Adams2019 tunes for one machine model.
set(HATTN_X86_AUTOSCHEDULE_TARGET x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake)

# AArch64: one library per variant, chosen in C++ from getauxval(AT_HWCAP), because Halide 14's
# AArch64 runtime detects no CPU features and would let any multi-target entry through.
# Kernels build `plain` unless they ask for more (hattn_kernel ARM_VARIANTS).
set(HATTN_ARM_VARIANTS plain)
set(HATTN_ARM_TARGET_plain arm-64-linux)
set(HATTN_ARM_TARGET_dotprod arm-64-linux-arm_dot_prod)

# With AVX-512 VNNI and BF16: Halide 14 emits vpdpbusd (u8 x s8 dot products only) and vdpbf16ps
# only for this feature; kernels that use them put this target first in their X86_TARGETS. Halide
# compiles it for LLVM's sapphirerapids CPU, whose AVX512-FP16 Zen 4 and 5 lack although they run
# it: those kernels' assembly tests forbid FP16 instructions.
set(HATTN_X86_SAPPHIRERAPIDS_TARGET
    x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake-avx512_cannonlake-avx512_sapphirerapids)

# GPU variants, one library per API, with the same schedules (schedules/gpu/ maps loops to
# blocks and threads, which Halide lowers for either API). CUDA (Ampere and newer, so the H200 too)
# is the product; OpenCL is the same GPU code path run by any OpenCL driver, which lets machines
# without an NVIDIA GPU test device placement and residency (CI uses PoCL on the CPU). The host side
# keeps the x86 baseline.
option(HATTN_BUILD_GPU "Build and link the GPU variants (HATTN_GPU_APIS) of every kernel" ON)
set(HATTN_GPU_APIS cuda opencl)
set(HATTN_GPU_TARGET_cuda x86-64-linux-sse41-cuda-cuda_capability_80)
set(HATTN_GPU_TARGET_opencl x86-64-linux-sse41-opencl)

# One Halide runtime per family, built for the family's most general target so that it never
# reaches for an instruction the slowest supported CPU lacks.
# The x86 runtime also carries the device interfaces of the GPU variants, which share it.
set(HATTN_RUNTIME_TARGET_x86 x86-64-linux-sse41)
if (HATTN_BUILD_GPU)
    string(JOIN "-" HATTN_RUNTIME_TARGET_x86 ${HATTN_RUNTIME_TARGET_x86} ${HATTN_GPU_APIS})
endif ()
set(HATTN_RUNTIME_TARGET_arm arm-64-linux)
