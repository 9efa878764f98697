#include "hattn/text_file.h"

#include "whole_file.h"

namespace hattn {

void write_text_file(const std::string &path, const std::string &text) {
    detail::write_whole_file(path, [&](std::ostream &out) { out << text; });
}

}  // namespace hattn
