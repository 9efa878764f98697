#include "hattn/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hattn/error.h"
#include "input_bytes.h"

namespace hattn {

namespace {

void require_regular(const std::string &path, const struct stat &st) {
    require(!S_ISDIR(st.st_mode), [&] { return path + ": is a directory"; });
    require(S_ISREG(st.st_mode), [&] {
        const char *what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
        return path + ": not a regular file (" + what + ")";
    });
}

}  // namespace

void require_regular_file(const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        const int error = errno;
        struct stat link;
        const bool dangling = error == ENOENT && ::lstat(path.c_str(), &link) == 0;
        throw Error(path + ": cannot open: " +
                    (dangling ? "a link to a missing file" : error == ENOENT ? "file not found" : std::strerror(error)));
    }
    require_regular(path, st);
}

std::string detail::read_input_file(const std::string &path) {
    require_regular_file(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    std::string bytes;
    try {
        require(::fstat(fd, &st) == 0, [&] { return path + ": cannot read: " + std::strerror(errno); });
        require_regular(path, st);
        bytes.resize(static_cast<size_t>(st.st_size));
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            require(n >= 0, [&] { return path + ": cannot read: " + std::strerror(errno); });
            if (n == 0) break;  // shorter than it was: what is there
            done += static_cast<size_t>(n);
        }
        bytes.resize(done);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    return bytes;
}

}  // namespace hattn
