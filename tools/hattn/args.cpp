#include "args.h"

#include <cctype>
#include <cmath>

#include "hattn/error.h"
#include "hattn/threads.h"

namespace hattn::cli {

Args::Args(const std::string &command, const std::vector<std::string> &argv, const std::set<std::string> &valued,
           const std::set<std::string> &switches) {
    for (size_t i = 0; i < argv.size(); i++) {
        const std::string &a = argv[i];
        if (a.rfind("--", 0) != 0) {
            positional_.push_back(a);
        } else if (valued.count(a) || switches.count(a)) {
            // A flag given twice is a typo or a script bug either way: neither value is guessed.
            require(!has(a), a + " is given twice");
            if (switches.count(a)) {
                switches_.insert(a);
                continue;
            }
            // The next flag is not this one's value (`--case --output x` lacks the case).
            require(i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0, a + " needs a value");
            values_[a] = argv[++i];
        } else {
            throw Error(command + ": unknown flag " + a);
        }
    }
}

bool Args::has(const std::string &flag) const {
    return values_.count(flag) || switches_.count(flag);
}

std::optional<std::string> Args::value(const std::string &flag) const {
    auto it = values_.find(flag);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::string Args::required(const std::string &flag) const {
    auto v = value(flag);
    require(v.has_value(), "missing required flag " + flag);
    return *v;
}

namespace {

// `text` read whole by `parse` (std::stoll, std::stod), or nothing where it is not one number
// (the parsers skip leading white space; " 5" is no more a number than "5 ").
template <typename T, typename Parse>
std::optional<T> parse_whole(const std::string &text, Parse parse) {
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
    size_t used = 0;
    try {
        const T n = parse(text, &used);
        if (used == text.size()) return n;
    } catch (const std::exception &) {
    }
    return std::nullopt;
}

}  // namespace

std::optional<int64_t> Args::integer(const std::string &flag) const {
    const auto v = value(flag);
    if (!v) return std::nullopt;
    const auto n = parse_whole<int64_t>(*v, [](const std::string &t, size_t *used) { return std::stoll(t, used); });
    require(n.has_value(), flag + " must be an integer, got '" + *v + "'");
    return n;
}

std::optional<double> Args::number(const std::string &flag) const {
    const auto v = value(flag);
    if (!v) return std::nullopt;
    const auto n = parse_whole<double>(*v, [](const std::string &t, size_t *used) { return std::stod(t, used); });
    require(n && std::isfinite(*n), flag + " must be a finite number, got '" + *v + "'");
    return n;
}

std::optional<DType> Args::storage_type(const std::string &flag) const {
    const std::optional<std::string> name = value(flag);
    if (!name) return std::nullopt;
    const std::optional<DType> dtype = type_named(*name);
    require(dtype.has_value(), flag + " must be one of " + type_names() + ", got '" + *name + "'");
    return dtype;
}

void apply_threads(const Args &args) {
    if (auto n = args.integer("--threads")) {
        require(*n >= 1 && *n <= 4096, "--threads must be in 1..4096, got " + std::to_string(*n));
        set_num_threads(static_cast<int>(*n));
    }
}

}  // namespace hattn::cli
