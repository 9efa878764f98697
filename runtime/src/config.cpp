#include "hattn/config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "hattn/error.h"
#include "json_parse.h"
#include "quoted.h"

namespace hattn {

struct ConfigReader::Json {
    nlohmann::json value;
};

namespace {

// Reading one key's value as a type; `where` is the reader's source().
class KeyValue {
public:
    KeyValue(std::string where, std::string key, const nlohmann::json &value)
        : where_(std::move(where)), key_(std::move(key)), value_(value) {}

    [[noreturn]] void wrong_type(const char *expected) const {
        // dump() escapes line breaks, so the message stays one line; long values are cut short.
        std::string shown = value_.dump();
        if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
        throw Error(where_ + ": key " + detail::quoted(key_) + " must be " + expected + ", got " + shown);
    }

    // Integers are read in the int32 range: every size a kernel takes must fit Halide's 32-bit
    // extents, and the products of two (heads x head_dim) must not overflow int64.
    int64_t as_int() const {
        constexpr int64_t lowest = std::numeric_limits<int32_t>::min(), highest = std::numeric_limits<int32_t>::max();
        bool in_range = false;
        int64_t result = 0;
        if (value_.is_number_unsigned()) {
            in_range = value_.get<uint64_t>() <= uint64_t(highest);
            result = in_range ? int64_t(value_.get<uint64_t>()) : 0;
        } else if (value_.is_number_integer()) {
            result = value_.get<int64_t>();
            in_range = lowest <= result && result <= highest;
        } else if (value_.is_number_float()) {
            // JSON does not distinguish 8 from 8.0; accept a float only when its value is integral.
            const double number = value_.get<double>();
            if (!std::isfinite(number) || std::trunc(number) != number) wrong_type("an integer");
            in_range = double(lowest) <= number && number <= double(highest);
            result = in_range ? int64_t(number) : 0;
        } else {
            wrong_type("an integer");
        }
        if (!in_range) wrong_type("an integer in the int32 range");
        return result;
    }
    double as_number() const {
        if (!value_.is_number()) wrong_type("a number");
        return value_.get<double>();
    }
    bool as_bool() const {
        if (!value_.is_boolean()) wrong_type("true or false");
        return value_.get<bool>();
    }
    bool as_flag() const {
        if (value_.is_number()) return as_number() != 0.0;
        if (!value_.is_boolean()) wrong_type("true, false or a number");
        return value_.get<bool>();
    }
    std::string as_string() const {
        if (!value_.is_string()) wrong_type("a string");
        return value_.get<std::string>();
    }
    std::vector<std::string> as_string_list() const {
        if (!value_.is_array()) wrong_type("a list of strings");
        std::vector<std::string> list;
        for (const nlohmann::json &item : value_) {
            if (!item.is_string()) wrong_type("a list of strings");
            list.push_back(item.get<std::string>());
        }
        return list;
    }
    std::vector<double> as_number_list() const { return as_list(&KeyValue::as_number, "a list of numbers"); }
    std::vector<int64_t> as_int_list() const { return as_list(&KeyValue::as_int, "a list of integers"); }

private:
    // A list whose items `item` reads, each named key[i] in its errors.
    template <typename T>
    std::vector<T> as_list(T (KeyValue::*item)() const, const char *expected) const {
        if (!value_.is_array()) wrong_type(expected);
        std::vector<T> list;
        for (size_t i = 0; i < value_.size(); i++) {
            list.push_back((KeyValue(where_, key_ + "[" + std::to_string(i) + "]", value_[i]).*item)());
        }
        return list;
    }

    std::string where_, key_;
    const nlohmann::json &value_;  // inside the reader's object, which outlives every KeyValue
};

}  // namespace

ConfigReader ConfigReader::from_file(const std::string &path) {
    return ConfigReader(std::make_shared<const Json>(Json{detail::read_json_object_file(path)}), path, "");
}

ConfigReader ConfigReader::parse(const std::string &text, const std::string &source) {
    return ConfigReader(std::make_shared<const Json>(Json{detail::parse_json_object(text, source)}), source, "");
}

ConfigReader::ConfigReader(std::shared_ptr<const Json> object, std::string file, std::string path)
    : object_(std::move(object)), file_(std::move(file)), path_(std::move(path)) {}

std::string ConfigReader::source() const { return path_.empty() ? file_ : file_ + " (" + path_ + ")"; }

namespace {

// The value under `key`, or nullptr if absent or null.
const nlohmann::json *find(const nlohmann::json &object, const std::string &key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

bool ConfigReader::has(const std::string &key) const { return find(json().value, key) != nullptr; }

bool ConfigReader::states_null(const std::string &key) const {
    const auto it = json().value.find(key);
    return it != json().value.end() && it->is_null();
}

namespace {

// The optimal string alignment distance of a and b (an edit is an insertion, a deletion, a
// substitution or a swap of neighbours), or limit + 1 once it is known to exceed limit.
size_t edit_distance(const std::string &a, const std::string &b, size_t limit) {
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); i++) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); j++) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); i++) {
        for (size_t j = 1; j <= b.size(); j++) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

}  // namespace

void ConfigReader::refuse_likely_typos(const std::vector<std::string> &known) const {
    for (const auto &item : json().value.items()) {
        const std::string &key = item.key();
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        for (const std::string &meant : known) {
            require(edit_distance(key, meant, 2) > 2, [&] {
                return source() + ": unknown key " + detail::quoted(key) + " (did you mean '" + meant + "'?)";
            });
        }
    }
}

ConfigReader ConfigReader::object(const std::string &key) const {
    const std::string path = path_.empty() ? key : path_ + "." + key;
    const nlohmann::json *value = find(json().value, key);
    require(value != nullptr, source() + ": missing key " + detail::quoted(key));
    if (!value->is_object()) KeyValue(source(), key, *value).wrong_type("an object");
    return ConfigReader(std::make_shared<const Json>(Json{*value}), file_, path);
}

namespace {

// The value under `key` read by `as` (a KeyValue member), or an error naming the missing key.
template <typename Read>
auto required(const nlohmann::json &object, const std::string &where, const std::string &key, Read as) {
    const nlohmann::json *value = find(object, key);
    require(value != nullptr, where + ": missing key " + detail::quoted(key));
    return std::invoke(as, KeyValue(where, key, *value));
}

// The same, or nothing where the key is absent.
template <typename Read>
auto optional(const nlohmann::json &object, const std::string &where, const std::string &key, Read as)
    -> std::optional<std::invoke_result_t<Read, KeyValue>> {
    const nlohmann::json *value = find(object, key);
    if (value == nullptr) return std::nullopt;
    return std::invoke(as, KeyValue(where, key, *value));
}

}  // namespace

int64_t ConfigReader::get_int(const std::string &key) const {
    return required(json().value, source(), key, &KeyValue::as_int);
}
int64_t ConfigReader::get_int(const std::string &key, int64_t fallback) const {
    return optional(json().value, source(), key, &KeyValue::as_int).value_or(fallback);
}
std::optional<int64_t> ConfigReader::get_optional_int(const std::string &key) const {
    return optional(json().value, source(), key, &KeyValue::as_int);
}

double ConfigReader::get_number(const std::string &key) const {
    return required(json().value, source(), key, &KeyValue::as_number);
}
double ConfigReader::get_number(const std::string &key, double fallback) const {
    return optional(json().value, source(), key, &KeyValue::as_number).value_or(fallback);
}
std::optional<double> ConfigReader::get_optional_number(const std::string &key) const {
    return optional(json().value, source(), key, &KeyValue::as_number);
}

bool ConfigReader::get_bool(const std::string &key) const {
    return required(json().value, source(), key, &KeyValue::as_bool);
}
bool ConfigReader::get_bool(const std::string &key, bool fallback) const {
    return optional(json().value, source(), key, &KeyValue::as_bool).value_or(fallback);
}
bool ConfigReader::get_flag(const std::string &key, bool fallback) const {
    return optional(json().value, source(), key, &KeyValue::as_flag).value_or(fallback);
}

std::string ConfigReader::get_string(const std::string &key) const {
    return required(json().value, source(), key, &KeyValue::as_string);
}
std::string ConfigReader::get_string(const std::string &key, const std::string &fallback) const {
    return optional(json().value, source(), key, &KeyValue::as_string).value_or(fallback);
}

std::optional<std::vector<std::string>> ConfigReader::get_optional_string_list(const std::string &key) const {
    return optional(json().value, source(), key, &KeyValue::as_string_list);
}

std::vector<double> ConfigReader::get_number_list(const std::string &key) const {
    return required(json().value, source(), key, &KeyValue::as_number_list);
}

std::optional<std::vector<int64_t>> ConfigReader::get_optional_int_list(const std::string &key) const {
    return optional(json().value, source(), key, &KeyValue::as_int_list);
}

ConfigReader text_model_config(const ConfigReader &config) {
    const bool multimodal = !config.has("hidden_size") && !config.has("embedding_dimension") && config.has("text_config");
    return multimodal ? config.object("text_config") : config;
}

}  // namespace hattn
