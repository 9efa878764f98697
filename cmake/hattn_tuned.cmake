# The schedules scripts/tune committed: schedules/autotuned/<kernel>.schedule.h, each applied by a
# small autoscheduler plugin (schedules/autotuned/tuned_scheduler.cpp) named hattn::tuned_<kernel>.
include_guard(GLOBAL)

# Adding or removing a schedule changes the folder, which makes CMake configure again.
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/schedules/autotuned")

# Sets OUT to the autoscheduler that applies KERNEL's tuned schedule, or "" if it has none.
function(hattn_tuned_autoscheduler KERNEL OUT)
    set(${OUT} "" PARENT_SCOPE)
    set(header "${PROJECT_SOURCE_DIR}/schedules/autotuned/${KERNEL}.schedule.h")
    if (NOT EXISTS "${header}")
        return()
    endif ()
    set(plugin hattn_tuned_${KERNEL})
    if (NOT HATTN_PREBUILT_KERNELS AND NOT TARGET ${plugin})
        add_library(${plugin} MODULE "${PROJECT_SOURCE_DIR}/schedules/autotuned/tuned_scheduler.cpp")
        target_include_directories(${plugin} PRIVATE "${PROJECT_SOURCE_DIR}")
        target_compile_definitions(${plugin} PRIVATE HATTN_TUNED_KERNEL=${KERNEL}
                                   "HATTN_TUNED_SCHEDULE=\"${header}\"" "HATTN_TUNED_NAME=\"tuned_${KERNEL}\"")
        target_link_libraries(${plugin} PRIVATE Halide::Halide)
        # add_halide_library takes the scheduler's name from the part after `::`.
        add_library(hattn::tuned_${KERNEL} ALIAS ${plugin})
    endif ()
    set(${OUT} hattn::tuned_${KERNEL} PARENT_SCOPE)
endfunction()
