// hattn bench prefill|decode|layer (spec/cli.md): one JSON line per run, the median of repeated
// runs after a warm-up, on random (never zero) inputs.
#include <iostream>

#include <nlohmann/json.hpp>

#include "args.h"
#include "bench/support/workloads.h"
#include "commands.h"
#include "device.h"
#include "hattn/error.h"
#include "hattn/kernel_table.h"

namespace hattn::cli {

namespace {

int64_t positive(const Args &args, const std::string &flag, int64_t fallback) {
    const int64_t v = args.integer(flag).value_or(fallback);
    require(v > 0, flag + " must be positive, got " + std::to_string(v));
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
    } else {
        s.seq = positive(args, "--seq", s.seq);
    }
    s.causal = args.has("--causal");
    return s;
}

// --schedule: which schedule family runs (for side-by-side runs of the autoschedulers' x86
// variants, or of the GPU prefill's two schedules; a kernel without the chosen variant runs its
// hand-written one).
ScheduleChoice schedule_from(const Args &args) {
    const std::string name = args.value("--schedule").value_or("hand");
    if (name == "hand") return ScheduleChoice::Manual;
    if (name == "adams2019") return ScheduleChoice::Autoscheduled;
    if (name == "mullapudi2016") return ScheduleChoice::Mullapudi2016;
    if (name == "tuned") return ScheduleChoice::Tuned;
    if (name == "rows") return ScheduleChoice::GpuRows;
    throw Error("--schedule must be hand, adams2019, mullapudi2016, tuned or rows, got '" + name + "'");
}

}  // namespace

int bench_command(const std::vector<std::string> &argv) {
    const Args args(argv,
                    {"--heads", "--kv-heads", "--seq", "--head-dim", "--batch", "--threads",
                     "--device", "--kv-len", "--layer", "--hidden", "--reps", "--in", "--out", "--rows", "--schedule"},
                    {"--causal", "--decode", "--bitnet"});
    require(args.positional().size() == 1, "bench: expected one of prefill, decode, layer, projection");
    const std::string what = args.positional()[0];
    require(what == "prefill" || what == "decode" || what == "layer" || what == "projection",
            "bench: unknown benchmark '" + what + "' (prefill, decode, layer, projection)");
    const Device device = select_device(args);
    set_schedule_choice(schedule_from(args));
    apply_threads(args);
    const int reps = static_cast<int>(positive(args, "--reps", what == "decode" ? 20 : 5));

    nlohmann::json r{{"what", what}, {"device", device_name(device)},
                     {"schedule", args.value("--schedule").value_or("hand")},
                     {"threads", args.integer("--threads").value_or(0)}};
    if (what == "projection") {
        const int64_t in = positive(args, "--in", 2048), out = positive(args, "--out", 2048);
        const int64_t rows = positive(args, "--rows", 1);
        const bool bitnet = args.has("--bitnet");
        const bench::Workload w = bitnet ? bench::bitlinear_workload(rows, in, out) : bench::projection_workload(rows, in, out);
        const double ms = bench::median_ms(w.run, std::max(reps, 20));
        r.update({{"ms", ms}, {"rows", rows}, {"in", in}, {"out", out}, {"bitnet", bitnet},
                  {"gflops", 2.0 * rows * in * out / ms / 1e6}, {"weight_bytes", w.bytes}});
    } else if (what == "prefill" || what == "decode") {
        const bench::AttentionShape s = attention_shape(args, what == "decode");
        const bench::Workload w = what == "prefill" ? bench::prefill_workload(s) : bench::decode_workload(s);
        const double ms = bench::median_ms(w.run, reps);
        r.update({{"ms", ms}, {"batch", s.batch}, {"heads", s.heads}, {"kv_heads", s.kv_heads},
                  {"head_dim", s.head_dim}});
        if (what == "prefill") {
            r.update({{"seq", s.seq}, {"causal", s.causal}, {"gflops", w.flops / ms / 1e6}});
        } else {
            r.update({{"kv_len", s.kv_len}, {"gbs", w.bytes / ms / 1e6}});
        }
    } else {
        bench::LayerShape s;
        s.layer = args.required("--layer");
        s.hidden = positive(args, "--hidden", s.hidden);
        s.heads = positive(args, "--heads", s.heads);
        s.batch = positive(args, "--batch", s.batch);
        s.decode = args.has("--decode");
        if (s.decode) {
            s.kv_len = positive(args, "--kv-len", 0);
        } else {
            s.seq = positive(args, "--seq", s.seq);
        }
        const bench::Workload w = bench::layer_workload(s);
        const double ms = bench::median_ms(w.run, reps);
        r.update({{"layer", s.layer}, {"hidden", s.hidden}, {"heads", s.heads}, {"batch", s.batch}, {"ms", ms}});
        if (s.decode) {
            r.update({{"kv_len", s.kv_len}, {"ms_per_token", ms},
                      {"kv_bytes_per_token", bench::kv_bytes_per_token(s)}});
        } else {
            r.update({{"seq", s.seq}, {"tokens_per_s", w.tokens / ms * 1e3}});
        }
    }
    std::cout << r.dump() << "\n";
    return 0;
}

}  // namespace hattn::cli
