#include "whole_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hattn/error.h"

namespace hattn::detail {

namespace fs = std::filesystem;

void write_whole_file(const std::string &path, const std::function<void(std::ostream &)> &write) {
    require(!path.empty(), "an output file's path is empty");
    std::error_code ec;
    const bool replace = !fs::exists(path, ec) || fs::is_regular_file(path, ec);
    const std::string written = replace ? path + ".partial" : path;
    std::ofstream out(written, std::ios::binary | std::ios::trunc);
    if (!out.is_open()) throw Error(path + ": cannot create: " + std::strerror(errno));
    write(out);
    out.close();
    const int write_error = errno;
    if (!out) {
        if (replace) fs::remove(written, ec);
        throw Error(path + ": write failed: " + std::strerror(write_error), Error::Kind::Internal);
    }
    if (replace) {
        fs::rename(written, path, ec);
        if (ec) {
            const std::string why = ec.message();
            fs::remove(written, ec);
            throw Error(path + ": cannot replace: " + why);
        }
    }
}

}  // namespace hattn::detail
