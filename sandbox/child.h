// The child-after-clone zone.
//
// Everything here runs between clone and exec in a copy of the supervisor's address space.
// Only async-signal-safe calls: no allocation, no locks, no logging, no exceptions. Every
// buffer and string is prepared by the supervisor before clone (ChildPlan). A failure is
// reported as a fixed ChildError {step, errno, index} on the sync socket, then _exit.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/landlock.h"
#include "sandbox/mount_plan.h"
#include "sandbox/seccomp.h"

namespace stockade::sandbox {

// The steps of the child, in the order they first run in child_main() (docs/sandbox-lifecycle.md
// lists them in a table, in the same order; tests/unit/sandbox/child_steps_test.cc compares the
// two). Some run again later: kSetGid/kSetUid and kDeathSignal in 4d, kPty in the command.
enum class ChildStep : uint32_t {
    kDeathSignal,          // 4a
    kWaitForGo,            // 4a
    kDumpable,             // 4a
    kUserNamespaceLimits,  // 4a
    kDropGroups,           // 4a
    kMountPrivate,         // 4b.1
    kCaptureSource,        // 4b.2
    kSetGid,               // 4b.3 (and 4d)
    kSetUid,               // 4b.3 (and 4d)
    kMountRoot,            // 4b.4, 4b.6
    kMountOp,              // 4b.5
    kPivotRoot,            // 4b.7
    kHostname,             // 4c
    kLoopback,             // 4c
    kProxyListener,        // 4c
    kDnsSocket,            // 4c
    kCgroupNamespace,      // 4c
    kDropCaps,             // 4d
    kNoNewPrivs,           // 4d
    kLandlock,             // 4e
    kCloseFds,             // 4f
    kRlimit,               // 4f
    kPty,                  // 4g
    kSendPty,              // 4g
    kSeccomp,              // 4h
    kFork,                 // 5
    kChdir,                // 5
    kExec,                 // 5
};
const char* child_step_name(ChildStep step) noexcept;

struct ChildError {
    ChildStep step = ChildStep::kExec;
    int32_t err = 0;
    int32_t index = -1;  // the mount op, Landlock rule or rlimit that failed; -1 if none
};

// A message on the sync socket, child -> supervisor. kPtyMaster carries the descriptor as
// SCM_RIGHTS; kError ends the conversation. EOF without kError means the command was exec'd.
struct ChildMessage {
    enum Kind : uint32_t {
        kError = 1,
        kPtyMaster = 2,
        kProxyListener = 3,
        kDnsSocket = 4
    } kind = kError;
    ChildError error;
};

struct RlimitSetting {
    int resource = 0;
    rlimit value{};
};

// A limit of the sandbox's own user namespace: "/proc/sys/user/<name>" gets `value`
// (NUL-terminated text, formatted by the supervisor).
struct UserNamespaceLimit {
    std::string path;
    std::string value;
    // Opened in 4a, written in 4c after the child's own cgroup namespace exists (a limit of 0
    // cgroup namespaces would refuse it). At most one.
    bool after_cgroup_namespace = false;
};

// Everything the child needs, prepared by the supervisor before clone.
struct ChildPlan {
    int sync_fd = -1;         // SOCK_SEQPACKET, CLOEXEC; the child's end
    int parent_sync_fd = -1;  // the supervisor's end, closed first thing

    bool new_user_ns = true;
    bool new_mount_ns = true;
    bool new_uts_ns = true;
    bool new_net_ns = true;
    uint16_t proxy_port = 0;    // non-zero: listen on 127.0.0.1:proxy_port, send the socket over
    bool dns_socket = false;    // bind UDP 127.0.0.1:53, send the socket over
    bool as_pid1 = true;        // fork the command from a reaping init (we are pid 1 of a pid ns)
    int exec_fd = -1;           // execveat(exec_fd, "", AT_EMPTY_PATH) instead of a PATH search
    std::vector<int> pass_fds;  // become the command's fds 3, 4, ...
    std::array<int, 3> stdio{-1, -1, -1};  // replace fds 0, 1, 2 when >= 0
    bool drop_groups = false;              // setgroups(0, NULL): the caller was root

    bool set_ids = true;  // setresgid/setresuid to uid/gid below
    uid_t uid = 0;
    gid_t gid = 0;
    std::string hostname;

    // The root: sources captured with open_tree before the root tmpfs covers anything.
    MountPlan mounts;
    std::vector<int> source_fds;      // scratch, one per mounts.sources
    std::vector<int> prepared_fds;    // per source: an idmapped tree made by the supervisor, or -1
    std::vector<std::string> staged;  // per op: "<staging>/<target>"
    std::string staging;              // where the new root is assembled
    std::string staged_dev_null;      // "<staging>/dev/null", the mask source
    int staging_fd = -1;       // scratch: the root tmpfs, where policy paths are resolved beneath
    int mask_fs_fd = -1;       // scratch: a private tmpfs holding the empty file and directory
    int generated_fs_fd = -1;  // scratch: a private tmpfs holding generated files that
    unsigned generated_files = 0;  // cover an image's own (kFile over an existing file)

    std::vector<char*> argv;  // NULL-terminated, pointing into the strings below
    std::vector<char*> envp;
    std::vector<std::string> argv_storage;
    std::vector<std::string> envp_storage;
    std::vector<std::string> search_path;  // PATH entries for an argv[0] without '/'
    std::string cwd;

    int last_cap = 40;
    LandlockPlan landlock;
    sock_fprog seccomp{};  // empty (len 0): no filter
    std::vector<RlimitSetting> rlimits;
    std::vector<UserNamespaceLimit> userns_limits;  // written while the child has its caps
    int deferred_limit_fd = -1;  // the child's: the after_cgroup_namespace limit's, open
    std::array<bool, 3> tty{};   // which of fds 0,1,2 become the pseudo-terminal's slave

    // The supervisor's argv and environment blocks, scrubbed in the child so that /proc/1/
    // cmdline and environ show nothing of the host.
    char* args_begin = nullptr;
    char* args_end = nullptr;
    char* env_begin = nullptr;
    char* env_end = nullptr;
};

// Runs the whole child sequence; never returns.
[[noreturn]] void child_main(ChildPlan& plan) noexcept;

}  // namespace stockade::sandbox
