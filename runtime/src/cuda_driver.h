// Loading the GPU driver libraries (see cuda_driver.cpp for why hattn hands Halide the CUDA one).
#pragma once

namespace hattn::detail {

// Loads a driver library and keeps it loaded, its symbols global. Halide's runtime opens the
// unversioned name (libcuda.so, libOpenCL.so), which only development packages install; when only
// the versioned library exists, loading it globally first lets Halide find the driver's symbols.
void *load_driver(const char *unversioned, const char *versioned);

// libcuda (unversioned, else .so.1), loaded on first use; nullptr where neither loads.
void *cuda_driver();

}  // namespace hattn::detail
