// Reading an input file whole: opened without blocking, then checked to be a regular file on the
// descriptor itself, so that a FIFO put in its place after require_regular_file cannot block.
#pragma once

#include <string>

namespace hattn::detail {

// Throws Error naming `path` where require_regular_file would, or where it cannot be read.
std::string read_input_file(const std::string &path);

}  // namespace hattn::detail
