// hattn bench prefill|decode|layer (spec/cli.md): one JSON line per run, the median of repeated
// runs after a warm-up, on random (never zero) inputs.
#include <cmath>
#include <iostream>
#include <limits>
#include <new>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "args.h"
#include "bench/support/kernel_breakdown.h"
#include "bench/support/workloads.h"
#include "commands.h"
#include "device.h"
#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "hattn/threads.h"

namespace hattn::cli {

namespace {

// Every size is a tensor extent, which the kernels index with 32-bit integers (Halide's buffers):
// past that a size is refused here, not wrapped further down.
int64_t positive(const Args &args, const std::string &flag, int64_t fallback) {
    const int64_t v = args.integer(flag).value_or(fallback);
    require(v > 0, flag + " must be positive, got " + std::to_string(v));
    require(v <= std::numeric_limits<int32_t>::max(), flag + " must be at most 2^31 - 1, got " + std::to_string(v));
    return v;
}

bench::AttentionShape attention_shape(const Args &args, bool decode) {
    bench::AttentionShape s;
    s.heads = positive(args, "--heads", s.heads);
    s.kv_heads = positive(args, "--kv-heads", s.heads);
    require(s.heads % s.kv_heads == 0, "--heads must be divisible by --kv-heads");
    s.head_dim = positive(args, "--head-dim", s.head_dim);
    s.batch = positive(args, "--batch", s.batch);
    if (decode) {
        s.kv_len = positive(args, "--kv-len", s.kv_len);
        s.capacity = positive(args, "--capacity", s.kv_len);
        require(s.capacity >= s.kv_len, "bench decode: --capacity must hold the --kv-len tokens");
    } else {
        s.seq = positive(args, "--seq", s.seq);
    }
    s.causal = args.has("--causal");
    const double softcap = args.number("--softcap").value_or(0.0);
    s.softcap = static_cast<float>(softcap);
    require(softcap == 0 || (softcap > 0 && std::isnormal(s.softcap)),
            "--softcap must be 0 (none) or a positive normal float, got " + std::to_string(softcap));
    return s;
}

// --schedule: which schedule runs (for side-by-side runs of the autoschedulers' x86 variants, or
// of the GPU prefill's three schedules; a kernel without the chosen variant runs its hand-written one).
ScheduleChoice schedule_from(const Args &args) {
    const std::string name = args.value("--schedule").value_or("hand");
    const std::optional<ScheduleChoice> schedule = schedule_named(name);
    require(schedule.has_value(), "--schedule must be one of " + schedule_names() + ", got '" + name + "'");
    return *schedule;
}

// The flags of each benchmark: any other is refused, so that a flag meant for another one (--seq for
// a decode) is never silently ignored.
Args benchmark_args(const std::vector<std::string> &argv, const std::string &what) {
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
    std::set<std::string> valued{"--threads", "--device", "--reps", "--schedule", "--dtype", "--kv-dtype"},
        switches{"--kernel-times"};
    if (what == "projection") {
        valued.insert({"--in", "--out", "--rows"});
        switches.insert("--bitnet");
    } else {
        valued.insert({"--heads", "--batch"});
    }
    if (what == "prefill" || what == "decode") valued.insert({"--kv-heads", "--head-dim", "--softcap"});
    if (what == "prefill") {
        valued.insert("--seq");
        switches.insert("--causal");
    }
    if (what == "decode") valued.insert({"--kv-len", "--capacity"});
    if (what == "layer") {
        valued.insert({"--layer", "--hidden", "--seq", "--kv-len", "--window"});
        switches.insert("--decode");
    }
    Args args("bench " + what, rest, valued, switches);
    require(args.positional().empty(), "bench " + what + ": unexpected argument '" +
                                           (args.positional().empty() ? "" : args.positional()[0]) + "'");
    if (what == "layer") {
        // A layer benchmark is a prefill of --seq tokens or, with --decode, one step after --kv-len.
        const bool decode = args.has("--decode");
        require(!decode || args.has("--kv-len"), "bench layer --decode needs --kv-len T (the tokens already cached)");
        require(!decode || !args.has("--seq"), "bench layer --decode takes --kv-len, not --seq");
        require(decode || !args.has("--kv-len"), "bench layer: --kv-len is for --decode (a prefill takes --seq)");
    }
    return args;
}

// The kernel a prefill or decode benchmark ran: one per cache storage type, or the type's
// dot-product form where it ran (bf16 pairs, int8 dots; generators/kernels.cmake).
std::string attention_kernel(const std::string &what, DType kv_dtype) {
    const std::string kernel = what == "prefill" ? "attention_prefill" : "attention_decode";
    if (kv_dtype == DType::F32) return kernel;
    const std::string typed = kernel + "_" + type_name(kv_dtype);
    for (const char *form : {"_pairs", "_dots"}) {
        if (!last_variant_run(typed + form).empty()) return typed + form;
    }
    return typed;
}

// --kernel-times: the same runs again, each call waited for and timed (hattn/kernel_times.h).
nlohmann::json breakdown_json(const bench::KernelBreakdown &b) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const KernelTime &k : b.per_run) {
        kernels.push_back({{"kernel", k.kernel}, {"calls", k.calls}, {"host_ms", k.host_ms}, {"device_ms", k.device_ms}});
    }
    return {{"runs", b.runs}, {"ms", b.ms}, {"outside_kernels_ms", b.outside_kernels_ms}, {"kernels", kernels}};
}

int run_benchmark(const std::vector<std::string> &argv) {
    require(!argv.empty() && argv[0].rfind("--", 0) != 0,
            "bench: the benchmark comes first: hattn bench prefill|decode|layer|projection [flags]");
    const std::string what = argv[0];
    require(what == "prefill" || what == "decode" || what == "layer" || what == "projection",
            "bench: unknown benchmark '" + what + "' (prefill, decode, layer, projection)");
    const Args args = benchmark_args(argv, what);
    const Device device = select_device(args);
    set_schedule_choice(schedule_from(args));
    apply_threads(args);
    const int reps = static_cast<int>(positive(args, "--reps", what == "decode" ? 20 : 5));
    // --dtype sets both, as a case's "dtype" does. A kernel benchmark takes the types its inputs
    // are stored in: projection weights in the dtype, attention K and V in the kv_dtype.
    const DType dtype = args.storage_type("--dtype").value_or(DType::F32);
    const DType kv_dtype = args.storage_type("--kv-dtype").value_or(dtype);
    // (A layer whose caches take no int8 says so when it is built.)
    require_supported({dtype, kv_dtype}, "bench " + what, true);
    require(what != "projection" || kv_dtype == dtype || !args.has("--kv-dtype"),
            "bench projection: --kv-dtype is for attention (a projection's weights take --dtype)");

    nlohmann::json r{{"what", what}, {"device", device_name(device)},
                     {"schedule", args.value("--schedule").value_or("hand")}, {"threads", num_threads()},
                     {"dtype", type_name(dtype)}, {"kv_dtype", type_name(kv_dtype)}};
    bench::Workload w;
    int runs = reps;  // how many runs the median took
    if (what == "projection") {
        const int64_t in = positive(args, "--in", 2048), out = positive(args, "--out", 2048);
        const int64_t rows = positive(args, "--rows", 1);
        const bool bitnet = args.has("--bitnet");
        require(!bitnet || dtype == DType::F32, "bench projection --bitnet: BitLinear's weights are ternary (no --dtype)");
        w = bitnet ? bench::bitlinear_workload(rows, in, out) : bench::projection_workload(rows, in, out, dtype);
        runs = std::max(reps, 20);
        const double ms = bench::median_ms(w.run, runs);
        r.update({{"ms", ms}, {"rows", rows}, {"in", in}, {"out", out}, {"bitnet", bitnet},
                  {"gflops", 2.0 * rows * in * out / ms / 1e6}, {"weight_bytes", w.bytes}});
    } else if (what == "prefill" || what == "decode") {
        bench::AttentionShape s = attention_shape(args, what == "decode");
        s.kv_dtype = kv_dtype;
        s.dtype = dtype;
        w = what == "prefill" ? bench::prefill_workload(s) : bench::decode_workload(s);
        const double ms = bench::median_ms(w.run, reps);
        // The kernel and family that ran: --schedule names one that a kernel may lack (then its
        // hand-written schedule runs; Mullapudi2016 has no attention variant).
        const std::string kernel = attention_kernel(what, kv_dtype);
        r.update({{"ms", ms}, {"batch", s.batch}, {"heads", s.heads}, {"kv_heads", s.kv_heads},
                  {"head_dim", s.head_dim}, {"kernel", kernel}, {"variant", last_variant_run(kernel)}});
        if (s.softcap > 0) r["softcap"] = s.softcap;
        if (what == "prefill") {
            r.update({{"seq", s.seq}, {"causal", s.causal}, {"gflops", w.flops / ms / 1e6}});
        } else {
            r.update({{"kv_len", s.kv_len}, {"capacity", s.capacity}, {"gbs", w.bytes / ms / 1e6}});
        }
    } else {
        bench::LayerShape s;
        s.layer = args.required("--layer");
        s.hidden = positive(args, "--hidden", s.hidden);
        s.heads = positive(args, "--heads", s.heads);
        s.batch = positive(args, "--batch", s.batch);
        s.decode = args.has("--decode");
        s.window = args.has("--window") ? positive(args, "--window", 1) : 0;
        s.storage = {dtype, kv_dtype};
        if (s.decode) {
            s.kv_len = positive(args, "--kv-len", s.kv_len);
        } else {
            s.seq = positive(args, "--seq", s.seq);
        }
        w = bench::layer_workload(s);
        const double ms = bench::median_ms(w.run, reps);
        r.update({{"layer", s.layer}, {"hidden", s.hidden}, {"heads", s.heads}, {"batch", s.batch}, {"ms", ms}});
        if (s.window) r["window"] = s.window;
        if (s.decode) {
            r.update({{"kv_len", s.kv_len}, {"ms_per_token", ms},
                      {"kv_bytes_per_token", w.cache_bytes_per_token}});
        } else {
            r.update({{"seq", s.seq}, {"tokens_per_s", w.tokens / ms * 1e3}});
        }
    }
    if (args.has("--kernel-times")) r["kernel_times"] = breakdown_json(bench::kernel_breakdown(w.run, runs));
    std::cout << r.dump() << "\n";
    return 0;
}

}  // namespace

// A shape too large for this machine's memory is the user's to change: one line naming the
// benchmark, not an internal error.
int bench_command(const std::vector<std::string> &argv) {
    try {
        return run_benchmark(argv);
    } catch (const std::bad_alloc &) {
    } catch (const std::length_error &) {
    }
    throw Error("bench " + argv[0] + ": the shape's tensors need more memory than can be allocated");
}

}  // namespace hattn::cli
