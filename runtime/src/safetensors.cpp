#include "hattn/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "hattn/config.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "hattn/input_file.h"
#include "finite_input.h"
#include "json_parse.h"
#include "quoted.h"

// F32 tensors are copied straight from the file, whose byte order is little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "hattn assumes a little-endian host");

namespace hattn {

namespace {

// Real headers are a few MiB at most; anything larger is a corrupt length field.
constexpr uint64_t max_header_bytes = uint64_t(100) << 20;
// The largest checkpoints hold tens of thousands; __metadata__ is one key more.
constexpr size_t max_tensors = 1000000;

[[noreturn]] void fail(const std::string &path, const std::string &problem) { throw Error(path + ": " + problem); }

// A JSON value for an error message, cut short so a hostile header cannot flood the message.
std::string brief(const nlohmann::json &value) {
    std::string text = value.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

bool parse_dtype(const std::string &name, DType *dtype) {
    for (DType candidate : {DType::F32, DType::F16, DType::BF16}) {
        if (name == dtype_name(candidate)) {
            *dtype = candidate;
            return true;
        }
    }
    return false;
}

uint16_t read_u16le(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }

uint64_t read_u64le(const uint8_t *p) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--) value = (value << 8) | p[i];
    return value;
}

Shape parse_shape(const std::string &where, const nlohmann::json &shape) {
    if (!shape.is_array()) fail(where, "shape must be an array, got " + brief(shape));
    Shape dims;
    for (const auto &dim : shape) {
        if (dim.is_number_unsigned()) {
            const uint64_t value = dim.get<uint64_t>();
            if (value > uint64_t(std::numeric_limits<int64_t>::max())) {
                fail(where, "shape dimension " + std::to_string(value) + " is too large");
            }
            dims.push_back(int64_t(value));
        } else if (dim.is_number_integer()) {
            fail(where, "negative dimension in shape " + brief(shape));
        } else {
            fail(where, "non-integer dimension in shape " + brief(shape));
        }
    }
    return dims;
}

TensorInfo parse_entry(const std::string &path, const std::string &name,
                       const nlohmann::json &entry, uint64_t data_size) {
    const std::string where = path + ": tensor " + detail::quoted(name);
    if (!entry.is_object()) fail(where, "entry is not an object");
    for (const char *field : {"dtype", "shape", "data_offsets"}) {
        if (!entry.contains(field)) fail(where, std::string("missing '") + field + "'");
    }
    TensorInfo info;
    info.name = name;
    const auto &dtype = entry["dtype"];
    if (!dtype.is_string()) fail(where, "dtype must be a string, got " + brief(dtype));
    if (!parse_dtype(dtype.get<std::string>(), &info.dtype)) {
        fail(where, "dtype " + detail::quoted(dtype.get<std::string>()) + " is not supported (F32, F16, BF16)");
    }
    info.shape = parse_shape(where, entry["shape"]);

    const auto &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned() ||
        offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
        fail(where,
             "data_offsets must be two ordered non-negative integers, got " + brief(offsets));
    }
    info.begin = offsets[0].get<uint64_t>();
    info.end = offsets[1].get<uint64_t>();

    uint64_t bytes = dtype_size(info.dtype);
    for (int64_t dim : info.shape) {
        if (__builtin_mul_overflow(bytes, uint64_t(dim), &bytes)) {
            fail(where, "byte size of shape " + shape_to_string(info.shape) + " overflows");
        }
    }
    if (info.end - info.begin != bytes) {
        fail(where, "byte length " + std::to_string(info.end - info.begin) + " of data_offsets " +
                        brief(offsets) + " does not match shape " + shape_to_string(info.shape) +
                        " of " + dtype_name(info.dtype) + " (" + std::to_string(bytes) + " bytes)");
    }
    if (info.end > data_size) {
        fail(where, "data_offsets " + brief(offsets) + " run past the end of the file (data is " +
                        std::to_string(data_size) + " bytes)");
    }
    return info;
}

// The tensors' data ranges, sorted by their start, tile the data section. Two tensors sharing bytes
// means the header lies about at least one of them; bytes that belong to no tensor (a gap, or a
// tail), which the safetensors library refuses too, mean a file padded or spliced by something that
// did not write it.
void check_data_layout(const std::string &path, const std::vector<TensorInfo> &by_begin, uint64_t data_size) {
    uint64_t covered = 0;
    const TensorInfo *last = nullptr;
    for (const TensorInfo &info : by_begin) {
        if (info.begin == info.end) continue;
        if (info.begin < covered) {
            fail(path, "tensors " + detail::quoted(last->name) + " and " + detail::quoted(info.name) +
                           " have overlapping data ranges");
        }
        if (info.begin > covered) {
            fail(path, "data bytes [" + std::to_string(covered) + ", " + std::to_string(info.begin) +
                           ") belong to no tensor");
        }
        covered = info.end;
        last = &info;
    }
    if (covered != data_size) {
        fail(path,
             "data bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) + ") belong to no tensor");
    }
}

bool ends_with(const std::string &text, const std::string &suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string &path) {
    SafetensorsFile file;
    file.path_ = path;

    require_regular_file(path);
    // O_NONBLOCK: a FIFO put in the file's place since the check must not block the open.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, "not a regular file");
    }
    const uint64_t size = uint64_t(st.st_size);
    if (size < 8) {
        ::close(fd);
        fail(path,
             "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
    }
    void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (map == MAP_FAILED) {
        throw Error(path + ": mmap failed: " + std::strerror(map_errno), Error::Kind::Internal);
    }
    // From here the destructor unmaps if validation throws.
    file.map_ = static_cast<const uint8_t *>(map);
    file.map_size_ = size;

    const uint64_t header_size = read_u64le(file.map_);
    if (header_size > max_header_bytes) {
        fail(path, "header length " + std::to_string(header_size) + " is over 100 MiB: not a safetensors file");
    }
    if (header_size > size - 8) {
        fail(path, "header length " + std::to_string(header_size) + " exceeds the file size " +
                       std::to_string(size));
    }
    file.data_start_ = 8 + header_size;

    nlohmann::json header;
    try {
        header = detail::parse_json(file.map_ + 8, file.map_ + file.data_start_, path, {max_tensors + 1, "header keys"});
    } catch (const nlohmann::json::parse_error &e) {
        fail(path,
             "header is not valid JSON (error at header byte " + std::to_string(e.byte) + ")");
    }
    if (!header.is_object()) fail(path, "header is not a JSON object");
    if (header.size() - header.contains("__metadata__") > max_tensors) {
        fail(path, "more than " + std::to_string(max_tensors) + " tensors, the limit");
    }

    // Listed as their data lie in the file (the header's keys come sorted by name).
    for (const auto &[name, entry] : header.items()) {
        // Free text, ignored, but shaped as the format says (the safetensors library checks it too).
        if (name == "__metadata__") {
            const bool strings = entry.is_null() ||
                                 (entry.is_object() &&
                                  std::all_of(entry.begin(), entry.end(), [](const auto &v) { return v.is_string(); }));
            if (!strings) fail(path, "__metadata__ must be an object of strings (or null), got " + brief(entry));
            continue;
        }
        file.tensors_.push_back(parse_entry(path, name, entry, size - file.data_start_));
    }
    std::stable_sort(file.tensors_.begin(), file.tensors_.end(),
                     [](const TensorInfo &a, const TensorInfo &b) { return a.begin < b.begin; });
    for (size_t i = 0; i < file.tensors_.size(); i++) file.index_.emplace(file.tensors_[i].name, i);
    check_data_layout(path, file.tensors_, size - file.data_start_);
    return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept { *this = std::move(other); }

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
    if (this != &other) {
        unmap();
        path_ = std::move(other.path_);
        map_ = std::exchange(other.map_, nullptr);
        map_size_ = std::exchange(other.map_size_, 0);
        data_start_ = other.data_start_;
        tensors_ = std::move(other.tensors_);
        index_ = std::move(other.index_);
    }
    return *this;
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

void SafetensorsFile::unmap() {
    if (map_ != nullptr) munmap(const_cast<uint8_t *>(map_), map_size_);
    map_ = nullptr;
    map_size_ = 0;
}

const TensorInfo *SafetensorsFile::find(const std::string &name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor SafetensorsFile::load(const std::string &name) const {
    const TensorInfo *info = find(name);
    if (info == nullptr) fail(path_, "tensor " + detail::quoted(name) + " not found");
    Tensor out(info->shape);
    // memcpy and byte reads throughout: the data section need not be aligned for any dtype.
    const uint8_t *src = map_ + data_start_ + info->begin;
    float *dst = out.data();
    const size_t count = size_t(out.size());
    switch (info->dtype) {
    case DType::F32:
        if (count > 0) std::memcpy(dst, src, count * sizeof(float));
        break;
    case DType::F16:
        for (size_t i = 0; i < count; i++) dst[i] = from_f16_bits(read_u16le(src + 2 * i));
        break;
    case DType::BF16:
        for (size_t i = 0; i < count; i++) dst[i] = from_bf16_bits(read_u16le(src + 2 * i));
        break;
    case DType::Int8: break;  // (never: the header's reader refuses every other dtype)
    }
    return out;
}

std::optional<int64_t> Weights::layer_index() const {
    // The first "layers.N." at the start or after a dot, read by hand: a backtracking regex
    // recurses once per digit, so a long prefix would overflow the stack.
    const std::string_view prefix = prefix_, word = "layers.";
    for (size_t at = prefix.find(word); at != std::string_view::npos; at = prefix.find(word, at + 1)) {
        if (at > 0 && prefix[at - 1] != '.') continue;
        const size_t first = at + word.size();
        size_t end = first;
        while (end < prefix.size() && prefix[end] >= '0' && prefix[end] <= '9') end++;
        if (end == first || end == prefix.size() || prefix[end] != '.') continue;
        // No model has a billion layers; past that the number would not fit, so it is refused here.
        require(end - first <= 9, [&] {
            return "weight prefix " + detail::quoted(prefix) + ": layer index " +
                   detail::escaped(prefix.substr(first, end - first), 20) + " is too large";
        });
        return std::stoll(std::string(prefix.substr(first, end - first)));
    }
    return std::nullopt;
}

Weights Weights::open(const std::string &path, std::string prefix) {
    Weights weights;
    weights.source_ = path;
    weights.prefix_ = std::move(prefix);

    if (!ends_with(path, ".index.json")) {
        weights.files_.push_back(SafetensorsFile::open(path));
        for (const TensorInfo &info : weights.files_[0].tensors()) {
            weights.names_.push_back(info.name);
            weights.location_.emplace(info.name, 0);
        }
        return weights;
    }

    const nlohmann::json index = detail::read_json_object_file(path);
    const auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object()) fail(path, "missing 'weight_map' object");
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::unordered_map<std::string, size_t> shard_position;
    for (const auto &[name, shard] : map->items()) {
        if (!shard.is_string()) {
            fail(path, "weight_map entry " + detail::quoted(name) + " must be a shard file name, got " +
                           shard.type_name());
        }
        const std::string shard_name = shard.get<std::string>();
        // Shards sit beside their index (in its folder or below): a downloaded index must not
        // make the loader read files elsewhere.
        const std::filesystem::path shard_path(shard_name);
        const bool climbs =
            std::any_of(shard_path.begin(), shard_path.end(), [](const auto &part) { return part == ".."; });
        // A NUL would end the name where the system reads it: another file than the one named.
        if (shard_name.empty() || shard_path.is_absolute() || climbs || shard_name.find('\0') != std::string::npos) {
            fail(path, "weight_map entry " + detail::quoted(name) + " names shard " + detail::quoted(shard_name) +
                           ", which is not a file name within the index's folder");
        }
        auto found = shard_position.find(shard_name);
        if (found == shard_position.end()) {
            try {
                weights.files_.push_back(SafetensorsFile::open((dir / shard_name).string()));
            } catch (const Error &e) {
                throw Error(path + ": " + e.what(), e.kind());
            }
            found = shard_position.emplace(shard_name, weights.files_.size() - 1).first;
        }
        if (weights.files_[found->second].find(name) == nullptr) {
            fail(path, "tensor " + detail::quoted(name) + " is mapped to shard " + detail::quoted(shard_name) +
                           ", which does not contain it");
        }
        weights.names_.push_back(name);
        weights.location_.emplace(name, found->second);
    }
    return weights;
}

const SafetensorsFile &Weights::file_of(const std::string &full_name) const {
    const auto it = location_.find(full_name);
    if (it == location_.end()) fail(source_, "tensor " + detail::quoted(full_name) + " not found");
    return files_[it->second];
}

bool Weights::has(const std::string &name) const { return location_.count(prefix_ + name) > 0; }

Tensor Weights::get(const std::string &name) const {
    const std::string full_name = prefix_ + name;
    const SafetensorsFile &file = file_of(full_name);
    Tensor t = file.load(full_name);
    // The kernels assume no NaN or Inf (fast-math): a broken checkpoint is named here rather than
    // giving meaningless output at every call.
    detail::require_finite(file.path() + ": tensor " + detail::quoted(full_name), t, "weights");
    return t;
}

Tensor Weights::get(const std::string &name, const Shape &expected) const {
    const std::string full_name = prefix_ + name;
    const SafetensorsFile &file = file_of(full_name);
    const Shape &actual = file.find(full_name)->shape;
    if (actual != expected) {
        fail(file.path(), "tensor " + detail::quoted(full_name) + " has shape " + shape_to_string(actual) +
                              ", expected " + shape_to_string(expected));
    }
    return get(name);
}

std::vector<std::string> Weights::names() const { return names_; }

}  // namespace hattn
