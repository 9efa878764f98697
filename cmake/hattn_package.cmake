# The installed package: `find_package(hattn)` gives hattn::hattn, one shared library (libhattn.so)
# holding the runtime, every kernel variant this build has and their Halide runtimes, beside the
# public headers and the `hattn` CLI. The library exports the hattn namespace only
# (runtime/hattn.map): the Halide runtime inside stays private, so an application that uses Halide
# itself keeps its own. In-tree code and the tests link the static hattn::runtime instead.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The static library's objects, not a second compile of its sources; linking hattn_runtime brings
# its kernels and Halide runtimes (the objects already define everything the archive would).
add_library(hattn_shared SHARED $<TARGET_OBJECTS:hattn_runtime>)
add_library(hattn::hattn ALIAS hattn_shared)
set_target_properties(hattn_shared PROPERTIES OUTPUT_NAME hattn EXPORT_NAME hattn
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      LINK_DEPENDS "${PROJECT_SOURCE_DIR}/runtime/hattn.map")
# The public headers include no header of Halide's or nlohmann's: an application needs neither.
target_link_libraries(hattn_shared PRIVATE hattn_runtime)
target_link_options(hattn_shared PRIVATE "LINKER:--version-script=${PROJECT_SOURCE_DIR}/runtime/hattn.map")
target_include_directories(hattn_shared INTERFACE
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS hattn_shared EXPORT hattnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/hattn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hattn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # the CLI

set(hattn_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hattn)
install(EXPORT hattnTargets NAMESPACE hattn:: DESTINATION ${hattn_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hattnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/hattnConfig.cmake INSTALL_DESTINATION ${hattn_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hattnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hattnConfig.cmake ${PROJECT_BINARY_DIR}/hattnConfigVersion.cmake
        DESTINATION ${hattn_cmake_dir})
