// Writes small valid F32 safetensors files for tests.
#pragma once

#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "hattn/tensor.h"

namespace hattn::testing {

inline void write_safetensors(const std::string &path, const std::map<std::string, Tensor> &tensors) {
    std::string header = "{", data;
    for (const auto &[name, t] : tensors) {
        std::string shape;
        for (int64_t d : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
        const size_t begin = data.size();
        data.append(reinterpret_cast<const char *>(t.data()), t.size() * sizeof(float));
        header += (header.size() > 1 ? "," : "") + std::string("\"") + name +
                  "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
                  std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    }
    header += "}";
    const uint64_t n = header.size();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(&n), 8);
    out << header << data;
}

}  // namespace hattn::testing
