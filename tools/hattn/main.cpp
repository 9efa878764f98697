// hattn: run, benchmark and inspect attention layers from the command line (spec/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "hattn/error.h"

namespace {

const char *usage =
    "usage: hattn run --case DIR --output OUT.npy [--prefill P] [--device cpu|cuda|opencl] [--threads N]\n"
    "       hattn run --kind KIND --config CONFIG.json --weights W.safetensors --input X.npy\n"
    "                 --output OUT.npy [--context C.npy] [--mask M.npy] [--prefix model.layers.3.self_attn.] [...]\n"
    "       hattn bench prefill|decode|layer ...\n"
    "       hattn inspect FILE (.safetensors, .npy, or a model's config.json)\n"
    "       hattn info\n";

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::cerr << usage;
        return 2;
    }
    const std::string command = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    try {
        if (command == "run") return hattn::cli::run_command(args);
        if (command == "inspect") return hattn::cli::inspect_command(args);
        if (command == "info") return hattn::cli::info_command(args);
        if (command == "bench") return hattn::cli::bench_command(args);
        if (command == "--help" || command == "-h" || command == "help") {
            std::cout << usage;
            return 0;
        }
        // One line, like every other bad input; the usage is a `hattn --help` away.
        std::cerr << "hattn: unknown command '" << command << "' (run, bench, inspect, info; hattn --help)\n";
        return 2;
    } catch (const hattn::Error &e) {
        std::cerr << "hattn: " << e.what() << "\n";
        return e.is_invalid_input() ? 2 : 1;
    } catch (const std::exception &e) {
        std::cerr << "hattn: internal error: " << e.what() << "\n";
        return 1;
    }
}
