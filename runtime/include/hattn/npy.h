// Reading and writing NumPy .npy files: the exchange format for test inputs, masks and reference
// outputs produced by the Python side.
//
// Readable dtypes: '<f4' (float32), '|b1' (bool), '<i4' and '<i8' (integers), C order only.
// Writing produces version 1.0 files with the header padded to a multiple of 64 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hattn/tensor.h"

namespace hattn {

// A parsed .npy array. Exactly one of the value vectors is filled, chosen by `type`, holding
// element_count(shape) values in row-major order.
struct NpyArray {
    enum class Type { F32, Bool, I32, I64 };

    Type type = Type::F32;
    Shape shape;
    std::vector<float> f32;         // Type::F32
    std::vector<uint8_t> boolean;   // Type::Bool, each 0 or 1
    std::vector<int64_t> integers;  // Type::I32 and Type::I64, widened to int64
};

const char *npy_type_name(NpyArray::Type type);  // the descr: "<f4", "|b1", "<i4", "<i8"

// Throws Error naming the file on any malformed, truncated or unsupported input.
NpyArray read_npy(const std::string &path);
// As read_npy, and the array must be float32.
Tensor read_npy_f32(const std::string &path);

// Writers replace a file only once the new one is whole (a failed write leaves the old one);
// a write that fails is an Error naming the file.
void write_npy(const std::string &path, const Tensor &tensor);
// `values` holds element_count(shape) bytes, each written as 0 or 1.
void write_npy_bool(const std::string &path, const Shape &shape,
                    const std::vector<uint8_t> &values);

}  // namespace hattn
