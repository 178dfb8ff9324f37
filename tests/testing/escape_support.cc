#include "tests/testing/escape_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>
#include <netinet/in.h>

namespace stockade::testing {

Listener::Listener(int domain, const sockaddr* addr, socklen_t len) {
    fd_ = ::socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && (::bind(fd_, addr, len) != 0 || ::listen(fd_, 8) != 0)) {
        (void)::close(fd_);
        fd_ = -1;
    }
}

Listener::~Listener() {
    if (fd_ >= 0) {
        (void)::close(fd_);
    }
}

int Listener::port() const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return 0;
    }
    if (addr.ss_family == AF_INET) {
        return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    }
    if (addr.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    }
    return 0;
}

bool Listener::connected() const {
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn >= 0) {
        (void)::close(conn);
        return true;
    }
    return false;
}

std::unique_ptr<Listener> tcp_loopback_listener(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return std::make_unique<Listener>(AF_INET, reinterpret_cast<const sockaddr*>(&addr),
                                      sizeof addr);
}

std::string unique_suffix() {
    return std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

void expect_absent_on_host(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        ADD_FAILURE() << path << " was created on the host";
        (void)::unlink(path.c_str());
    }
}

void expect_not_setid_root(const std::string& path, const std::string& who) {
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
    const bool setuid_root = (st.st_mode & S_ISUID) != 0 && st.st_uid == 0;
    const bool setgid_root = (st.st_mode & S_ISGID) != 0 && st.st_gid == 0;
    (void)::chmod(path.c_str(), 0700);  // defuse it at once, whatever the outcome
    EXPECT_FALSE(setuid_root || setgid_root)
        << "FAIL (sandbox bug): " << who << " made " << path << " mode " << std::oct
        << (st.st_mode & 07777) << std::dec << " owned by " << st.st_uid << ":" << st.st_gid
        << " on the host";
}

}  // namespace stockade::testing
