// Writing a small text file (a run's JSON report) as hattn writes its array and weight files: whole
// or not at all, through a fresh temporary beside it.
#pragma once

#include <string>

namespace hattn {

// Throws Error naming `path` where it cannot be written.
void write_text_file(const std::string &path, const std::string &text);

}  // namespace hattn
