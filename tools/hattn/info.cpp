// hattn info: the host's CPU features, the variant of each kernel that runs here, and whether a
// GPU device is usable.
#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "hattn/cpu_features.h"
#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/kernel_table.h"
#include "kernel_contract.h"

namespace hattn::cli {

namespace {

std::string device_status(Device device) {
    const std::string reason = device_unavailable_reason(device);
    return reason.empty() ? "yes" : "no (" + reason + ")";
}

std::string padded(const std::string &text, size_t width) { return text + std::string(width - text.size() + 2, ' '); }

}  // namespace

int info_command(const std::vector<std::string> &argv) {
    const Args args("info", argv, {}, {});
    require(args.positional().empty(), "info: takes no arguments");

    // Written out only once everything is known: a failure (a bad HATTN_MAX_ISA, say) leaves no
    // half-printed table on stdout.
    std::ostringstream out;
    out << "CPU features:";
    for (const std::string &f : host_cpu_features()) out << " " << f;

    set_device(Device::CPU);  // the variants that run on the CPU, whatever HATTN_DEVICE says
    std::vector<std::string> kernels;
    std::map<std::string, std::vector<const KernelVariant *>> by_kernel;
    for (const KernelVariant &v : kernel_variants()) {
        if (!by_kernel.count(v.kernel)) kernels.push_back(v.kernel);
        by_kernel[v.kernel].push_back(&v);
    }
    std::vector<std::array<std::string, 3>> rows{{"kernel", "runs on the CPU here", "also built"}};
    for (const std::string &kernel : kernels) {
        std::string runs, others;
        const KernelVariant &chosen = variant_to_run(kernel);
        for (const KernelVariant *v : by_kernel[kernel]) {
            if (v == &chosen) {
                runs = v->family + " (" + selected_target(*v).name + ")";
            } else {
                others += (others.empty() ? "" : " ") + v->family;
            }
        }
        rows.push_back({kernel, runs.empty() ? "-" : runs, others});
    }
    size_t kernel_width = 0, runs_width = 0;
    for (const auto &row : rows) {
        kernel_width = std::max(kernel_width, row[0].size());
        runs_width = std::max(runs_width, row[1].size());
    }
    out << "\n\n";
    for (const auto &row : rows) out << padded(row[0], kernel_width) << padded(row[1], runs_width) << row[2] << "\n";
    // The *_bf16_pairs kernels multiply bf16 pairs, and the u8 x s8 ones take VNNI's dot products,
    // where their sapphirerapids sub-target runs.
    const auto sapphirerapids_runs = [&](const std::string &kernel) {
        const auto found = by_kernel.find(kernel);
        return found != by_kernel.end() &&
               selected_target(*found->second.front()).name.find("avx512_sapphirerapids") != std::string::npos;
    };
    const bool pairs_run = sapphirerapids_runs("projection_bf16_pairs");
    out << "\nbf16 dot products (vdpbf16ps): "
        << (pairs_run ? "projection_bf16_pairs and projection_gemv_bf16_pairs (bf16 weights; the gemv's for inputs in "
                        "blocks of 32), "
                        "attention_prefill{,_masked}_bf16_pairs and attention_decode_bf16_pairs (QK over a bf16 cache, "
                        "for bf16 queries and even head dims; decode for groups), dsa_index_scores_bf16_pairs "
                        "(a bf16 layer's DSA indexer) and dsa_latent_attention_bf16_bf16_pairs (its absorbed logits over a bf16 "
                        "latent)"
                      : "no kernel on this CPU")
        << "; other products widen bf16 and f16 values to float32 as they read them\n";
    std::string dot_dims;
    for (int d : kernel_contract::int8_dots_head_dims) dot_dims += (dot_dims.empty() ? "" : ", ") + std::to_string(d);
    out << "\nint8 dot products (vpdpbusd): "
        << (sapphirerapids_runs("attention_decode_int8_dots")
                ? "bitlinear_u8s8 (BitLinear) and attention_decode_int8_dots (decode QK over an int8 cache, its "
                  "queries quantised per head; head dims " + dot_dims + ")"
                : "no kernel on this CPU")
        << "\n";
    out << "\nCUDA: " << device_status(Device::CUDA) << "\nOpenCL: " << device_status(Device::OpenCL) << "\n";
    std::cout << out.str();
    return 0;
}

}  // namespace hattn::cli
