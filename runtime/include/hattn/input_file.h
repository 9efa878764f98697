// What hattn reads as an input file (configs, weights, shards, npy arrays, masks).
#pragma once

#include <string>

namespace hattn {

// Throws Error naming `path` unless it is a regular file, after following links: missing, a link
// to nothing, a directory, or a FIFO, socket or device (whose reads would block or never end).
void require_regular_file(const std::string &path);

}  // namespace hattn
