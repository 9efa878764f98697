// hattn run: one layer on the inputs of a golden-case folder or of files named one by one.
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "device.h"
#include "hattn/error.h"
#include "hattn/layer_case.h"
#include "hattn/npy.h"
#include "hattn/text_file.h"

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

// What the run used, as one JSON object (spec/cli.md).
void write_report(const std::string &path, const RunReport &r) {
    const nlohmann::json report{{"dtype", type_name(r.dtype)},
                                {"kv_dtype", type_name(r.kv_dtype)},
                                {"weight_bytes", r.weight_bytes},
                                {"cache_bytes_per_token", r.cache_bytes_per_token}};
    write_text_file(path, report.dump() + "\n");
}

}  // namespace

int run_command(const std::vector<std::string> &argv) {
    const Args args("run", argv,
                    {"--case", "--output", "--prefill", "--device", "--threads", "--kind", "--config", "--weights",
                     "--input", "--context", "--mask", "--prefix", "--dtype", "--kv-dtype", "--report"},
                    {});
    require(args.positional().empty(), "run: unexpected argument '" +
                                           (args.positional().empty() ? "" : args.positional()[0]) + "'");
    const std::string output = args.required("--output");
    require(!output.empty(), "--output must name a file, got ''");
    select_device(args);

    const std::optional<std::string> report = args.value("--report");
    require(!report || !report->empty(), "--report must name a file, got ''");
    // Everything is read and validated before a kernel runs.
    LayerCase c = load(args);
    // The flags win over a case's own types; --dtype alone sets both, as a case's "dtype" does.
    const DType dtype = args.storage_type("--dtype").value_or(c.dtype);
    set_storage_types(c, dtype, args.storage_type("--kv-dtype").value_or(args.has("--dtype") ? dtype : c.kv_dtype),
                      "--dtype");
    const std::optional<int64_t> prefill = args.integer("--prefill");
    if (prefill) validate_prefill(c, *prefill);
    apply_threads(args);

    const CaseRun run = run_case(c, prefill);
    write_npy(output, run.y);
    if (report) write_report(*report, run.report);
    return 0;
}

}  // namespace hattn::cli
