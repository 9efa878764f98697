#include "hattn/npy.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>

#include "hattn/error.h"
#include "input_bytes.h"
#include "whole_file.h"
#include "quoted.h"

// Element data is copied straight between little-endian files and host memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "hattn assumes a little-endian host");

namespace hattn {

namespace fs = std::filesystem;

namespace {

const char magic[] = "\x93NUMPY";
constexpr size_t magic_size = 6;

[[noreturn]] void fail(const std::string &path, const std::string &problem) {
    throw Error(path + ": " + problem);
}

size_t item_size(NpyArray::Type type) {
    switch (type) {
    case NpyArray::Type::F32: return 4;
    case NpyArray::Type::Bool: return 1;
    case NpyArray::Type::I32: return 4;
    case NpyArray::Type::I64: return 8;
    }
    return 0;
}

struct Header {
    NpyArray::Type type = NpyArray::Type::F32;
    Shape shape;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only the three keys NumPy writes are accepted, in any order.
class HeaderParser {
public:
    HeaderParser(const std::string &path, const std::string &text) : path_(path), text_(text) {}

    Header parse() {
        Header header;
        bool seen_descr = false, seen_order = false, seen_shape = false;
        expect('{');
        while (!peek('}')) {
            const std::string key = parse_string();
            expect(':');
            if (key == "descr") {
                header.type = parse_descr(parse_string());
                seen_descr = true;
            } else if (key == "fortran_order") {
                if (parse_bool()) fail(path_, "fortran_order True is not supported (C order only)");
                seen_order = true;
            } else if (key == "shape") {
                header.shape = parse_shape();
                seen_shape = true;
            } else {
                malformed("unexpected key " + detail::quoted(key));
            }
            if (!peek(',')) break;
            expect(',');
        }
        expect('}');
        skip_space();
        if (pos_ != text_.size()) malformed("unexpected text after the dict");
        if (!seen_descr) malformed("missing 'descr'");
        if (!seen_order) malformed("missing 'fortran_order'");
        if (!seen_shape) malformed("missing 'shape'");
        return header;
    }

private:
    [[noreturn]] void malformed(const std::string &problem) const {
        fail(path_, "malformed header dict: " + problem + " (at header offset " +
                        std::to_string(pos_) + ")");
    }

    void skip_space() {
        // (strchr would also match the string's own terminator: a NUL byte is not a space.)
        while (pos_ < text_.size() && text_[pos_] != '\0' && std::strchr(" \t\r\n", text_[pos_]) != nullptr) pos_++;
    }

    bool peek(char c) {
        skip_space();
        return pos_ < text_.size() && text_[pos_] == c;
    }

    void expect(char c) {
        if (!peek(c)) malformed(std::string("expected '") + c + "'");
        pos_++;
    }

    std::string parse_string() {
        skip_space();
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
            malformed("expected a quoted string");
        }
        const char quote = text_[pos_++];
        const size_t end = text_.find(quote, pos_);
        if (end == std::string::npos) malformed("unterminated string");
        std::string value = text_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return value;
    }

    bool parse_bool() {
        skip_space();
        for (const auto &[word, value] : {std::pair<const char *, bool>{"True", true},
                                          std::pair<const char *, bool>{"False", false}}) {
            if (text_.compare(pos_, std::strlen(word), word) == 0) {
                pos_ += std::strlen(word);
                return value;
            }
        }
        malformed("fortran_order must be True or False");
    }

    NpyArray::Type parse_descr(const std::string &descr) const {
        for (NpyArray::Type type : {NpyArray::Type::F32, NpyArray::Type::Bool, NpyArray::Type::I32,
                                    NpyArray::Type::I64}) {
            if (descr == npy_type_name(type)) return type;
        }
        if (!descr.empty() && descr[0] == '>') {
            fail(path_, "big-endian dtype " + detail::quoted(descr) + " is not supported");
        }
        fail(path_, "dtype " + detail::quoted(descr) + " is not supported (<f4, |b1, <i4, <i8)");
    }

    // A tuple of non-negative integers: "()", "(3,)", "(2, 3)". Python 2 NumPy wrote "3L".
    Shape parse_shape() {
        Shape shape;
        expect('(');
        while (!peek(')')) {
            shape.push_back(parse_dim());
            if (pos_ < text_.size() && text_[pos_] == 'L') pos_++;
            if (!peek(',')) break;
            expect(',');
        }
        expect(')');
        return shape;
    }

    int64_t parse_dim() {
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
            malformed("shape must be a tuple of non-negative integers");
        }
        int64_t value = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            if (__builtin_mul_overflow(value, 10, &value) ||
                __builtin_add_overflow(value, text_[pos_] - '0', &value)) {
                fail(path_, "shape dimension is too large");
            }
            pos_++;
        }
        return value;
    }

    const std::string &path_;
    const std::string &text_;
    size_t pos_ = 0;
};

uint32_t read_le(const uint8_t *p, int bytes) {
    uint32_t value = 0;
    for (int i = bytes - 1; i >= 0; i--) value = (value << 8) | p[i];
    return value;
}

void write_npy_bytes(const std::string &path, NpyArray::Type type, const Shape &shape,
                     const void *data, size_t bytes) {
    std::string dims;
    for (int64_t dim : shape) dims += std::to_string(dim) + ", ";
    // A one-element tuple keeps its trailing comma, "(3,)"; others drop it, "(2, 3)".
    if (shape.size() > 1) dims.resize(dims.size() - 2);
    if (shape.size() == 1) dims.pop_back();
    std::string header = std::string("{'descr': '") + npy_type_name(type) +
                         "', 'fortran_order': False, 'shape': (" + dims + "), }";
    // The spec pads with spaces and a final newline so the data starts 64-byte aligned.
    const size_t preamble = magic_size + 2 + 2;
    header.append(63 - (preamble + header.size()) % 64, ' ');
    header += '\n';
    if (header.size() > std::numeric_limits<uint16_t>::max()) {
        fail(path, "shape " + shape_to_string(shape) + " makes the header too long");
    }

    detail::write_whole_file(path, [&](std::ostream &out) {
        const char version_and_length[4] = {1, 0, char(header.size() & 0xff), char(header.size() >> 8)};
        out.write(magic, magic_size);
        out.write(version_and_length, sizeof(version_and_length));
        out << header;
        if (bytes > 0) out.write(static_cast<const char *>(data), std::streamsize(bytes));
    });
}

}  // namespace

const char *npy_type_name(NpyArray::Type type) {
    switch (type) {
    case NpyArray::Type::F32: return "<f4";
    case NpyArray::Type::Bool: return "|b1";
    case NpyArray::Type::I32: return "<i4";
    case NpyArray::Type::I64: return "<i8";
    }
    return "?";
}

NpyArray read_npy(const std::string &path) {
    const std::string file = detail::read_input_file(path);
    const std::basic_string_view<uint8_t> bytes(reinterpret_cast<const uint8_t *>(file.data()), file.size());
    if (bytes.size() < magic_size || std::memcmp(bytes.data(), magic, magic_size) != 0) {
        fail(path, "not a .npy file (bad magic)");
    }
    if (bytes.size() < magic_size + 2) fail(path, "truncated header (no version)");
    const int major = bytes[6], minor = bytes[7];
    // Version 1 has a 2-byte header length; versions 2 and 3 a 4-byte one.
    int length_bytes = 0;
    if (major == 1 && minor == 0) length_bytes = 2;
    if ((major == 2 || major == 3) && minor == 0) length_bytes = 4;
    if (length_bytes == 0) {
        fail(path,
             "unsupported npy version " + std::to_string(major) + "." + std::to_string(minor));
    }
    const size_t header_start = magic_size + 2 + size_t(length_bytes);
    if (bytes.size() < header_start) fail(path, "truncated header (no header length)");
    const uint64_t header_size = read_le(bytes.data() + magic_size + 2, length_bytes);
    if (header_size > bytes.size() - header_start) {
        fail(path, "header length " + std::to_string(header_size) +
                       " runs past the end of the file (" + std::to_string(bytes.size()) +
                       " bytes)");
    }
    const std::string text(bytes.begin() + header_start,
                           bytes.begin() + header_start + header_size);
    const Header header = HeaderParser(path, text).parse();

    uint64_t count = 0;
    try {
        count = static_cast<uint64_t>(element_count(header.shape));
    } catch (const Error &e) {  // a count past int64, where a zero extent comes too
        fail(path, e.what());
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(count, item_size(header.type), &expected)) {
        fail(path, "byte size of shape " + shape_to_string(header.shape) + " overflows");
    }
    const uint8_t *data = bytes.data() + header_start + header_size;
    const uint64_t present = bytes.size() - header_start - header_size;
    if (present < expected) {
        fail(path, "data is truncated: shape " + shape_to_string(header.shape) + " of " +
                       npy_type_name(header.type) + " needs " + std::to_string(expected) +
                       " bytes, file has " + std::to_string(present));
    }
    if (present > expected) {
        fail(path, std::to_string(present - expected) + " trailing bytes after the data");
    }

    NpyArray array;
    array.type = header.type;
    array.shape = header.shape;
    switch (header.type) {
    case NpyArray::Type::F32:
        array.f32.resize(count);
        if (count > 0) std::memcpy(array.f32.data(), data, expected);
        break;
    case NpyArray::Type::Bool:
        array.boolean.resize(count);
        for (size_t i = 0; i < count; i++) array.boolean[i] = data[i] != 0;
        break;
    case NpyArray::Type::I32:
        array.integers.resize(count);
        for (size_t i = 0; i < count; i++) {
            int32_t value;
            std::memcpy(&value, data + 4 * i, sizeof(value));
            array.integers[i] = value;
        }
        break;
    case NpyArray::Type::I64:
        array.integers.resize(count);
        if (count > 0) std::memcpy(array.integers.data(), data, expected);
        break;
    }
    return array;
}

Tensor read_npy_f32(const std::string &path) {
    NpyArray array = read_npy(path);
    if (array.type != NpyArray::Type::F32) {
        fail(path, std::string("dtype '") + npy_type_name(array.type) + "' is not float32 '<f4'");
    }
    return Tensor(std::move(array.shape), std::move(array.f32));
}

void write_npy(const std::string &path, const Tensor &tensor) {
    // A default Tensor has shape [] (one value) and none: its file would not read back.
    require(tensor.size() == element_count(tensor.shape()),
            [&] { return path + ": the tensor holds no values (a default-constructed Tensor)"; });
    write_npy_bytes(path, NpyArray::Type::F32, tensor.shape(), tensor.data(),
                    size_t(tensor.size()) * sizeof(float));
}

void write_npy_bool(const std::string &path, const Shape &shape,
                    const std::vector<uint8_t> &values) {
    require(int64_t(values.size()) == element_count(shape),
            path + ": " + std::to_string(values.size()) + " values for shape " +
                shape_to_string(shape));
    std::vector<uint8_t> bits(values.size());
    for (size_t i = 0; i < values.size(); i++) bits[i] = values[i] != 0;
    write_npy_bytes(path, NpyArray::Type::Bool, shape, bits.data(), bits.size());
}

}  // namespace hattn
