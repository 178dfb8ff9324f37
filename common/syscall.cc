#include "common/syscall.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

namespace stockade {

Result<UniqueFd> open_path(const std::string& path, int flags, mode_t mode) {
    int fd = retry_eintr([&] { return ::open(path.c_str(), flags | O_CLOEXEC, mode); });
    if (fd < 0) {
        return errno_error(fmt::format("open \"{}\"", path), errno);
    }
    return UniqueFd(fd);
}

Result<std::string> read_all(int fd, size_t max_bytes) {
    std::string out;
    char buf[8192];
    while (out.size() < max_bytes) {
        ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
        if (n < 0) {
            return errno_error("read", errno);
        }
        if (n == 0) {
            return out;
        }
        out.append(buf, static_cast<size_t>(n));
    }
    return Error{Errc::kResourceExhausted, fmt::format("more than {} bytes", max_bytes)};
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
    ASSIGN_OR_RETURN(UniqueFd fd, open_path(path, O_RDONLY));
    auto content = read_all(fd.get(), max_bytes);
    if (!content) {
        return content.error().wrap(fmt::format("read \"{}\"", path));
    }
    return content;
}

Status write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = retry_eintr([&] { return ::write(fd, data.data(), data.size()); });
        if (n < 0) {
            return errno_error("write", errno);
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return {};
}

Status write_file(const std::string& path, std::string_view content) {
    ASSIGN_OR_RETURN(UniqueFd fd, open_path(path, O_WRONLY));
    if (auto st = write_all(fd.get(), content); !st) {
        return st.error().wrap(fmt::format("write \"{}\"", path));
    }
    return {};
}

Result<FdPair> make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        return errno_error("pipe2", errno);
    }
    return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<FdPair> make_socketpair(int type) {
    int fds[2];
    if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0) {
        return errno_error("socketpair", errno);
    }
    return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool path_exists(const std::string& path) noexcept {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

bool privileged_caller() noexcept {
    if (::geteuid() != 0) {
        return false;
    }
    __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capget, &header, data) != 0) {
        return false;
    }
    return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

Status make_dirs(const std::string& path, mode_t mode) {
    if (path.empty()) {
        return {};
    }
    for (size_t pos = 1; pos != std::string::npos;) {
        pos = path.find('/', pos + 1);
        std::string prefix = path.substr(0, pos);
        if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
            return errno_error(fmt::format("mkdir \"{}\"", prefix), errno);
        }
    }
    return {};
}

}  // namespace stockade
