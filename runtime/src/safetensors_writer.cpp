#include "hattn/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include "hattn/error.h"
#include "whole_file.h"

namespace hattn {

void write_safetensors(const std::string &path, const std::map<std::string, Tensor> &tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto &[name, t] : tensors) {
        // What the reader (safetensors.h) would refuse is refused before anything is written.
        require(name != "__metadata__", path + ": '__metadata__' cannot name a tensor (the format reserves it)");
        require(t.size() == element_count(t.shape()),
                [&, &name = name] { return path + ": tensor '" + name + "' holds no values (a default-constructed Tensor)"; });
        const uint64_t bytes = static_cast<uint64_t>(t.size()) * sizeof(float);
        header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
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
            out.write(reinterpret_cast<const char *>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
        }
    });
}

}  // namespace hattn
