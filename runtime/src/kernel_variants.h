// Which compiled variant of each kernel runs: the one place that names the generated functions.
#pragma once

struct halide_buffer_t;

namespace hattn::detail {

using ProjectionKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                 halide_buffer_t *);
ProjectionKernel projection_kernel();

}  // namespace hattn::detail
