#include "sandbox/landlock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace stockade::sandbox {
namespace {

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// struct landlock_ruleset_attr as of ABI 6; linux-libc-dev 6.1 has the first field only.
// The kernel reads the size it is given and requires any bytes it does not know to be zero.
struct RulesetAttr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;  // ABI 4; not handled: the network namespace does that
    uint64_t scoped;              // ABI 6
};

constexpr uint64_t kAbi1Access =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
    LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM;

// /dev: read and write devices (null, tty, pts...), list it, and ioctl on ttys. TIOCSTI is
// denied by seccomp regardless.
constexpr uint64_t kDevAccess = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_IOCTL_DEV;

// Child zone helpers below: no allocation, errno read right after each call.

long create_ruleset(const RulesetAttr* attr, size_t size, uint32_t flags) noexcept {
    return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

// Adds one path-beneath rule. Returns 0, or an errno.
int add_path_rule(int ruleset_fd, const LandlockRule& rule, uint64_t handled) noexcept {
    // SAFETY: open/fstat/close/landlock_add_rule are syscalls; c_str() does not allocate.
    int fd = rule.fd >= 0 ? rule.fd : ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT && rule.optional ? 0 : errno;
    }
    int err = 0;
    struct stat st {};
    if (::fstat(fd, &st) < 0) {
        err = errno;
    } else {
        uint64_t access = rule.access & handled;
        if (!S_ISDIR(st.st_mode)) {
            access &= kLandlockFileAccess;
        }
        // An empty access mask is refused (ENOMSG); such a rule grants nothing anyway.
        if (access != 0) {
            const landlock_path_beneath_attr attr{.allowed_access = access, .parent_fd = fd};
            long rc =
                ::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
            err = rc < 0 ? errno : 0;
        }
    }
    if (fd != rule.fd) {
        (void)::close(fd);
    }
    return err;
}

}  // namespace

uint64_t landlock_fs_access(int abi) noexcept {
    uint64_t access = 0;
    if (abi >= 1) {
        access |= kAbi1Access;
    }
    if (abi >= 2) {
        access |= LANDLOCK_ACCESS_FS_REFER;
    }
    if (abi >= 3) {
        access |= LANDLOCK_ACCESS_FS_TRUNCATE;
    }
    if (abi >= 5) {
        access |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    }
    return access;
}

LandlockSupport probe_landlock() noexcept {
    long abi = create_ruleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 0) {
        // ENOSYS: not built into the kernel; EOPNOTSUPP: built but not enabled (lsm=).
        return LandlockSupport{.abi = 0, .sys_errno = errno};
    }
    return LandlockSupport{.abi = static_cast<int>(abi), .sys_errno = 0};
}

LandlockPlan make_landlock_plan(int abi, const LandlockPaths& paths) {
    LandlockPlan plan;
    if (abi <= 0) {
        return plan;
    }
    plan.abi = abi;
    plan.handled_fs = landlock_fs_access(abi);
    plan.scoped = abi >= 6 ? LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL : 0;

    auto add = [&plan](const std::string& path, uint64_t access, bool optional) {
        plan.rules.push_back(
            LandlockRule{.path = path, .access = access & plan.handled_fs, .optional = optional});
    };
    if (paths.readable.empty()) {
        add("/", kLandlockReadAccess, false);
    }
    for (const std::string& path : paths.readable) {
        add(path, kLandlockReadAccess, true);
    }
    add("/dev", kDevAccess, true);
    add("/proc", kLandlockReadAccess, true);
    for (const std::string& path : paths.writable) {
        add(path, plan.handled_fs, false);
    }
    return plan;
}

int apply_landlock(const LandlockPlan& plan, int* failed_rule) noexcept {
    if (failed_rule != nullptr) {
        *failed_rule = -1;
    }
    if (plan.abi <= 0) {
        return 0;
    }
    const RulesetAttr attr{
        .handled_access_fs = plan.handled_fs, .handled_access_net = 0, .scoped = plan.scoped};
    // Hand an older kernel only the fields it knows.
    const size_t size = plan.scoped != 0 ? sizeof(attr) : offsetof(RulesetAttr, handled_access_net);
    // SAFETY: landlock_create_ruleset/restrict_self and close are syscalls.
    long ruleset = create_ruleset(&attr, size, 0);
    if (ruleset < 0) {
        return errno;
    }
    const int ruleset_fd = static_cast<int>(ruleset);
    int err = 0;
    for (size_t i = 0; i < plan.rules.size(); ++i) {
        err = add_path_rule(ruleset_fd, plan.rules[i], plan.handled_fs);
        if (err != 0) {
            if (failed_rule != nullptr) {
                *failed_rule = static_cast<int>(i);
            }
            break;
        }
    }
    if (err == 0 && plan.exec_fd >= 0) {
        const landlock_path_beneath_attr binary{
            .allowed_access =
                (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE) & plan.handled_fs,
            .parent_fd = plan.exec_fd};
        // EBADFD: the binary is on a mount internal to the kernel (a memfd's). Landlock takes no
        // rule for such a file and needs none: it does not restrict files that come from no
        // user-visible filesystem (Documentation/userspace-api/landlock.rst, "Special
        // filesystems"; checked: a memfd executes under a ruleset that handles EXECUTE and
        // allows it nowhere). Any other error fails the launch.
        const long added =
            ::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &binary, 0);
        if (added < 0 && errno != EBADFD) {
            err = errno;
            if (failed_rule != nullptr) {
                *failed_rule = static_cast<int>(plan.rules.size());
            }
        }
    }
    if (err == 0 && ::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0) {
        err = errno;
    }
    (void)::close(ruleset_fd);
    return err;
}

}  // namespace stockade::sandbox
