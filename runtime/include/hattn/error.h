// The one error type of hattn. Every failure a caller can see, including Halide runtime errors,
// arrives as a hattn::Error carrying one line that names the file, tensor or key at fault.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace hattn {

class Error : public std::runtime_error {
public:
    // InvalidInput: the caller's data or configuration is wrong (the CLI exits 2).
    // Internal: hattn or the machine failed on valid input (the CLI exits 1).
    enum class Kind { InvalidInput, Internal };

    // The message is kept to one line of at most max_message_bytes: control bytes and bytes that
    // are not UTF-8 are escaped (\n, \x01), since messages echo strings taken from files.
    explicit Error(const std::string &message, Kind kind = Kind::InvalidInput)
        : std::runtime_error(one_line(message)), kind_(kind) {}

    static constexpr size_t max_message_bytes = 2000;
    static std::string one_line(const std::string &message);

    Kind kind() const { return kind_; }
    bool is_invalid_input() const { return kind_ == Kind::InvalidInput; }

private:
    Kind kind_;
};

// Throws Error(message) when `condition` is false. For validating inputs in one line.
inline void require(bool condition, const std::string &message) {
    if (!condition) throw Error(message);
}

// The same with the message built only on failure, by message(). The kernels', tensors', caches'
// and layers' checks build their messages this way (all of them, a layer constructor's too, so that
// none on a call's path is missed): built eagerly, the lines of a small decode step's checks
// (allocations, to_string, shape_to_string) took more host time than its kernels (docs/perf/log.md,
// "Error messages built lazily"). The eager form is left to the loaders (config files and their
// RoPE parameters, weight files), where messages are few.
template <typename Message, typename = std::enable_if_t<std::is_invocable_r_v<std::string, Message>>>
void require(bool condition, Message &&message) {
    if (!condition) throw Error(message());
}

}  // namespace hattn
