// What the harnesses share: the loaders take file paths, so each input is written to a file in a
// folder of this process's own (under /dev/shm where it exists: no disk I/O per input), made on
// first use and removed at exit. HATTN_FUZZ_TMPDIR, where set, is the folder to make it in
// (scripts/fuzz-campaign points it into its work folder, so that a crashed process's folder is
// found and removed).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace fuzz {

// A harness's own setup failing is no finding in the code under test: say why and stop.
[[noreturn]] inline void die(const std::string &why) {
    std::fprintf(stderr, "fuzz harness setup: %s\n", why.c_str());
    std::abort();
}

inline const std::string &temp_dir() {
    static const std::string dir = [] {
        const char *base = std::getenv("HATTN_FUZZ_TMPDIR");
        std::string parent = base && *base ? base : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        std::string name = parent + "/hattn-fuzz-" + std::to_string(::getpid()) + "-XXXXXX";
        if (::mkdtemp(name.data()) == nullptr) die("cannot make a folder in " + parent);
        return name;
    }();
    static const bool cleanup = [] {
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(temp_dir(), ec);
        });
        return true;
    }();
    (void)cleanup;
    return dir;
}

inline std::string temp_path(const std::string &name) { return temp_dir() + "/" + name; }

// A new folder `name` in temp_dir(); its path.
inline std::string make_dir(const std::string &name) {
    const std::string path = temp_path(name);
    if (::mkdir(path.c_str(), 0700) != 0) die("cannot make " + path);
    return path;
}

// Replaces the file at `path` with the bytes given.
inline void write_file(const std::string &path, const uint8_t *data, size_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) die("cannot write " + path);
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n <= 0) die("cannot write " + path);
        data += n;
        size -= size_t(n);
    }
    ::close(fd);
}

// With HATTN_FUZZ_VERBOSE=1, what each reader made of an input (run a harness on one file to see
// how far it gets): message() is called and printed only then, so fuzzing pays nothing for it.
template <typename Message>
void note(Message &&message) {
    static const bool verbose = [] {
        const char *v = std::getenv("HATTN_FUZZ_VERBOSE");
        return v && *v && std::string(v) != "0";
    }();
    if (verbose) std::fprintf(stderr, "%s\n", std::string(message()).c_str());
}

// The golden cases (HATTN_GOLDEN_DIR in the environment wins, as for the tests).
inline std::string golden_dir() {
    const char *dir = std::getenv("HATTN_GOLDEN_DIR");
    return dir && *dir ? dir : HATTN_DEFAULT_GOLDEN_DIR;
}

// Copies golden/<relative> to `to` (a fixed file the harness's inputs sit beside).
inline void copy_golden(const std::string &relative, const std::string &to) {
    const std::string from = golden_dir() + "/" + relative;
    std::error_code ec;
    std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) die("cannot copy " + from + " to " + to + ": " + ec.message() + " (set HATTN_GOLDEN_DIR)");
}

}  // namespace fuzz
