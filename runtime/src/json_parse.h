// Parsing JSON that comes from files (configs, safetensors headers). nlohmann's dump() and copies
// recurse once per nesting level, so a file nested tens of thousands of levels deep would overflow
// the stack when an error message shows a value or a reader copies one. Real files nest a few
// levels: past max_json_depth the parse stops with an Error naming the source.
//
// A key given twice in one object is refused too: nlohmann keeps one of them silently, so a
// safetensors header naming a tensor twice would load whichever it kept (the safetensors library
// refuses such headers, and Python's json keeps the last).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hattn/error.h"
#include "quoted.h"

namespace hattn::detail {

constexpr int max_json_depth = 64;

// Drops nlohmann's "[json.exception.parse_error.101] " tag; the rest says what and where.
std::string without_nlohmann_tag(const std::string &what);

// A bound on the keys of the top-level object (a safetensors header's tensors), and what they are.
struct TopLevelKeys {
    size_t limit = SIZE_MAX;
    const char *what = "keys";
};

// nlohmann::json::parse(first, last) with the depth limit, unique keys and the top-level key bound,
// in O(n log n) for n keys (nlohmann's ordered_json inserts in linear time: quadratic); parse errors
// are nlohmann's, for the caller to word. A number past a double's range (1e400) is an Error naming
// the source.
template <class Iterator>
nlohmann::json parse_json(Iterator first, Iterator last, const std::string &source, TopLevelKeys top = {}) {
    using Json = nlohmann::json;
    using Event = Json::parse_event_t;
    std::vector<std::set<std::string>> keys_of_open_objects;
    const auto check = [&](int depth, Event event, Json &parsed) {
        if (depth > max_json_depth) {
            throw Error(source + ": JSON nested deeper than " + std::to_string(max_json_depth) + " levels");
        }
        if (event == Event::object_start) keys_of_open_objects.emplace_back();
        if (event == Event::object_end) keys_of_open_objects.pop_back();
        if (event == Event::key) {
            std::string key = parsed.get<std::string>();
            require(keys_of_open_objects.size() > 1 || keys_of_open_objects.back().size() < top.limit, [&] {
                return source + ": more than " + std::to_string(top.limit) + " " + top.what + ", the limit";
            });
            require(keys_of_open_objects.back().insert(std::move(key)).second,
                    [&] { return source + ": key " + detail::quoted(parsed.get<std::string>()) + " appears twice in one object"; });
        }
        return true;
    };
    // nlohmann stops at a NUL byte as at the end: what follows one would be ignored, unread.
    const Iterator nul = std::find(first, last, 0);
    if (nul != last) {
        throw Error(source + ": invalid JSON at byte " + std::to_string(std::distance(first, nul)) + ": a NUL byte");
    }
    try {
        return Json::parse(first, last, check);
    } catch (const typename Json::out_of_range &e) {
        throw Error(source + ": " + without_nlohmann_tag(e.what()));
    }
}

// The JSON object in `text`. Throws Error naming `source` when it is not valid JSON (with the byte
// position), nests too deep, or is not an object.
nlohmann::json parse_json_object(const std::string &text, const std::string &source);

// The same for the file at `path`, which may also be missing, a directory or unreadable.
nlohmann::json read_json_object_file(const std::string &path);

}  // namespace hattn::detail
