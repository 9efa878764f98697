// Estimate helpers shared by generators. Estimates only guide the autoscheduler; manual schedules
// and the compiled code accept any size.
#pragma once

#include "Halide.h"

namespace hattn {

// A row-major [rows, cols] matrix, which Halide sees as (cols, rows).
template <typename Buffer>
void set_matrix_estimates(Buffer &b, int cols, int rows) {
    b.set_estimates({{0, cols}, {0, rows}});
}

}  // namespace hattn
