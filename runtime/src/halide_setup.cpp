#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "HalideRuntime.h"
#include "halide_call.h"
#include "hattn/error.h"
#include "kernel_variants.h"
#include "memory_pool.h"

namespace hattn::detail {

namespace {

// Halide calls the handler from inside generated code, where a C++ exception must not unwind. The
// handler only records the message; check_halide_status() throws once the kernel has returned.
// Most failures are the pipeline's own checks of its buffers, which run on the calling thread: their
// message is kept per thread, so concurrent calls never swap messages. A failure inside a parallel
// loop reports from a worker thread; the last such message is kept per process as a fallback.
std::mutex last_message_mutex;
std::string last_message;
thread_local std::string this_thread_message;

extern "C" void record_halide_error(void *, const char *message) {
    std::string text = message ? message : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    this_thread_message = text;
    std::lock_guard<std::mutex> lock(last_message_mutex);
    last_message = std::move(text);
}

// HATTN_MAX_ISA caps the x86 sub-target that multi-target kernels choose, so that every
// variant's code path can be run (and tested) on a machine that has more.
constexpr int feature_words = (halide_target_feature_end + 63) / 64;
uint64_t allowed_isa[feature_words];
uint64_t known_isa[feature_words];

void set_bit(uint64_t *bits, int feature) { bits[feature / 64] |= uint64_t(1) << (feature % 64); }

extern "C" int limited_can_use_target_features(int count, const uint64_t *features) {
    for (int i = 0; i < count && i < feature_words; i++) {
        if (features[i] & known_isa[i] & ~allowed_isa[i]) return 0;
    }
    return halide_default_can_use_target_features(count, features);
}

void install_isa_limit(const std::string &level) {
    using F = std::vector<halide_target_feature_t>;
    // Each level adds its features to the ones below it.
    const std::vector<std::pair<std::string, F>> levels = {
        {"sse41", {halide_target_feature_sse41}},
        {"avx2", {halide_target_feature_avx, halide_target_feature_f16c, halide_target_feature_fma,
                  halide_target_feature_avx2}},
        {"avx512", {halide_target_feature_avx512, halide_target_feature_avx512_skylake}},
    };
    const F every_isa = {halide_target_feature_sse41, halide_target_feature_avx, halide_target_feature_avx2,
                         halide_target_feature_fma, halide_target_feature_fma4, halide_target_feature_f16c,
                         halide_target_feature_avx512, halide_target_feature_avx512_knl,
                         halide_target_feature_avx512_skylake, halide_target_feature_avx512_cannonlake,
                         halide_target_feature_avx512_sapphirerapids};
    for (halide_target_feature_t f : every_isa) set_bit(known_isa, f);
    bool found = false;
    for (const auto &[name, features] : levels) {
        for (halide_target_feature_t f : features) set_bit(allowed_isa, f);
        if (name == level) {
            found = true;
            break;
        }
    }
    require(found, "HATTN_MAX_ISA: unknown level '" + level + "' (sse41, avx2, avx512)");
    halide_set_custom_can_use_target_features(limited_can_use_target_features);
}

}  // namespace

void prepare_halide_runtime() {
    check_memory_pool_setting();
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_error_handler(record_halide_error);
        halide_set_custom_malloc(pooled_halide_malloc);
        halide_set_custom_free(pooled_halide_free);
        if (const char *level = std::getenv("HATTN_MAX_ISA"); level && *level) install_isa_limit(level);
    });
}

void check_halide_status(int status, const char *kernel) {
    if (status == 0) return;
    std::string message;
    message.swap(this_thread_message);
    {
        std::lock_guard<std::mutex> lock(last_message_mutex);
        if (message.empty()) message.swap(last_message);  // a worker thread's report
        else if (message == last_message) last_message.clear();
    }
    if (message.empty()) message = "error code " + std::to_string(status);
    // The hand-written schedules cover every shape the runtime's checks let through, so a bounds
    // failure there is hattn's. The autoschedulers' schedules assume extents no smaller than the
    // estimates they were searched at (their tiles are not guarded): a smaller shape is outside what
    // the variant the caller chose can run.
    const KernelVariant *variant = variant_chosen_on_this_thread(kernel);
    const bool autoscheduled = variant && (variant->schedule == ScheduleChoice::Adams2019 ||
                                           variant->schedule == ScheduleChoice::Mullapudi2016 ||
                                           variant->schedule == ScheduleChoice::Tuned);
    if (status == halide_error_code_access_out_of_bounds && autoscheduled) {
        throw Error(std::string(kernel) + ": its autoscheduled variant (" + variant->family +
                    ") does not cover this shape, below the sizes it was searched at: " + message);
    }
    throw Error(std::string(kernel) + " kernel failed: " + message, Error::Kind::Internal);
}

}  // namespace hattn::detail
