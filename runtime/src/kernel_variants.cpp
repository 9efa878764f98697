#include "kernel_variants.h"

#if defined(__x86_64__)
#include "hattn_projection_x86.h"
#else
#include "hattn_projection_arm_plain.h"
#endif

namespace hattn::detail {

ProjectionKernel projection_kernel() {
#if defined(__x86_64__)
    return hattn_projection_x86;
#else
    return hattn_projection_arm_plain;
#endif
}

}  // namespace hattn::detail
