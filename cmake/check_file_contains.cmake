# cmake -DFILE=path -DPATTERN=regex -P check_file_contains.cmake
# Fails unless FILE exists and a line of it matches PATTERN; used to check generated assembly.
if (NOT EXISTS "${FILE}")
    message(FATAL_ERROR "${FILE} does not exist")
endif ()
file(STRINGS "${FILE}" matches REGEX "${PATTERN}" LIMIT_COUNT 1)
if (NOT matches)
    message(FATAL_ERROR "${FILE} has no line matching '${PATTERN}'")
endif ()
message(STATUS "${FILE}: ${matches}")
