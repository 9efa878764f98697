#include "whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <streambuf>
#include <vector>

#include "hattn/error.h"

namespace hattn::detail {

namespace fs = std::filesystem;

namespace {

// An output stream's bytes into a file descriptor (the temporary's, so that nothing reopens it by name).
class FdBuffer : public std::streambuf {
public:
    explicit FdBuffer(int fd) : fd_(fd), buffer_(1 << 16) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

    // The system's errno of the first failed write, or 0.
    int error() const { return error_; }

protected:
    int_type overflow(int_type c) override {
        if (!drain()) return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }
    int sync() override { return drain() ? 0 : -1; }

private:
    bool drain() {
        const char *next = pbase();
        while (next < pptr() && error_ == 0) {
            const ssize_t n = ::write(fd_, next, size_t(pptr() - next));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) error_ = n < 0 ? errno : EIO;
            if (n > 0) next += n;
        }
        setp(buffer_.data(), buffer_.data() + buffer_.size());
        return error_ == 0;
    }

    int fd_;
    int error_ = 0;
    std::vector<char> buffer_;
};

// The process's umask, read without changing it (umask() would, for every thread at once).
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("Umask:", 0) == 0) return mode_t(std::strtoul(line.c_str() + 6, nullptr, 8));
    }
    return 022;
}

void write_directly(const std::string &path, const std::function<void(std::ostream &)> &write) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out.is_open()) throw Error(path + ": cannot create: " + std::strerror(errno));
    write(out);
    out.close();
    const int write_error = errno;
    if (!out) throw Error(path + ": write failed: " + std::strerror(write_error), Error::Kind::Internal);
}

}  // namespace

void write_whole_file(const std::string &path, const std::function<void(std::ostream &)> &write) {
    require(!path.empty(), "an output file's path is empty");
    struct stat old;
    const bool exists = ::stat(path.c_str(), &old) == 0;
    if (exists && !S_ISREG(old.st_mode)) return write_directly(path, write);

    const fs::path target(path);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string temporary = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(temporary.data());  // O_CREAT | O_EXCL, mode 0600
    if (fd < 0) throw Error(path + ": cannot create a temporary beside it: " + std::strerror(errno));
    const mode_t mode = exists ? old.st_mode & 07777 : 0666 & ~current_umask();
    FdBuffer buffer(fd);
    std::ostream out(&buffer);
    int error = 0;
    try {
        write(out);
        out.flush();
        error = buffer.error();
        if (error == 0 && ::fchmod(fd, mode) != 0) error = errno;
    } catch (...) {
        ::close(fd);
        ::unlink(temporary.c_str());
        throw;
    }
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error != 0) {
        ::unlink(temporary.c_str());
        throw Error(path + ": write failed: " + std::strerror(error), Error::Kind::Internal);
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const int why = errno;
        ::unlink(temporary.c_str());
        throw Error(path + ": cannot replace: " + std::strerror(why));
    }
}

}  // namespace hattn::detail
