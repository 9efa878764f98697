# The package as an application meets it (ctest -L package): installs the build into a fresh
# prefix, configures examples/ against it with find_package(hattn), builds the examples and runs
# them. Arguments: -DBUILD_DIR, -DSOURCE_DIR, -DWORK_DIR, -DGENERATOR.
file(REMOVE_RECURSE "${WORK_DIR}")

function(step what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if (NOT status EQUAL 0)
        message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
    endif ()
    message(STATUS "${what}: ok")
    set(output "${out}" PARENT_SCOPE)
endfunction()

step("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
# An application builds without Halide or nlohmann-json: no installed header may include theirs.
file(GLOB_RECURSE headers "${WORK_DIR}/prefix/include/hattn/*.h")
foreach (header IN LISTS headers)
    file(STRINGS "${header}" foreign_includes REGEX "#[ \t]*include[ \t]*[<\"](Halide|nlohmann)")
    if (foreign_includes)
        message(FATAL_ERROR "${header} includes a dependency's header: ${foreign_includes}")
    endif ()
endforeach ()
message(STATUS "no installed header includes Halide's or nlohmann's")
# Nothing of the build tree may leak in: the examples see only the install prefix.
step("configure the examples" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples" -B "${WORK_DIR}/examples"
     -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
step("build the examples" "${CMAKE_COMMAND}" --build "${WORK_DIR}/examples")
file(GLOB example_sources "${SOURCE_DIR}/examples/*.cpp")  # each is an application
foreach (source IN LISTS example_sources)
    get_filename_component(example "${source}" NAME_WE)
    step("run ${example}" "${WORK_DIR}/examples/${example}")
    message(STATUS "${output}")
endforeach ()
