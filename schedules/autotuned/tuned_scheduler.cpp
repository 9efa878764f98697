// An autoscheduler plugin that applies the schedule scripts/tune found for one kernel, so that the
// build's x86_tuned variant goes through the same auto_schedule path as the Adams2019 variant the
// schedule came from (generators stay as they are). cmake/hattn_tuned.cmake compiles this file
// once per committed schedules/autotuned/<kernel>.schedule.h, defining
//   HATTN_TUNED_KERNEL    the kernel, whose schedule function is apply_schedule_<kernel>
//   HATTN_TUNED_SCHEDULE  the header's path, in quotes
//   HATTN_TUNED_NAME      the autoscheduler name the build passes to the generator (-s), quoted
//
// The schedule names the pipeline's Funcs by their index in the pipeline: it stays valid only
// while the generator's algorithm is unchanged. After changing one, run scripts/tune again.
#include "Halide.h"

#include HATTN_TUNED_SCHEDULE

#define HATTN_CAT(a, b) HATTN_CAT_(a, b)
#define HATTN_CAT_(a, b) a##b

namespace {

struct RegisterTunedSchedule {
    RegisterTunedSchedule() {
        Halide::Pipeline::add_autoscheduler(
            HATTN_TUNED_NAME, [](const Halide::Pipeline &pipeline, const Halide::Target &target,
                                 const Halide::MachineParams &, Halide::AutoSchedulerResults *results) {
                HATTN_CAT(apply_schedule_, HATTN_TUNED_KERNEL)(pipeline, target);
                results->scheduler_name = HATTN_TUNED_NAME;
            });
    }
} register_tuned_schedule;

}  // namespace
