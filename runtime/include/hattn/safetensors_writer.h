// Writing float32 tensors as a .safetensors file (for checkpoints made in C++, tests and
// benchmarks), stored as F32, BF16 or F16. The reader is safetensors.h.
#pragma once

#include <map>
#include <string>

#include "hattn/tensor.h"

namespace hattn {

// Writes `tensors` (sorted by name) as `dtype` (F32, BF16 or F16: values rounded to it), replacing
// a file only once the new one is whole; throws Error naming the file if it cannot be written, or
// if the reader would refuse a name (__metadata__, not UTF-8) or a tensor (a default Tensor, which
// holds no values).
void write_safetensors(const std::string &path, const std::map<std::string, Tensor> &tensors,
                       DType dtype = DType::F32);

}  // namespace hattn
