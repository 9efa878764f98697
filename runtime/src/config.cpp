#include "hattn/config.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <utility>

#include "hattn/error.h"
#include "json_parse.h"

namespace hattn {

nlohmann::json read_json_file(const std::string &path) {
    std::error_code ec;
    require(std::filesystem::exists(path, ec), path + ": file not found");
    require(!std::filesystem::is_directory(path, ec), path + ": is a directory");
    std::ifstream in(path, std::ios::binary);
    require(in.is_open(), path + ": cannot open: " + std::strerror(errno));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    require(!in.bad(), path + ": cannot read");

    nlohmann::json value;
    try {
        value = detail::parse_json<nlohmann::json>(text.begin(), text.end(), path);
    } catch (const nlohmann::json::parse_error &e) {
        // Drop nlohmann's "[json.exception.parse_error.101] " tag; the rest says what and where.
        std::string detail = e.what();
        const size_t tag_end = detail.find("] ");
        if (tag_end != std::string::npos) detail.erase(0, tag_end + 2);
        throw Error(path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + detail);
    }
    require(value.is_object(),
            path + ": top level must be a JSON object, got " + value.type_name());
    return value;
}

ConfigReader::ConfigReader(nlohmann::json object, std::string source)
    : object_(std::move(object)), source_(std::move(source)) {
    require(object_.is_object(),
            source_ + ": expected a JSON object, got " + std::string(object_.type_name()));
}

const nlohmann::json *ConfigReader::find(const std::string &key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
}

const nlohmann::json &ConfigReader::require_key(const std::string &key) const {
    const nlohmann::json *value = find(key);
    require(value != nullptr, source_ + ": missing key '" + key + "'");
    return *value;
}

void ConfigReader::wrong_type(const std::string &key, const nlohmann::json &value,
                              const char *expected) const {
    // dump() escapes line breaks, so the message stays one line; long values are cut short.
    std::string shown = value.dump();
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    throw Error(source_ + ": key '" + key + "' must be " + expected + ", got " + shown);
}

bool ConfigReader::has(const std::string &key) const { return find(key) != nullptr; }

// Integers are read in the int32 range: every size a kernel takes must fit Halide's 32-bit extents,
// and the products of two (heads x head_dim) must not overflow int64.
int64_t ConfigReader::as_int(const std::string &key, const nlohmann::json &value) const {
    constexpr int64_t lowest = std::numeric_limits<int32_t>::min(), highest = std::numeric_limits<int32_t>::max();
    bool in_range = false;
    int64_t result = 0;
    if (value.is_number_unsigned()) {
        in_range = value.get<uint64_t>() <= uint64_t(highest);
        result = in_range ? int64_t(value.get<uint64_t>()) : 0;
    } else if (value.is_number_integer()) {
        result = value.get<int64_t>();
        in_range = lowest <= result && result <= highest;
    } else if (value.is_number_float()) {
        // JSON does not distinguish 8 from 8.0; accept a float only when its value is integral.
        const double number = value.get<double>();
        if (!std::isfinite(number) || std::trunc(number) != number) wrong_type(key, value, "an integer");
        in_range = double(lowest) <= number && number <= double(highest);
        result = in_range ? int64_t(number) : 0;
    } else {
        wrong_type(key, value, "an integer");
    }
    if (!in_range) wrong_type(key, value, "an integer in the int32 range");
    return result;
}

double ConfigReader::as_number(const std::string &key, const nlohmann::json &value) const {
    if (!value.is_number()) wrong_type(key, value, "a number");
    return value.get<double>();
}

bool ConfigReader::as_bool(const std::string &key, const nlohmann::json &value) const {
    if (!value.is_boolean()) wrong_type(key, value, "true or false");
    return value.get<bool>();
}

std::string ConfigReader::as_string(const std::string &key, const nlohmann::json &value) const {
    if (!value.is_string()) wrong_type(key, value, "a string");
    return value.get<std::string>();
}

int64_t ConfigReader::get_int(const std::string &key) const {
    return as_int(key, require_key(key));
}

int64_t ConfigReader::get_int(const std::string &key, int64_t fallback) const {
    const nlohmann::json *value = find(key);
    return value != nullptr ? as_int(key, *value) : fallback;
}

std::optional<int64_t> ConfigReader::get_optional_int(const std::string &key) const {
    const nlohmann::json *value = find(key);
    if (value == nullptr) return std::nullopt;
    return as_int(key, *value);
}

double ConfigReader::get_number(const std::string &key) const {
    return as_number(key, require_key(key));
}

double ConfigReader::get_number(const std::string &key, double fallback) const {
    const nlohmann::json *value = find(key);
    return value != nullptr ? as_number(key, *value) : fallback;
}

std::optional<double> ConfigReader::get_optional_number(const std::string &key) const {
    const nlohmann::json *value = find(key);
    if (value == nullptr) return std::nullopt;
    return as_number(key, *value);
}

bool ConfigReader::get_bool(const std::string &key) const { return as_bool(key, require_key(key)); }

bool ConfigReader::get_bool(const std::string &key, bool fallback) const {
    const nlohmann::json *value = find(key);
    return value != nullptr ? as_bool(key, *value) : fallback;
}

std::string ConfigReader::get_string(const std::string &key) const {
    return as_string(key, require_key(key));
}

std::string ConfigReader::get_string(const std::string &key, const std::string &fallback) const {
    const nlohmann::json *value = find(key);
    return value != nullptr ? as_string(key, *value) : fallback;
}

}  // namespace hattn
