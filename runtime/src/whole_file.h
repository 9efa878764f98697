// Writing an output file whole or not at all (npy and safetensors writers).
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace hattn::detail {

// Calls `write` on a stream to `path`. A regular file (or a new one) is written to a fresh
// temporary beside it (created O_EXCL, never a fixed name a link could redirect) and renamed over
// it once whole, so a failed write (a full disk) leaves the old file as it was and no broken one;
// the file keeps the mode of the one it replaces (a new one: 0666 less the umask). Other paths
// (/dev/stdout, a pipe) are written directly. The stream is closed before its state is read: a
// failed final flush is an Error too (Kind::Internal, with the system's reason), as is an empty path.
void write_whole_file(const std::string &path, const std::function<void(std::ostream &)> &write);

}  // namespace hattn::detail
