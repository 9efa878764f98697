// Strings taken from files (names, keys, values) as messages show them: on one short line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hattn::detail {

// `text` with control bytes and bytes that are not UTF-8 escaped (\n, \x01), cut once the
// result holds `limit` bytes, with "..." added.
std::string escaped(std::string_view text, size_t limit);

// The same in single quotes, cut at 200 bytes: how a message echoes a string from a file.
std::string quoted(std::string_view text);

}  // namespace hattn::detail
