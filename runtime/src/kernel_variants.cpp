#include "kernel_variants.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "hattn/device.h"
#include "hattn/error.h"
#include "hattn/half.h"
#include "quoted.h"
#include "kernel_contract.h"

namespace hattn {

namespace {

std::atomic<ScheduleChoice> choice{ScheduleChoice::Hand};
std::atomic<IntegerDotForm> dot_form{IntegerDotForm::Auto};
std::atomic<Bf16DotForm> bf16_form{Bf16DotForm::Auto};
std::mutex last_run_mutex;
std::map<std::string, std::string> last_run;  // kernel -> family
// The same per thread: what the kernel call this thread is making runs (see check_halide_status).
thread_local std::map<std::string, size_t> chosen_on_this_thread;

using detail::VariantRange;

// The entry of the kernel's range on `platform` with `schedule`, if built.
std::optional<size_t> find_variant(const VariantRange &range, const char *platform, ScheduleChoice schedule) {
    const std::vector<KernelVariant> &all = kernel_variants();
    for (size_t i = range.first; i < range.first + range.count; i++) {
        if (all[i].schedule == schedule && all[i].platform == platform) return i;
    }
    return std::nullopt;
}

// On a GPU: the hand-written variant of the device's API, or its small block tiles or rows
// schedule where asked for, or where the block tiles (or both kinds of tiles) cannot run (`fit`).
size_t gpu_variant(const VariantRange &range, const char *api, const detail::GpuPrefillFit &fit) {
    const std::string kernel = range.kernel;
    const std::optional<size_t> hand = find_variant(range, api, ScheduleChoice::Hand);
    require(hand.has_value(), [&] { return kernel + " has no " + api + " variant in this build"; });
    const std::optional<size_t> rows = find_variant(range, api, ScheduleChoice::Rows);
    const std::optional<size_t> small_tiles = find_variant(range, api, ScheduleChoice::SmallTiles);
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
size_t cpu_variant(const VariantRange &range) {
    if (const std::optional<size_t> hand = find_variant(range, "x86", ScheduleChoice::Hand)) {
        const ScheduleChoice asked = schedule_choice();
        const bool autoscheduled = asked == ScheduleChoice::Adams2019 || asked == ScheduleChoice::Mullapudi2016 ||
                                   asked == ScheduleChoice::Tuned;
        const std::optional<size_t> alternative = autoscheduled ? find_variant(range, "x86", asked) : std::nullopt;
        const bool runs = alternative && can_use_target(kernel_variants()[*alternative].targets.front());
        return runs ? *alternative : *hand;
    }
    const std::optional<size_t> dotprod = find_variant(range, "arm_dotprod", ScheduleChoice::Hand);
    if (dotprod && arm_dotprod_allowed()) return *dotprod;
    const std::optional<size_t> plain = find_variant(range, "arm_plain", ScheduleChoice::Hand);
    require(plain.has_value(), [&] { return std::string(range.kernel) + " has no CPU variant in this build"; });
    return *plain;
}

size_t variant_index(const VariantRange &range, const detail::GpuPrefillFit &fit) {
    const Device device = current_device();
    return device == Device::CPU ? cpu_variant(range) : gpu_variant(range, device_name(device), fit);
}

}  // namespace

void set_schedule_choice(ScheduleChoice c) { choice = c; }
ScheduleChoice schedule_choice() { return choice; }

void set_integer_dot_form(IntegerDotForm f) { dot_form = f; }
IntegerDotForm integer_dot_form() { return dot_form; }

void set_bf16_dot_form(Bf16DotForm f) { bf16_form = f; }
Bf16DotForm bf16_dot_form() { return bf16_form; }

const KernelVariant &variant_to_run(const std::string &kernel) {
    const std::vector<KernelVariant> &all = kernel_variants();
    VariantRange range{kernel.c_str(), 0, 0};
    for (size_t i = 0; i < all.size(); i++) {
        if (all[i].kernel != kernel) continue;
        if (range.count == 0) range.first = i;
        range.count++;
    }
    require(range.count > 0, [&] { return "no kernel is named " + detail::quoted(kernel); });
    return all[variant_index(range, {})];
}

std::string last_variant_run(const std::string &kernel) {
    std::lock_guard<std::mutex> lock(last_run_mutex);
    auto it = last_run.find(kernel);
    return it == last_run.end() ? "" : it->second;
}

namespace detail {

size_t choose_variant(const VariantRange &range, const GpuPrefillFit &fit) {
    const size_t index = variant_index(range, fit);
    const KernelVariant &chosen = kernel_variants()[index];
    chosen_on_this_thread[chosen.kernel] = index;
    std::lock_guard<std::mutex> lock(last_run_mutex);
    last_run[chosen.kernel] = chosen.family;
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

#if defined(__x86_64__)  // AArch64 builds have neither bf16 pairs nor u8 x s8 variants (sdot is s8 x s8)
namespace {
// Whether Kernel's dot-product variant runs: `forced` by the form, or `automatic` (the form's Auto)
// where its x86 sub-target can run here.
template <typename Kernel>
bool dot_variant_chosen(bool forced, bool automatic) {
    const std::optional<size_t> x86 = find_variant({Kernel::name, Kernel::first, Kernel::count}, "x86", ScheduleChoice::Hand);
    return forced || (automatic && x86 && can_use_target(kernel_variants()[*x86].targets.front()));
}
}  // namespace
#endif

bool bf16_pairs_chosen() {
#if defined(__x86_64__)
    const Bf16DotForm form = bf16_dot_form();
    return current_device() == Device::CPU &&
           dot_variant_chosen<kernels::projection_bf16_pairs>(form == Bf16DotForm::Pairs, form == Bf16DotForm::Auto);
#else
    return false;
#endif
}

bool bf16_pairs_for(const ConstTensorView &q, DType keys) {
    if (keys != DType::BF16 || q.rank() == 0 || q.dim(q.rank() - 1) % 2 != 0 || !bf16_pairs_chosen()) return false;
    if (q.is_contiguous()) return all_bf16(q.data, q.size());
    // A strided view: each row along the head dim (the views a layer passes have contiguous rows).
    const int r = q.rank();
    const int64_t D = q.dim(r - 1), rows = q.size() / std::max<int64_t>(D, 1);
    for (int64_t row = 0; row < rows; row++) {
        int64_t at = 0, rest = row;
        for (int i = r - 2; i >= 0; i--) {
            at += rest % q.shape[i] * q.strides[i];
            rest /= q.shape[i];
        }
        for (int64_t d = 0; d < D; d++) {
            if (!all_bf16(q.data + at + d * q.strides[r - 1], 1)) return false;
        }
    }
    return true;
}

#if defined(__x86_64__)
namespace {
// Whether the u8 x s8 kernel U8S8 runs: integer_dot_form() U8S8, or Auto on the CPU.
template <typename U8S8>
bool u8s8_chosen() {
    const IntegerDotForm form = integer_dot_form();
    return dot_variant_chosen<U8S8>(form == IntegerDotForm::U8S8,
                                    form == IntegerDotForm::Auto && current_device() == Device::CPU);
}
}  // namespace
#endif

BitLinearChoice bitlinear_kernel() {
#if defined(__x86_64__)
    if (u8s8_chosen<kernels::bitlinear_u8s8>()) {
        return {"bitlinear_u8s8", kernel_function<kernels::bitlinear_u8s8>(), true};
    }
#endif
    return {"bitlinear_s8s8", kernel_function<kernels::bitlinear_s8s8>(), false};
}

bool int8_dots_chosen() {
#if defined(__x86_64__)  // a CPU kernel only, whatever the form says
    return current_device() == Device::CPU && u8s8_chosen<kernels::attention_decode_int8_dots>();
#else
    return false;
#endif
}

bool int8_dots_for(int64_t head_dim, DType keys) {
    if (keys != DType::Int8 || !int8_dots_chosen()) return false;
    for (int D : kernel_contract::int8_dots_head_dims) {
        if (head_dim == D) return true;
    }
    return false;
}

}  // namespace detail

}  // namespace hattn
