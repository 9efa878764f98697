// An autoscheduler plugin that applies the schedule scripts/tune found for one kernel, so that the
// build's x86_tuned variant goes through the same auto_schedule path as the Adams2019 variant the
// schedule came from (generators stay as they are). cmake/hattn_tuned.cmake compiles this file
// once per committed schedules/autotuned/<kernel>.schedule.h, defining
//   HATTN_TUNED_KERNEL    the kernel, whose schedule function is apply_schedule_<kernel>
//   HATTN_TUNED_SCHEDULE  the header's path, in quotes
//   HATTN_TUNED_NAME      the autoscheduler name the build passes to the generator (-s), quoted
//
// The schedule names the pipeline's Funcs by their index in the pipeline: it stays valid only
// while the generator's algorithm is unchanged. A new Func (an input read by a new stage counts:
// its wrapper is a Func) shifts the indices and would schedule the wrong Funcs without an error,
// so the plugin first checks every `Func name = pipeline.get_func(i);` line of the header against
// the pipeline and stops the build on a mismatch. After changing an algorithm, run scripts/tune
// again, or renumber the header's indices where only new input wrappers moved them.
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "Halide.h"

#include HATTN_TUNED_SCHEDULE

#define HATTN_CAT(a, b) HATTN_CAT_(a, b)
#define HATTN_CAT_(a, b) a##b

namespace {

// The pipeline's Funcs in get_func's order, as "0 name, 1 name, ...".
std::string pipeline_order(Halide::Pipeline pipeline) {
    std::string order;
    for (size_t i = 0;; i++) {
        std::string name;
        try {
            name = pipeline.get_func(i).name();
        } catch (...) {
            return order;
        }
        order += (i ? ", " : "") + std::to_string(i) + " " + name;
    }
}

// Fails the build where a Func the schedule names by index has another name in the pipeline.
void check_schedule_matches(const Halide::Pipeline &pipeline) {
    std::ifstream header(HATTN_TUNED_SCHEDULE);
    std::stringstream text;
    text << header.rdbuf();
    const std::string source = text.str();
    const std::regex named_index(R"(Func (\w+) = pipeline\.get_func\((\d+)\);)");
    int checked = 0;
    for (std::sregex_iterator it(source.begin(), source.end(), named_index), end; it != end; ++it, ++checked) {
        const std::string expected = (*it)[1];
        const std::string found = const_cast<Halide::Pipeline &>(pipeline).get_func(std::stoi((*it)[2])).name();
        if (found != expected) {
            throw std::runtime_error(std::string(HATTN_TUNED_NAME) + ": the schedule's Func " + (*it)[2].str() +
                                     " is " + expected + ", the pipeline's is " + found +
                                     ": the generator changed since " HATTN_TUNED_SCHEDULE
                                     " was written. The pipeline's Funcs: " + pipeline_order(pipeline));
        }
    }
    if (checked == 0) throw std::runtime_error(HATTN_TUNED_NAME ": no Funcs found in " HATTN_TUNED_SCHEDULE);
}

struct RegisterTunedSchedule {
    RegisterTunedSchedule() {
        Halide::Pipeline::add_autoscheduler(
            HATTN_TUNED_NAME, [](const Halide::Pipeline &pipeline, const Halide::Target &target,
                                 const Halide::MachineParams &, Halide::AutoSchedulerResults *results) {
                check_schedule_matches(pipeline);
                HATTN_CAT(apply_schedule_, HATTN_TUNED_KERNEL)(pipeline, target);
                results->scheduler_name = HATTN_TUNED_NAME;
            });
    }
} register_tuned_schedule;

}  // namespace
