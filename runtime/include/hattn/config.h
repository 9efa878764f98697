// Reading JSON configuration (model config.json, checkpoint indexes) with errors that name the file
// and the key at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hattn {

// Parses `path` as JSON whose top level is an object. Throws Error naming the file when it is
// missing or unreadable, is not valid JSON (with the byte position), or is not an object.
nlohmann::json read_json_file(const std::string &path);

// Typed access to the keys of one JSON object. `source` labels error messages, e.g.
// "config.json: key 'num_heads' must be an integer, got \"abc\"".
//
// A key whose value is null counts as absent (configs write null for "unset"): has() is false,
// getters with a default return it, and getters without one throw "missing key".
class ConfigReader {
public:
    ConfigReader(nlohmann::json object, std::string source);

    const nlohmann::json &json() const { return object_; }
    const std::string &source() const { return source_; }

    bool has(const std::string &key) const;

    // Integers accept any JSON number with an exact integer value in the int32 range (8 and 8.0;
    // not 8.5, not 2^31): sizes must fit the kernels' 32-bit extents.
    int64_t get_int(const std::string &key) const;
    int64_t get_int(const std::string &key, int64_t fallback) const;
    std::optional<int64_t> get_optional_int(const std::string &key) const;

    double get_number(const std::string &key) const;
    double get_number(const std::string &key, double fallback) const;
    std::optional<double> get_optional_number(const std::string &key) const;

    bool get_bool(const std::string &key) const;
    bool get_bool(const std::string &key, bool fallback) const;

    std::string get_string(const std::string &key) const;
    std::string get_string(const std::string &key, const std::string &fallback) const;

private:
    const nlohmann::json *find(const std::string &key) const;  // nullptr if absent or null
    const nlohmann::json &require_key(const std::string &key) const;
    [[noreturn]] void wrong_type(const std::string &key, const nlohmann::json &value,
                                 const char *expected) const;
    int64_t as_int(const std::string &key, const nlohmann::json &value) const;
    double as_number(const std::string &key, const nlohmann::json &value) const;
    bool as_bool(const std::string &key, const nlohmann::json &value) const;
    std::string as_string(const std::string &key, const nlohmann::json &value) const;

    nlohmann::json object_;
    std::string source_;
};

}  // namespace hattn
