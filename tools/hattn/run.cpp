// hattn run: one layer on the inputs of a golden-case folder or of files named one by one.
#include <cstdlib>

#include "args.h"
#include "commands.h"
#include "device.h"
#include "hattn/error.h"
#include "hattn/layer_case.h"
#include "hattn/npy.h"

namespace hattn::cli {

namespace {

LayerCase load(const Args &args) {
    if (auto dir = args.value("--case")) {
        for (const char *flag : {"--kind", "--config", "--weights", "--input", "--context", "--mask", "--prefix"}) {
            require(!args.has(flag), std::string(flag) + " cannot be combined with --case");
        }
        return load_case_dir(*dir);
    }
    require(args.has("--kind"), "run: give --case DIR, or the files one by one: --kind KIND --config CONFIG.json "
                                "--weights W.safetensors --input X.npy");
    LayerFiles files;
    files.kind = args.required("--kind");
    files.config = args.required("--config");
    files.weights = args.required("--weights");
    files.input = args.required("--input");
    files.context = args.value("--context").value_or("");
    files.mask = args.value("--mask").value_or("");
    files.weight_prefix = args.value("--prefix").value_or("");
    return load_case_files(files);
}

}  // namespace

int run_command(const std::vector<std::string> &argv) {
    const Args args("run", argv,
                    {"--case", "--output", "--prefill", "--device", "--threads", "--kind",
                     "--config", "--weights", "--input", "--context", "--mask", "--prefix"},
                    {});
    require(args.positional().empty(), "run: unexpected argument '" +
                                           (args.positional().empty() ? "" : args.positional()[0]) + "'");
    const std::string output = args.required("--output");
    require(!output.empty(), "--output must name a file, got ''");
    select_device(args);

    // Everything is read and validated before a kernel runs.
    const LayerCase c = load(args);
    const std::optional<int64_t> prefill = args.integer("--prefill");
    if (prefill) validate_prefill(c, *prefill);
    apply_threads(args);

    write_npy(output, run_case(c, prefill));
    return 0;
}

}  // namespace hattn::cli
