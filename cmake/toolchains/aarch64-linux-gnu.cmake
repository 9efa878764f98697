# Cross build for AArch64 Linux with Debian's g++-aarch64-linux-gnu; tests run under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Header-only and script packages (nlohmann_json, HalideHelpers) live in the host's tree.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# The CPU model comes from QEMU_CPU in the environment (the default is max, which has dotprod).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)

# Halide's CMake scripts and headers are architecture-independent; use the host's installation.
set(HalideHelpers_DIR /usr/lib/x86_64-linux-gnu/cmake/HalideHelpers14)
