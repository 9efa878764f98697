// Which compiled variant of each kernel runs on this machine.
#pragma once

struct halide_buffer_t;

namespace hattn::detail {

using ProjectionKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                                 halide_buffer_t *);
ProjectionKernel projection_kernel();

}  // namespace hattn::detail
