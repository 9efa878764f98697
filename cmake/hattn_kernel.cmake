# hattn_kernel(NAME GENERATOR gen [PARAMS k=v ...])
#
# Declares one kernel and builds every variant of it from the generator `gen`:
#   hattn_<NAME>_x86       multi-target x86-64 library (HATTN_X86_TARGETS), linked on x86 hosts
#   hattn_<NAME>_x86_auto  Adams2019-autoscheduled, one AVX-512 target, linked on x86 hosts
#   hattn_<NAME>_arm_<v>   one library per AArch64 variant, with assembly beside it
#   hattn_<NAME>_cuda      CUDA, with assembly (the PTX is embedded there) and the stmt beside it
# Each library's function has the library's name. Variants share one runtime per family
# (hattn_halide_runtime_<family>, see hattn_add_runtimes).
include_guard(GLOBAL)

option(HATTN_BUILD_CUDA "Generate the CUDA variant of every kernel" ON)
# Adams2019 beam width for the autoscheduled variants: 1 keeps the normal build fast; a tuning run
# (scripts/tune) raises it.
set(HATTN_BEAM_SIZE 1 CACHE STRING "HL_BEAM_SIZE for autoscheduled kernels")

function(_hattn_family_runtime FAMILY OUT)
    set(${OUT} hattn_halide_runtime_${FAMILY} PARENT_SCOPE)
endfunction()

# Builds the standalone Halide runtime of one family. The object is compiled for the family's
# baseline target rather than the union of its kernels' targets.
function(_hattn_add_runtime FAMILY)
    _hattn_family_runtime(${FAMILY} rt)
    set(target "${HATTN_RUNTIME_TARGET_${FAMILY}}")
    set(cross FALSE)
    if (FAMILY STREQUAL "arm" AND NOT HATTN_TARGET_IS_ARM)
        set(cross TRUE)
    elseif (NOT FAMILY STREQUAL "arm" AND HATTN_TARGET_IS_ARM)
        set(cross TRUE)
    endif ()
    if (cross)
        set(out "${CMAKE_CURRENT_BINARY_DIR}/${rt}.a")
        set(emit static_library)
    else ()
        set(out "${CMAKE_CURRENT_BINARY_DIR}/${rt}.o")
        set(emit object)
    endif ()
    add_custom_command(OUTPUT "${out}"
                       COMMAND hattn::halide_generators::hattn_generators
                               -r ${rt} -o . -e ${emit} target=${target}
                       DEPENDS hattn::halide_generators::hattn_generators
                       VERBATIM)
    if (cross)
        add_custom_target(${rt}.update ALL DEPENDS "${out}")
        add_library(${rt} STATIC IMPORTED GLOBAL)
        set_target_properties(${rt} PROPERTIES IMPORTED_LOCATION "${out}")
        add_dependencies(${rt} ${rt}.update)
    else ()
        add_library(${rt} STATIC "${out}")
        set_target_properties(${rt} PROPERTIES LINKER_LANGUAGE CXX)
    endif ()
    target_link_libraries(${rt} INTERFACE Halide::Runtime Threads::Threads ${CMAKE_DL_LIBS})
endfunction()

function(hattn_add_runtimes)
    if (HATTN_TARGET_IS_ARM)
        _hattn_add_runtime(arm)
    else ()
        _hattn_add_runtime(x86)
        _hattn_add_runtime(arm)
        if (HATTN_BUILD_CUDA)
            _hattn_add_runtime(cuda)
        endif ()
    endif ()
endfunction()

# Records a built variant for the kernel table that `hattn info` prints.
function(_hattn_record_variant KERNEL FUNCTION FAMILY TARGETS)
    string(REPLACE ";" "," targets "${TARGETS}")
    set_property(GLOBAL APPEND PROPERTY HATTN_VARIANTS "${KERNEL}|${FUNCTION}|${FAMILY}|${targets}")
endfunction()

function(hattn_kernel NAME)
    cmake_parse_arguments(ARG "" "GENERATOR" "PARAMS" ${ARGN})
    if (NOT ARG_GENERATOR)
        set(ARG_GENERATOR ${NAME})
    endif ()
    set(common FROM hattn_generators GENERATOR ${ARG_GENERATOR} FEATURES ${HATTN_FEATURES}
               PARAMS ${ARG_PARAMS})
    set(libs "")

    if (NOT HATTN_TARGET_IS_ARM)
        set(lib hattn_${NAME}_x86)
        add_halide_library(${lib} ${common} TARGETS ${HATTN_X86_TARGETS}
                           USE_RUNTIME hattn_halide_runtime_x86)
        _hattn_record_variant(${NAME} ${lib} x86 "${HATTN_X86_TARGETS}")
        list(APPEND libs ${lib})

        set(lib hattn_${NAME}_x86_auto)
        add_halide_library(${lib} ${common} TARGETS ${HATTN_X86_AUTOSCHEDULE_TARGET}
                           AUTOSCHEDULER Halide::Adams2019
                           USE_RUNTIME hattn_halide_runtime_x86)
        _hattn_record_variant(${NAME} ${lib} x86_auto "${HATTN_X86_AUTOSCHEDULE_TARGET}")
        list(APPEND libs ${lib})
    endif ()

    foreach (variant IN LISTS HATTN_ARM_VARIANTS)
        set(lib hattn_${NAME}_arm_${variant})
        add_halide_library(${lib} ${common} TARGETS ${HATTN_ARM_TARGET_${variant}}
                           ASSEMBLY asm USE_RUNTIME hattn_halide_runtime_arm)
        set_property(GLOBAL APPEND PROPERTY HATTN_ARM_ASSEMBLY "${CMAKE_CURRENT_BINARY_DIR}/${asm}")
        if (HATTN_TARGET_IS_ARM)
            _hattn_record_variant(${NAME} ${lib} arm_${variant} "${HATTN_ARM_TARGET_${variant}}")
            list(APPEND libs ${lib})
        endif ()
    endforeach ()

    if (HATTN_BUILD_CUDA AND NOT HATTN_TARGET_IS_ARM)
        # Compile-only until the CUDA runtime path exists: the library is built, not linked.
        add_halide_library(hattn_${NAME}_cuda ${common} TARGETS ${HATTN_CUDA_TARGET}
                           ASSEMBLY asm STMT stmt USE_RUNTIME hattn_halide_runtime_cuda)
        set_property(GLOBAL APPEND PROPERTY HATTN_CUDA_ASSEMBLY "${CMAKE_CURRENT_BINARY_DIR}/${asm}")
    endif ()

    add_library(hattn_kernel_${NAME} INTERFACE)
    target_link_libraries(hattn_kernel_${NAME} INTERFACE ${libs})
    set_property(GLOBAL APPEND PROPERTY HATTN_KERNEL_LIBRARIES hattn_kernel_${NAME})
endfunction()
