#include "kernel_variants.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "hattn/device.h"
#include "hattn/error.h"
#include "kernel_contract.h"

namespace hattn {

namespace {

std::atomic<ScheduleChoice> choice{ScheduleChoice::Hand};
std::atomic<IntegerDotForm> dot_form{IntegerDotForm::Auto};
std::mutex last_run_mutex;
std::map<std::string, std::string> last_run;  // kernel -> family
// The same per thread: what the kernel call this thread is making runs (see check_halide_status).
thread_local std::map<std::string, size_t> chosen_on_this_thread;

// The entry of kernel_variants() of `kernel` on `platform` with `schedule`, if built.
std::optional<size_t> find_variant(const std::string &kernel, const std::string &platform, ScheduleChoice schedule) {
    const std::vector<KernelVariant> &all = kernel_variants();
    for (size_t i = 0; i < all.size(); i++) {
        if (all[i].kernel == kernel && all[i].platform == platform && all[i].schedule == schedule) return i;
    }
    return std::nullopt;
}

// On a GPU: the hand-written variant of the device's API, or its small block tiles or rows
// schedule where asked for, or where the block tiles (or both kinds of tiles) cannot run (`fit`).
size_t gpu_variant(const std::string &kernel, const std::string &api, const detail::GpuPrefillFit &fit) {
    const std::optional<size_t> hand = find_variant(kernel, api, ScheduleChoice::Hand);
    require(hand.has_value(), [&] { return kernel + " has no " + api + " variant in this build"; });
    const std::optional<size_t> rows = find_variant(kernel, api, ScheduleChoice::Rows);
    const std::optional<size_t> small_tiles = find_variant(kernel, api, ScheduleChoice::SmallTiles);
    const bool tiles_fit = fit.tiles_refused.empty();
    const bool small_tiles_fit = small_tiles && fit.small_tiles_refused.empty();
    // The small tiles' reason where they were refused too (they need less than the others).
    const std::string &refused = small_tiles ? fit.small_tiles_refused : fit.tiles_refused;
    require(rows || tiles_fit || small_tiles_fit, [&] {
        return kernel + ": " + refused + " needs the " + api + " rows schedule, which this build lacks";
    });
    const ScheduleChoice asked = schedule_choice();
    if (rows && (asked == ScheduleChoice::Rows || (!tiles_fit && !small_tiles_fit))) return *rows;
    if (small_tiles_fit && (asked == ScheduleChoice::SmallTiles || !tiles_fit)) return *small_tiles;
    return *hand;
}

// On the CPU: x86's hand-written multi-target variant, or the single-target one the schedule
// choice names where built and runnable here; AArch64's dot-product variant where getauxval allows
// it (Halide 14's AArch64 runtime detects no CPU features), else its plain one.
size_t cpu_variant(const std::string &kernel) {
    if (const std::optional<size_t> hand = find_variant(kernel, "x86", ScheduleChoice::Hand)) {
        const ScheduleChoice asked = schedule_choice();
        const bool autoscheduled = asked == ScheduleChoice::Adams2019 || asked == ScheduleChoice::Mullapudi2016 ||
                                   asked == ScheduleChoice::Tuned;
        const std::optional<size_t> alternative = autoscheduled ? find_variant(kernel, "x86", asked) : std::nullopt;
        const bool runs = alternative && can_use_target(kernel_variants()[*alternative].targets.front());
        return runs ? *alternative : *hand;
    }
    const std::optional<size_t> dotprod = find_variant(kernel, "arm_dotprod", ScheduleChoice::Hand);
    if (dotprod && arm_dotprod_allowed()) return *dotprod;
    const std::optional<size_t> plain = find_variant(kernel, "arm_plain", ScheduleChoice::Hand);
    require(plain.has_value(), [&] { return kernel + " has no CPU variant in this build"; });
    return *plain;
}

size_t variant_index(const std::string &kernel, const detail::GpuPrefillFit &fit) {
    const Device device = current_device();
    return device == Device::CPU ? cpu_variant(kernel) : gpu_variant(kernel, device_name(device), fit);
}

}  // namespace

void set_schedule_choice(ScheduleChoice c) { choice = c; }
ScheduleChoice schedule_choice() { return choice; }

void set_integer_dot_form(IntegerDotForm f) { dot_form = f; }
IntegerDotForm integer_dot_form() { return dot_form; }

const KernelVariant &variant_to_run(const std::string &kernel) { return kernel_variants()[variant_index(kernel, {})]; }

std::string last_variant_run(const std::string &kernel) {
    std::lock_guard<std::mutex> lock(last_run_mutex);
    auto it = last_run.find(kernel);
    return it == last_run.end() ? "" : it->second;
}

namespace detail {

size_t choose_variant(const std::string &kernel, const GpuPrefillFit &fit) {
    const size_t index = variant_index(kernel, fit);
    chosen_on_this_thread[kernel] = index;
    std::lock_guard<std::mutex> lock(last_run_mutex);
    last_run[kernel] = kernel_variants()[index].family;
    return index;
}

const KernelVariant *variant_chosen_on_this_thread(const std::string &kernel) {
    auto it = chosen_on_this_thread.find(kernel);
    return it == chosen_on_this_thread.end() ? nullptr : &kernel_variants()[it->second];
}

GpuPrefillFit gpu_prefill_fit(int64_t head_dim, int64_t shared_bytes) {
    const auto &dims = kernel_contract::gpu_prefill_block_tile_head_dims;
    if (std::find(std::begin(dims), std::end(dims), head_dim) == std::end(dims)) {
        const std::string why = "head dim " + std::to_string(head_dim) + " (the block tiles take " +
                                kernel_contract::gpu_prefill_block_tile_head_dims_text() + ")";
        return {why, why};
    }
    auto refused = [&](kernel_contract::GpuPrefillTiles tiles, const char *which) -> std::string {
        const int64_t need = kernel_contract::gpu_prefill_block_tile_shared_bytes(head_dim, tiles);
        if (shared_bytes <= 0 || need <= shared_bytes) return "";
        return "head dim " + std::to_string(head_dim) + " (its " + which + " take up to " +
               std::to_string(need / 1024) + " KB of shared memory a block; the device allows " +
               std::to_string(shared_bytes / 1024) + " KB)";
    };
    return {refused(kernel_contract::gpu_prefill_tiles, "block tiles"),
            refused(kernel_contract::gpu_prefill_small_tiles, "small block tiles")};
}

GpuPrefillFit prefill_fit(int64_t head_dim) {
    const Device device = current_device();
    if (device == Device::CPU) return {};
    return gpu_prefill_fit(head_dim, device == Device::CUDA ? cuda_shared_bytes_per_block.load()
                                                            : opencl_local_bytes_per_block.load());
}

BitLinearChoice bitlinear_kernel() {
#if defined(__x86_64__)  // AArch64 builds have no u8 x s8 variant (sdot multiplies s8 x s8)
    const std::optional<size_t> vnni = find_variant("bitlinear_u8s8", "x86", ScheduleChoice::Hand);
    const IntegerDotForm form = integer_dot_form();
    const bool u8s8 = form == IntegerDotForm::U8S8 ||
                      (form == IntegerDotForm::Auto && current_device() == Device::CPU && vnni &&
                       can_use_target(kernel_variants()[*vnni].targets.front()));
    if (u8s8) return {"bitlinear_u8s8", kernel_function<kernels::bitlinear_u8s8>(), true};
#endif
    return {"bitlinear_s8s8", kernel_function<kernels::bitlinear_s8s8>(), false};
}

}  // namespace detail

}  // namespace hattn
