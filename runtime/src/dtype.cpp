#include "hattn/dtype.h"

#include <utility>

#include "hattn/error.h"

namespace hattn {

namespace {

// The one table of storage types and their spellings.
struct Spelling {
    DType dtype;
    const char *name, *safetensors_name;
    size_t bytes;
};
constexpr Spelling spellings[] = {{DType::F32, "f32", "F32", 4},
                                  {DType::F16, "f16", "F16", 2},
                                  {DType::BF16, "bf16", "BF16", 2},
                                  {DType::Int8, "int8", "I8", 1}};

const Spelling &spelling(DType dtype) {
    for (const Spelling &s : spellings) {
        if (s.dtype == dtype) return s;
    }
    return spellings[0];
}

}  // namespace

const char *type_name(DType dtype) { return spelling(dtype).name; }
const char *dtype_name(DType dtype) { return spelling(dtype).safetensors_name; }
size_t dtype_size(DType dtype) { return spelling(dtype).bytes; }

std::string type_names() {
    std::string names;
    for (const Spelling &s : spellings) names += (names.empty() ? "" : ", ") + std::string(s.name);
    return names;
}

std::optional<DType> type_named(const std::string &name) {
    for (const Spelling &s : spellings) {
        if (name == s.name) return s.dtype;
    }
    return std::nullopt;
}

void require_supported(const StorageTypes &types, const std::string &layer, bool int8_caches) {
    require(types.dtype != DType::Int8, [&] {
        return layer + ": dtype int8 is a cache's storage type only (kv_dtype)";
    });
    require(types.kv_dtype != DType::Int8 || int8_caches, [&] {
        return layer + ": kv_dtype int8 (8-bit caches) is not supported yet for this kind; f32, bf16 and f16 are";
    });
}

}  // namespace hattn
