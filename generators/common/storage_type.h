// A buffer's storage type, as generators take it (spec/attention.md section 5). Halide 14's
// GeneratorParams know no 16-bit float types, so 16-bit buffers are declared uint16
// (`<input>.type=uint16` in the kernel table) and their bits read as the storage type says. An
// int8 cache's codes are int8, each row's float32 scale in a buffer of its own.
#pragma once

#include <map>
#include <string>

#include "Halide.h"

namespace hattn {

enum class StorageType { F32, BF16, F16, Int8 };

inline const std::map<std::string, StorageType> storage_type_names = {
    {"f32", StorageType::F32}, {"bf16", StorageType::BF16}, {"f16", StorageType::F16}, {"int8", StorageType::Int8}};

// The Halide type of a buffer holding `type` values: float32, uint16 bits, or int8 codes.
inline Halide::Type buffer_type_of(StorageType type) {
    return type == StorageType::F32 ? Halide::Float(32) : type == StorageType::Int8 ? Halide::Int(8) : Halide::UInt(16);
}

}  // namespace hattn
