#include "tests/testing/fd_leak_checker.h"

#include <dirent.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

#include <gtest/gtest.h>

namespace stockade::testing {

std::set<int> open_fds() {
    std::set<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return fds;
    }
    int self = ::dirfd(dir);
    while (dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        int fd = std::atoi(entry->d_name);
        if (fd != self) {
            fds.insert(fd);
        }
    }
    ::closedir(dir);
    return fds;
}

std::string describe_fd(int fd) {
    std::array<char, 512> target{};
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
    return std::to_string(fd) + " -> " +
           (n > 0 ? std::string(target.data(), static_cast<size_t>(n)) : "?");
}

FdLeakChecker::FdLeakChecker() : before_(open_fds()) {}

FdLeakChecker::~FdLeakChecker() {
    for (int fd : open_fds()) {
        if (before_.count(fd) == 0) {
            ADD_FAILURE() << "descriptor leaked: " << describe_fd(fd);
        }
    }
}

}  // namespace stockade::testing
