#include "quoted.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace hattn::detail {

namespace {

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0.
size_t utf8_length(std::string_view text, size_t i) {
    const auto byte = [&](size_t k) { return i + k < text.size() ? uint8_t(text[i + k]) : uint8_t(0); };
    const auto continuation = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
    const uint8_t b0 = byte(0), b1 = byte(1);
    if (b0 < 0x80) return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        const bool second = b0 == 0xE0 ? b1 >= 0xA0 && b1 <= 0xBF : b0 == 0xED ? b1 >= 0x80 && b1 <= 0x9F : continuation(1);
        return second && continuation(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        const bool second = b0 == 0xF0 ? b1 >= 0x90 && b1 <= 0xBF : b0 == 0xF4 ? b1 >= 0x80 && b1 <= 0x8F : continuation(1);
        return second && continuation(2) && continuation(3) ? 4 : 0;
    }
    return 0;
}

}  // namespace

std::string escaped(std::string_view text, size_t limit) {
    std::string out;
    out.reserve(std::min(text.size(), limit) + 8);
    size_t i = 0;
    while (i < text.size() && out.size() < limit) {
        const uint8_t c = uint8_t(text[i]);
        const size_t n = utf8_length(text, i);
        if (n > 1 || (n == 1 && c >= 0x20 && c != 0x7F)) {
            out.append(text.substr(i, n));
            i += n;
            continue;
        }
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        }
        i++;
    }
    if (i < text.size()) out += "...";
    return out;
}

std::string quoted(std::string_view text) { return "'" + escaped(text, 200) + "'"; }

}  // namespace hattn::detail
