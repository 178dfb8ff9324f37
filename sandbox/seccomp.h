// The seccomp baseline (DESIGN.md §4), compiled by libseccomp in the supervisor before clone
// into a classic BPF program, so that the child only has to hand it to the kernel.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"

namespace stockade::sandbox {

struct SeccompOptions {
    // Network mode none: socket() of families other than AF_UNIX, AF_INET and AF_INET6 fails
    // with EAFNOSUPPORT (loopback in the empty network namespace keeps working).
    bool restrict_socket_families = true;
    // No network namespace to confine them (isolation level landlock, network none): socket()
    // fails for every family; socketpair() still works.
    bool deny_all_sockets = false;
};

// A compiled filter. Architecture checked (other architectures, x32 included, are killed:
// fail closed); denied syscalls fail with EPERM, clone3 with ENOSYS so that libc falls back to
// clone(2), whose flags the filter can inspect.
class SeccompProgram {
public:
    SeccompProgram() = default;
    explicit SeccompProgram(std::vector<sock_filter> filter) : filter_(std::move(filter)) {}

    // The program to install; valid while this object lives and is not moved.
    [[nodiscard]] sock_fprog fprog() const noexcept {
        return sock_fprog{static_cast<unsigned short>(filter_.size()),
                          const_cast<sock_filter*>(filter_.data())};  // NOLINT
    }
    [[nodiscard]] size_t size() const noexcept { return filter_.size(); }

private:
    std::vector<sock_filter> filter_;
};

Result<SeccompProgram> build_seccomp_program(const SeccompOptions& options);

// Child zone (async-signal-safe): installs the program on the calling thread, with
// SECCOMP_FILTER_FLAG_TSYNC not needed (the child is single-threaded). Requires no_new_privs.
// Returns 0 or an errno.
int install_seccomp_program(const sock_fprog& prog) noexcept;

// The syscall names the baseline denies with EPERM whatever the arguments, for docs, doctor and
// the bench's bwrap filter. Not listed: clone3 (ENOSYS, see above) and the syscalls filtered
// on an argument (clone's namespace flags, ioctl TIOCSTI/TIOCLINUX, personality other than
// the defaults, socket families). Names this architecture lacks are listed but not compiled in.
std::vector<const char*> seccomp_denied_syscalls();

}  // namespace stockade::sandbox
