#include "hattn/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include "hattn/error.h"
#include "hattn/half.h"
#include "whole_file.h"

namespace hattn {

void write_safetensors(const std::string &path, const std::map<std::string, Tensor> &tensors, DType dtype) {
    require(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16,
            [&] { return path + ": tensors are written as F32, BF16 or F16, not " + dtype_name(dtype); });
    const uint64_t element_bytes = dtype_size(dtype);
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto &[name, t] : tensors) {
        // What the reader (safetensors.h) would refuse is refused before anything is written.
        require(name != "__metadata__", path + ": '__metadata__' cannot name a tensor (the format reserves it)");
        require(t.size() == element_count(t.shape()),
                [&, &name = name] { return path + ": tensor '" + name + "' holds no values (a default-constructed Tensor)"; });
        const uint64_t bytes = static_cast<uint64_t>(t.size()) * element_bytes;
        header[name] = {{"dtype", dtype_name(dtype)}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::json::type_error &) {  // a name that is not UTF-8
        throw Error(path + ": a tensor name is not valid UTF-8");
    }
    const uint64_t length = text.size();  // little-endian on every supported host
    detail::write_whole_file(path, [&](std::ostream &out) {
        out.write(reinterpret_cast<const char *>(&length), sizeof length);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const auto &entry : tensors) {
            const Tensor &t = entry.second;
            if (dtype == DType::F32) {
                out.write(reinterpret_cast<const char *>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
                continue;
            }
            std::vector<uint16_t> bits(t.size());
            to_bits(dtype, t.data(), bits.data(), t.size());
            out.write(reinterpret_cast<const char *>(bits.data()), static_cast<std::streamsize>(bits.size() * 2));
        }
    });
}

}  // namespace hattn
