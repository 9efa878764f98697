// Reading model weights from .safetensors files, single or sharded.
//
// The file is memory-mapped and its header validated in full before any tensor is read: a header
// that lies about shapes or offsets is reported as an Error, never an out-of-bounds read. F16 and
// BF16 tensors are widened to float32 exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hattn/dtype.h"
#include "hattn/tensor.h"

namespace hattn {

struct TensorInfo {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;  // byte range within the data section, which follows the header
};

// One memory-mapped .safetensors file. Move-only; the mapping lives as long as the object.
class SafetensorsFile {
public:
    // Maps and validates `path`. Throws Error naming the file (and tensor) on any problem.
    static SafetensorsFile open(const std::string &path);

    SafetensorsFile(SafetensorsFile &&other) noexcept;
    SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
    SafetensorsFile(const SafetensorsFile &) = delete;
    SafetensorsFile &operator=(const SafetensorsFile &) = delete;
    ~SafetensorsFile();

    const std::string &path() const { return path_; }
    const std::vector<TensorInfo> &tensors() const { return tensors_; }  // in file order
    const TensorInfo *find(const std::string &name) const;               // nullptr if absent

    // The named tensor as float32. Throws Error if the file has no such tensor.
    Tensor load(const std::string &name) const;

private:
    SafetensorsFile() = default;
    void unmap();

    std::string path_;
    const uint8_t *map_ = nullptr;
    size_t map_size_ = 0;
    size_t data_start_ = 0;  // file offset of the data section
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> index_;  // name -> position in tensors_
};

// The tensors of one checkpoint: a single .safetensors file, or a sharded one given by its
// *.safetensors.index.json. Names are looked up as prefix + name, so one Weights can address the
// parameters of a submodule ("model.layers.0.self_attn.") by their short names.
class Weights {
public:
    static Weights open(const std::string &path, std::string prefix = "");

    const std::string &source() const { return source_; }  // the file or index opened
    const std::string &prefix() const { return prefix_; }
    // The N of a prefix that names one layer of a Hugging Face model ("model.layers.N.self_attn."),
    // for models whose layers differ by index (Gemma 3's sliding and full layers); else nothing.
    // An N of more than 9 digits is refused (Error).
    std::optional<int64_t> layer_index() const;

    bool has(const std::string &name) const;
    // The tensor as float32. One holding a NaN or an infinity is refused (Error naming the file,
    // the tensor and the element): the kernels assume finite values.
    Tensor get(const std::string &name) const;
    // Also checks the shape before reading any data.
    Tensor get(const std::string &name, const Shape &expected) const;

    // Every tensor's full name (prefix included), whether or not it starts with the prefix.
    std::vector<std::string> names() const;

private:
    Weights() = default;
    const SafetensorsFile &file_of(const std::string &full_name) const;

    std::string source_;
    std::string prefix_;
    std::vector<SafetensorsFile> files_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, size_t> location_;  // full name -> position in files_
};

}  // namespace hattn
