// hattn inspect FILE: validate a safetensors or npy file and list its tensors, or describe what the
// cached_attention layer reads from a model's config.json.
#include <fstream>
#include <iostream>

#include "args.h"
#include "commands.h"
#include "describe_config.h"
#include "hattn/error.h"
#include "hattn/input_file.h"
#include "hattn/npy.h"
#include "hattn/safetensors.h"

namespace hattn::cli {

namespace {

bool ends_with(const std::string &text, const std::string &suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool has_npy_magic(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    char magic[6] = {};
    in.read(magic, sizeof magic);
    return in.gcount() == 6 && std::string(magic, 6) == "\x93NUMPY";
}

}  // namespace

int inspect_command(const std::vector<std::string> &argv) {
    const Args args("inspect", argv, {}, {});
    require(args.positional().size() == 1, "inspect: expected one FILE");
    const std::string &path = args.positional()[0];
    require_regular_file(path);

    // The name says what the file should be, so that a damaged one is judged by the right rules (a
    // broken .npy is not reported as a broken safetensors file); other names go by the content.
    if (ends_with(path, ".json")) {
        describe_attention_config(path);
        return 0;
    }
    const bool npy = ends_with(path, ".npy") || (!ends_with(path, ".safetensors") && has_npy_magic(path));
    if (npy) {
        const NpyArray a = read_npy(path);
        std::cout << path << ": npy " << npy_type_name(a.type) << " " << shape_to_string(a.shape)
                  << "\n";
        return 0;
    }
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::cout << path << ": safetensors, " << file.tensors().size() << " tensors\n";
    for (const TensorInfo &t : file.tensors()) {
        std::cout << "  " << t.name << "  " << dtype_name(t.dtype) << "  " << shape_to_string(t.shape)
                  << "\n";
    }
    return 0;
}

}  // namespace hattn::cli
