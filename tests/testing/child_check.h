// Runs checks in a forked child and reports its failures to the parent test: for tests that
// change the calling process irreversibly (seccomp filters, Landlock domains).
#pragma once

#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace stockade::testing {

// "EPERM", or "success" for 0.
inline const char* err_name(int err) {
    if (err == 0) {
        return "success";
    }
    const char* name = strerrorname_np(err);
    return name != nullptr ? name : "unknown errno";
}

class ChildReport {
public:
    explicit ChildReport(int fd) : fd_(fd) {}

    template <class... Args>
    void fail(fmt::format_string<Args...> format, Args&&... args) {
        std::string line = fmt::format(format, std::forward<Args>(args)...) + "\n";
        [[maybe_unused]] ssize_t written = ::write(fd_, line.data(), line.size());
        ++failures_;
    }

    // Calls `call` and expects -1 with errno `want`.
    template <class F>
    void expect_errno(const char* what, F call, int want) {
        errno = 0;
        long rc = static_cast<long>(call());
        int err = errno;
        if (rc != -1 || err != want) {
            fail("{}: rc={} errno={}, want {}", what, rc, err_name(err), err_name(want));
        }
    }

    // Calls `call` and expects it not to fail; returns its result.
    template <class F>
    long expect_ok(const char* what, F call) {
        errno = 0;
        long rc = static_cast<long>(call());
        if (rc == -1) {
            fail("{}: failed with {}", what, err_name(errno));
        }
        return rc;
    }

    // Opens `path` and expects `want_errno` (0: success; the descriptor is closed).
    void expect_open(const std::string& path, int flags, int want_errno) {
        int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
        int err = fd < 0 ? errno : 0;
        if (fd >= 0) {
            (void)::close(fd);
        }
        if (err != want_errno) {
            fail("open \"{}\" flags=0{:o}: {}, want {}", path.c_str(), flags, err_name(err),
                 err_name(want_errno));
        }
    }

    void expect_rc(const char* what, int rc, int want_errno) {
        int err = rc < 0 ? errno : 0;
        if (err != want_errno) {
            fail("{}: {}, want {}", what, err_name(err), err_name(want_errno));
        }
    }

    [[nodiscard]] int failures() const { return failures_; }

private:
    int fd_;
    int failures_ = 0;
};

struct ChildOutcome {
    int status = 0;
    std::string report;
};

// Forks a child (no core dump, a 20 s alarm) that runs `body`; exits 0 when nothing failed.
inline ChildOutcome run_in_child(const std::function<void(ChildReport&)>& body) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
        ADD_FAILURE() << "pipe2: " << err_name(errno);
        return {};
    }
    pid_t pid = ::fork();
    if (pid == 0) {
        (void)::close(fds[0]);
        const rlimit no_core{0, 0};
        (void)::setrlimit(RLIMIT_CORE, &no_core);
        (void)::alarm(20);
        ChildReport report(fds[1]);
        body(report);
        ::_exit(report.failures() == 0 ? 0 : 1);
    }
    (void)::close(fds[1]);
    ChildOutcome outcome;
    std::array<char, 4096> buf{};
    ssize_t n = 0;
    while ((n = ::read(fds[0], buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) {
            outcome.report.append(buf.data(), static_cast<size_t>(n));
        }
    }
    (void)::close(fds[0]);
    if (pid < 0) {
        ADD_FAILURE() << "fork: " << err_name(errno);
        return outcome;
    }
    while (::waitpid(pid, &outcome.status, 0) < 0 && errno == EINTR) {
    }
    return outcome;
}

}  // namespace stockade::testing
