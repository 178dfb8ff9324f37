#include "tests/testing/refusals.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

namespace stockade::testing {
namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "deny_user_namespaces: add this architecture's AUDIT_ARCH"
#endif

constexpr unsigned kArchOffset = offsetof(seccomp_data, arch);
constexpr unsigned kNrOffset = offsetof(seccomp_data, nr);
// The low 32 bits of the first argument (little-endian), where clone and unshare take flags.
constexpr unsigned kArg0Offset = offsetof(seccomp_data, args);

constexpr unsigned kAllow = SECCOMP_RET_ALLOW;
constexpr unsigned kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr unsigned kEnosys = SECCOMP_RET_ERRNO | ENOSYS;

// clang-format off
sock_filter kProgram[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArchOffset),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kAllow),                        // another ABI: not ours to judge
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, kEnosys),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kAllow),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Offset),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, kEperm),
    BPF_STMT(BPF_RET | BPF_K, kAllow),
};

sock_filter kNoSethostname[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArchOffset),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kAllow),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sethostname, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, kEperm),
    BPF_STMT(BPF_RET | BPF_K, kAllow),
};
// clang-format on

template <size_t N>
int install(sock_filter (&program)[N]) noexcept {
    sock_fprog prog{.len = static_cast<unsigned short>(N), .filter = program};
    // SAFETY: prctl is a plain syscall; the program is static, nothing is allocated.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        return errno;
    }
    return 0;
}

}  // namespace

int deny_user_namespaces() noexcept {
    return install(kProgram);
}

int deny_sethostname() noexcept {
    return install(kNoSethostname);
}

int mask_with_dev_null(const char* path) noexcept {
    // SAFETY: unshare/mount are plain syscalls.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("/dev/null", path, nullptr, MS_BIND, nullptr) != 0) {
        return errno;
    }
    return 0;
}

}  // namespace stockade::testing
