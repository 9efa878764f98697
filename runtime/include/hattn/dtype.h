// Storage types (spec/attention.md section 5): how a tensor's elements are stored. A layer keeps
// its weights and activations in its `dtype` and its caches and states in its `kv_dtype`;
// products, softmax, norms and RoPE compute in float32 whatever the storage type.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace hattn {

// F32: IEEE binary32. F16: IEEE binary16. BF16: the top 16 bits of a float32. Int8: a cache's
// signed codes with a float32 scale per group (caches only).
enum class DType { F32, F16, BF16, Int8 };

// The spelling of configs, case folders and the CLI: "f32", "f16", "bf16", "int8".
const char *type_name(DType dtype);
std::optional<DType> type_named(const std::string &name);
std::string type_names();  // "f32, f16, bf16, int8", for messages
// The spelling safetensors uses: "F32", "F16", "BF16", "I8".
const char *dtype_name(DType dtype);
size_t dtype_size(DType dtype);  // bytes per element (an int8 cache's scales not counted)

// A layer's storage types: its weights' and activations' (f32, bf16, f16) and its caches' and
// states'. The defaults keep everything in float32.
struct StorageTypes {
    DType dtype = DType::F32;
    DType kv_dtype = DType::F32;
};

// Throws Error, starting with `layer`, unless this build runs the types: dtype f32, bf16 or f16,
// and kv_dtype one of those too, or int8 for a layer whose caches take it (`int8_caches`).
void require_supported(const StorageTypes &types, const std::string &layer, bool int8_caches = false);

}  // namespace hattn
