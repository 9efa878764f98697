#include "hattn/safetensors_writer.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "hattn/error.h"

namespace hattn {

void write_safetensors(const std::string &path, const std::map<std::string, Tensor> &tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto &[name, t] : tensors) {
        const uint64_t bytes = static_cast<uint64_t>(t.size()) * sizeof(float);
        header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    const std::string text = header.dump();
    const uint64_t length = text.size();  // little-endian on every supported host
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(&length), sizeof length);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto &entry : tensors) {
        const Tensor &t = entry.second;
        out.write(reinterpret_cast<const char *>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
    }
    require(out.good(), path + ": cannot write file");
}

}  // namespace hattn
