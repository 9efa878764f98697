#include "json_parse.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "input_bytes.h"

namespace hattn::detail {

std::string without_nlohmann_tag(const std::string &what) {
    const size_t tag_end = what.find("] ");
    return tag_end == std::string::npos ? what : what.substr(tag_end + 2);
}

nlohmann::json parse_json_object(const std::string &text, const std::string &source) {
    nlohmann::json value;
    try {
        value = parse_json(text.begin(), text.end(), source);
    } catch (const nlohmann::json::parse_error &e) {
        throw Error(source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                    without_nlohmann_tag(e.what()));
    }
    require(value.is_object(), source + ": top level must be a JSON object, got " + value.type_name());
    return value;
}

nlohmann::json read_json_object_file(const std::string &path) {
    return parse_json_object(read_input_file(path), path);
}

}  // namespace hattn::detail
