// hattn bench prefill|decode|layer (spec/cli.md): one JSON line per run.
#include "args.h"
#include "commands.h"
#include "hattn/error.h"

namespace hattn::cli {

int bench_command(const std::vector<std::string> &argv) {
    require(!argv.empty(), "bench: expected prefill, decode or layer");
    const std::string &what = argv[0];
    require(what == "prefill" || what == "decode" || what == "layer",
            "bench: unknown benchmark '" + what + "' (prefill, decode, layer)");
    throw Error("bench " + what + ": the " + what + " kernels are not built yet");
}

}  // namespace hattn::cli
