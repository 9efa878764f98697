#include "kernel_variants.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "hattn/kernel_table.h"

#if defined(__x86_64__)
#include "hattn_attention_decode_x86.h"
#include "hattn_layer_norm_x86.h"
#include "hattn_layer_norm_x86_auto.h"
#include "hattn_rms_norm_x86.h"
#include "hattn_rms_norm_x86_auto.h"
#include "hattn_dsa_index_scores_x86.h"
#include "hattn_dsa_index_scores_x86_auto.h"
#include "hattn_dsa_sparse_attention_x86.h"
#include "hattn_dsa_sparse_attention_x86_auto.h"
#include "hattn_bitlinear_s8s8_x86.h"
#include "hattn_bitlinear_s8s8_x86_auto.h"
#include "hattn_bitlinear_u8s8_x86.h"
#include "hattn_bitlinear_u8s8_x86_auto.h"
#include "hattn_cca_qk_latent_x86.h"
#include "hattn_cca_qk_latent_x86_auto.h"
#include "hattn_attention_decode_x86_auto.h"
#include "hattn_attention_prefill_x86.h"
#include "hattn_attention_prefill_x86_auto.h"
#include "hattn_attention_prefill_masked_x86.h"
#include "hattn_attention_prefill_masked_x86_auto.h"
#include "hattn_projection_x86.h"
#include "hattn_projection_x86_auto.h"
#include "hattn_projection_gemv_x86.h"
#include "hattn_projection_gemv_x86_auto.h"
#include "hattn_rope_x86.h"
#include "hattn_rope_x86_auto.h"
#include "hattn_rope_interleaved_x86.h"
#include "hattn_rope_interleaved_x86_auto.h"
#include "hattn_optional_variants.h"  // generated: HATTN_X86_MULLAPUDI_<kernel>, HATTN_X86_TUNED_<kernel>
#elif defined(__aarch64__)
#include "hattn_attention_decode_arm_plain.h"
#include "hattn_layer_norm_arm_plain.h"
#include "hattn_rms_norm_arm_plain.h"
#include "hattn_dsa_index_scores_arm_plain.h"
#include "hattn_dsa_sparse_attention_arm_plain.h"
#include "hattn_bitlinear_s8s8_arm_dotprod.h"
#include "hattn_bitlinear_s8s8_arm_plain.h"
#include "hattn_cca_qk_latent_arm_plain.h"
#include "hattn_attention_prefill_arm_plain.h"
#include "hattn_attention_prefill_masked_arm_plain.h"
#include "hattn_projection_arm_plain.h"
#include "hattn_projection_gemv_arm_plain.h"
#include "hattn_rope_arm_plain.h"
#include "hattn_rope_interleaved_arm_plain.h"
#endif

namespace hattn {

namespace {

std::atomic<ScheduleChoice> choice{ScheduleChoice::Manual};
std::atomic<IntegerDotForm> dot_form{IntegerDotForm::Auto};
std::mutex last_run_mutex;
std::map<std::string, std::string> last_run;  // kernel -> family

const KernelVariant *find_variant(const std::string &kernel, const std::string &family) {
    for (const KernelVariant &v : kernel_variants()) {
        if (v.kernel == kernel && v.family == family) return &v;
    }
    return nullptr;
}

// Picks among a kernel's variants on this architecture and records the pick.
template <typename Fn>
Fn choose(const char *kernel, Fn manual, const char *manual_family, Fn autoscheduled,
          const char *auto_family) {
    const char *family = manual_family;
    Fn fn = manual;
    if (autoscheduled && schedule_choice() != ScheduleChoice::Manual) {
        const KernelVariant *v = find_variant(kernel, auto_family);
        if (v && can_use_target(v->targets.front())) {
            family = auto_family;
            fn = autoscheduled;
        }
    }
    std::lock_guard<std::mutex> lock(last_run_mutex);
    last_run[kernel] = family;
    return fn;
}

}  // namespace

void set_schedule_choice(ScheduleChoice c) { choice = c; }
ScheduleChoice schedule_choice() { return choice; }

void set_integer_dot_form(IntegerDotForm f) { dot_form = f; }
IntegerDotForm integer_dot_form() { return dot_form; }

std::string last_variant_run(const std::string &kernel) {
    std::lock_guard<std::mutex> lock(last_run_mutex);
    auto it = last_run.find(kernel);
    return it == last_run.end() ? "" : it->second;
}

namespace detail {

// AArch64: "plain" for every kernel; a kernel that also has an arm_dot_prod variant chooses it by
// arm_dotprod_allowed() (getauxval), because Halide 14's AArch64 runtime detects no CPU features.
#if defined(__x86_64__)
// x86: the multi-target library, or the single-target one the schedule choice names (null where
// this kernel lacks it, and then the multi-target one runs).
template <typename Fn>
Fn chosen_alternative(Fn adams2019, Fn mullapudi2016, Fn tuned) {
    switch (schedule_choice()) {
    case ScheduleChoice::Autoscheduled: return adams2019;
    case ScheduleChoice::Mullapudi2016: return mullapudi2016;
    case ScheduleChoice::Tuned: return tuned;
    default: return nullptr;
    }
}
const char *chosen_alternative_family() {
    switch (schedule_choice()) {
    case ScheduleChoice::Autoscheduled: return "x86_auto";
    case ScheduleChoice::Mullapudi2016: return "x86_mullapudi";
    case ScheduleChoice::Tuned: return "x86_tuned";
    default: return "";
    }
}
#define HATTN_VARIANTS(kernel)                                                                  \
    hattn_##kernel##_x86, "x86",                                                                \
        chosen_alternative(hattn_##kernel##_x86_auto, HATTN_X86_MULLAPUDI_##kernel,            \
                           HATTN_X86_TUNED_##kernel),                                           \
        chosen_alternative_family()
#elif defined(__aarch64__)
#define HATTN_VARIANTS(kernel) \
    hattn_##kernel##_arm_plain, "arm_plain", decltype(&hattn_##kernel##_arm_plain)(nullptr), ""
#endif

ProjectionKernel projection_kernel() { return choose("projection", HATTN_VARIANTS(projection)); }
ProjectionKernel projection_gemv_kernel() {
    return choose("projection_gemv", HATTN_VARIANTS(projection_gemv));
}
RopeKernel rope_kernel() { return choose("rope", HATTN_VARIANTS(rope)); }
RopeKernel rope_interleaved_kernel() { return choose("rope_interleaved", HATTN_VARIANTS(rope_interleaved)); }
AttentionPrefillKernel attention_prefill_kernel() {
    return choose("attention_prefill", HATTN_VARIANTS(attention_prefill));
}
AttentionPrefillMaskedKernel attention_prefill_masked_kernel() {
    return choose("attention_prefill_masked", HATTN_VARIANTS(attention_prefill_masked));
}
AttentionDecodeKernel attention_decode_kernel() {
    return choose("attention_decode", HATTN_VARIANTS(attention_decode));
}
CcaQkLatentKernel cca_qk_latent_kernel() { return choose("cca_qk_latent", HATTN_VARIANTS(cca_qk_latent)); }
RowNormKernel rms_norm_kernel() { return choose("rms_norm", HATTN_VARIANTS(rms_norm)); }
RowNormKernel layer_norm_kernel() { return choose("layer_norm", HATTN_VARIANTS(layer_norm)); }
DsaIndexScoresKernel dsa_index_scores_kernel() {
    return choose("dsa_index_scores", HATTN_VARIANTS(dsa_index_scores));
}
DsaSparseAttentionKernel dsa_sparse_attention_kernel() {
    return choose("dsa_sparse_attention", HATTN_VARIANTS(dsa_sparse_attention));
}

BitLinearChoice bitlinear_kernel() {
#if defined(__x86_64__)
    const KernelVariant *vnni = find_variant("bitlinear_u8s8", "x86");
    const IntegerDotForm form = integer_dot_form();
    const bool u8s8 = form == IntegerDotForm::U8S8 ||
                      (form == IntegerDotForm::Auto && vnni && can_use_target(vnni->targets.front()));
    if (u8s8) return {"bitlinear_u8s8", choose("bitlinear_u8s8", HATTN_VARIANTS(bitlinear_u8s8)), true};
    return {"bitlinear_s8s8", choose("bitlinear_s8s8", HATTN_VARIANTS(bitlinear_s8s8)), false};
#elif defined(__aarch64__)
    // sdot needs the dotprod extension; Halide 14's AArch64 runtime cannot tell, getauxval can.
    if (arm_dotprod_allowed()) {
        return {"bitlinear_s8s8",
                choose("bitlinear_s8s8", hattn_bitlinear_s8s8_arm_dotprod, "arm_dotprod",
                       decltype(&hattn_bitlinear_s8s8_arm_dotprod)(nullptr), ""),
                false};
    }
    return {"bitlinear_s8s8", choose("bitlinear_s8s8", HATTN_VARIANTS(bitlinear_s8s8)), false};
#endif
}

}  // namespace detail

}  // namespace hattn
