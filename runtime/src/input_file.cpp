#include "hattn/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "hattn/error.h"

namespace hattn {

void require_regular_file(const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        const int error = errno;
        struct stat link;
        const bool dangling = error == ENOENT && ::lstat(path.c_str(), &link) == 0;
        throw Error(path + ": cannot open: " +
                    (dangling ? "a link to a missing file" : error == ENOENT ? "file not found" : std::strerror(error)));
    }
    require(!S_ISDIR(st.st_mode), [&] { return path + ": is a directory"; });
    require(S_ISREG(st.st_mode), [&] {
        const char *what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
        return path + ": not a regular file (" + what + ")";
    });
}

}  // namespace hattn
