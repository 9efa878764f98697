// Command-line flags of one subcommand: `--name value` pairs and bare `--switch`es. Anything the
// subcommand does not declare is an error naming the flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hattn/dtype.h"

namespace hattn::cli {

class Args {
public:
    // `valued` flags take a value, `switches` take none; positional arguments are kept in order.
    // `command` ("run", "bench decode") starts the message about a flag it does not take.
    Args(const std::string &command, const std::vector<std::string> &argv, const std::set<std::string> &valued,
         const std::set<std::string> &switches);

    const std::vector<std::string> &positional() const { return positional_; }
    bool has(const std::string &flag) const;
    std::optional<std::string> value(const std::string &flag) const;
    std::string required(const std::string &flag) const;
    std::optional<int64_t> integer(const std::string &flag) const;  // must parse as an integer
    std::optional<double> number(const std::string &flag) const;    // must parse as a finite number
    std::optional<DType> storage_type(const std::string &flag) const;  // must name one (hattn/dtype.h)

private:
    std::map<std::string, std::string> values_;
    std::set<std::string> switches_;
    std::vector<std::string> positional_;
};

// The --threads / HATTN_THREADS setting applied to the kernel pool (default: every core).
void apply_threads(const Args &args);

}  // namespace hattn::cli
