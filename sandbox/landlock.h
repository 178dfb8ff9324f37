// Landlock: writes only where the spec allows them (the workspace, /tmp, /dev/shm, --rw paths),
// and at isolation level `landlock` reads only where the image and the workspace are.
// The plan is prepared in the supervisor; the child (after pivot_root, so paths resolve in the
// sandbox's own view) creates the ruleset, adds the rules and restricts itself.
#pragma once

#include <linux/landlock.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

// UAPI constants newer than Debian 12's linux-libc-dev (6.1), with the kernel's values.
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)  // ABI 2
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // ABI 3
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)  // ABI 5
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)  // ABI 6
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)  // ABI 6
#endif

namespace stockade::sandbox {

// Read and execute beneath a path.
inline constexpr uint64_t kLandlockReadAccess =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// The rights that apply to a file rather than a directory: a rule on a regular file (or a
// device) may only carry these, or the kernel refuses it with EINVAL.
inline constexpr uint64_t kLandlockFileAccess =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
    LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
// Every filesystem right Landlock ABI `abi` knows (0 for abi <= 0; ABIs above the newest one
// known here get the newest set).
uint64_t landlock_fs_access(int abi) noexcept;

// The highest Landlock ABI the running kernel supports, or 0 (with the reason) when none.
struct LandlockSupport {
    int abi = 0;
    int sys_errno = 0;  // from landlock_create_ruleset(NULL, 0, VERSION)
};
LandlockSupport probe_landlock() noexcept;

struct LandlockRule {
    std::string path;       // absolute, inside the sandbox's view
    uint64_t access = 0;    // LANDLOCK_ACCESS_FS_* allowed beneath path
    bool optional = false;  // skip when the path does not exist
    int fd = -1;            // when >= 0: the rule's directory itself (`path` only names it)
};

struct LandlockPlan {
    int abi = 0;              // 0: Landlock is not applied
    uint64_t handled_fs = 0;  // every FS right this ABI knows (all of them handled)
    uint64_t scoped = 0;      // ABI >= 6: abstract unix sockets and signals scoped
    std::vector<LandlockRule> rules;
    // A descriptor of a binary to be exec'd from outside the sandbox's tree (execveat): it
    // gets read and execute rights of its own, since no path rule can reach it. A memfd's
    // needs none: Landlock takes no rule on it (EBADFD) and allows its execution anyway.
    int exec_fd = -1;
};

struct LandlockPaths {
    std::vector<std::string> writable;  // every handled right beneath; must exist
    std::vector<std::string> readable;  // read and execute beneath, skipped when missing;
                                        // empty: "/" is readable
};

// Builds the plan for `abi` (0 gives an empty plan): every filesystem right of the ABI is
// handled, abstract unix sockets and signals are scoped (ABI >= 6), network rights are left to
// the network namespace. Rules: the readable paths (or "/"), /dev with the rights its devices
// need (read, write, ioctl on ttys; TIOCSTI is denied by seccomp regardless), /proc read-only,
// then the writable paths. Each rule's access is masked to the handled set.
LandlockPlan make_landlock_plan(int abi, const LandlockPaths& paths);

// Child zone (async-signal-safe; no allocation): applies the plan to the calling process
// (a plan with abi 0 is a no-op). A rule whose path is not a directory keeps only the
// file rights (kLandlockFileAccess). Requires no_new_privs. On failure returns an errno and
// sets *failed_rule to the index of the rule that failed (or -1 when no rule did).
int apply_landlock(const LandlockPlan& plan, int* failed_rule) noexcept;

}  // namespace stockade::sandbox
