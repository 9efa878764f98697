// The subcommands of `hattn` (spec/cli.md). Each takes the arguments after its name and returns the
// exit status; bad input throws hattn::Error, which main() turns into one line and exit 2.
#pragma once

#include <string>
#include <vector>

namespace hattn::cli {

int run_command(const std::vector<std::string> &args);
int inspect_command(const std::vector<std::string> &args);
int info_command(const std::vector<std::string> &args);
int bench_command(const std::vector<std::string> &args);

}  // namespace hattn::cli
