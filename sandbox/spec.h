// SandboxSpec: the finished description of one sandbox. The sandbox module knows nothing of
// tools, policy syntax or CLI flags: runner builds a spec (with images/ for the root) and asks
// the launcher to start it.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stockade::sandbox {

// How strongly to isolate. kAuto is resolved by choose_isolation() before launch.
enum class Isolation {
    kAuto,
    kFull,        // namespaces + seccomp + Landlock + cgroups
    kNamespaces,  // namespaces + seccomp + Landlock; rlimits instead of cgroups
    kLandlock,    // no user namespace: Landlock + seccomp + rlimits, the host's mount view
    kNone,        // development only: no isolation at all
};
const char* isolation_name(Isolation level) noexcept;

enum class NetworkMode {
    kNone,  // an empty network namespace with loopback up
    kHost,  // the host's network namespace
    // An empty network namespace whose only way out is the supervisor's proxy: the child
    // listens on 127.0.0.1:proxy_port inside it and hands the listening socket over
    // (Sandbox::proxy_listener), so every connection to it is accepted outside the sandbox.
    kAllowlist,
};
const char* network_name(NetworkMode mode) noexcept;

// A bind mount of a host path at `target` inside the sandbox (absolute paths).
struct Bind {
    std::string source{};
    std::string target{};
    bool writable = false;
    bool optional = false;  // skip silently when the source does not exist (image files)
    // A directory the caller opened (a workspace, a spill directory: trees a sandbox or a tenant
    // can change), which stays open until the launch returns. What is bound is this directory,
    // whatever `source` names by then: `source` only names it in messages, and a source path that
    // no longer leads to it fails the launch. At levels without a mount namespace, a Landlock
    // rule on `target` is given this descriptor rather than the path. -1: bind `source` itself.
    int source_fd = -1;
    // Part of a stored image's tree. Where the spec maps image root (Identity::image_root_host_id)
    // it is bound through an idmapped mount in which the tree's uid and gid 0 are that id, so
    // that its root-owned files are root's inside; elsewhere they show as the overflow ids.
    bool image = false;
};

// A file the launcher writes into the sandbox's read-only root (e.g. /etc/passwd).
struct GeneratedFile {
    std::string target{};
    std::string content{};
    mode_t mode = 0644;
};

// A symlink in the sandbox's root, e.g. /bin -> usr/bin on merged-/usr hosts.
struct Symlink {
    std::string target{};
    std::string link_text{};
};

struct Limits {
    std::optional<uint64_t> memory_bytes;  // cgroup memory.max (+swap 0), else RLIMIT_AS
    bool memory_is_default = false;        // not asked for: a memory cgroup only, never RLIMIT_AS
    std::optional<uint64_t> pids;          // cgroup pids.max, else RLIMIT_NPROC
    std::optional<double> cpu;             // cgroup cpu.max in CPUs (0.5 = half a CPU)
    uint64_t tmp_bytes = 1ULL << 30;       // size of the /tmp tmpfs
    uint64_t shm_bytes = 64ULL << 20;      // size of the /dev/shm tmpfs
    uint64_t nofile = 65536;               // RLIMIT_NOFILE
    uint64_t nproc_fallback = 4096;        // RLIMIT_NPROC when no pids cgroup and no --pids
    // Counted per user by the kernel, and up the chain of user namespaces to their owners: the
    // sandbox's own share, so that it cannot exhaust its owner's (see docs/sandbox-lifecycle.md).
    uint64_t sigpending = 4096;           // RLIMIT_SIGPENDING (queued signals, POSIX timers)
    uint64_t msgqueue_bytes = 256 << 10;  // RLIMIT_MSGQUEUE
    uint64_t inotify_instances = 64;      // the user namespace's user.max_inotify_instances
    uint64_t inotify_watches = 65536;     // user.max_inotify_watches
    // serve --http: a cgroup between the base and the leaf that the sandboxes of one tenant share
    // ("tenant-NAME"; empty: none), and its CPU weight (1-10000 on cgroup v2's scale, 100 the
    // kernel's default): such groups share the CPU by weight, however many sandboxes each holds.
    std::string group{};
    std::optional<uint64_t> group_cpu_weight{};
};

// The ids the sandbox runs as, inside and on the host.
struct Identity {
    uid_t sandbox_uid = 1000;  // uid inside the user namespace
    gid_t sandbox_gid = 1000;
    uid_t host_uid = 0;  // what sandbox_uid maps to on the host
    gid_t host_gid = 0;
    std::string user_name = "stockade";
    // A privileged caller on a stored image: the host id (uid and gid) that uid and gid 0
    // inside map to as well, and that the image's root-owned files are presented as (Bind::
    // image). An id no process runs as: nothing in the sandbox can become it (no capabilities,
    // no setuid files, no_new_privs). 0: none; uid 0 inside is unmapped.
    uid_t image_root_host_id = 0;
};

struct SandboxSpec {
    std::vector<std::string> argv{};  // argv[0] is resolved against PATH inside the sandbox
    std::vector<std::string> env{};   // "NAME=VALUE", exactly what the command gets
    std::string cwd{};                // inside the sandbox
    std::string hostname = "stockade";
    std::vector<Bind> binds{};  // in mount order; parents before children
    std::vector<GeneratedFile> files{};
    std::vector<Symlink> symlinks{};
    // Paths hidden and paths made read-only inside the sandbox (absolute, normalised, each
    // beneath a bind target), applied after every bind, whichever bind they sit under. A masked
    // file is covered by an empty file, a masked directory by an empty directory, both
    // read-only and mode 000; a read-only path becomes a read-only bind of itself, and each
    // directory between the enclosing writable bind and it becomes a mount point of its own,
    // so that it cannot be renamed or removed to put something writable at the path. A path
    // in both lists is masked, and its parents pinned.
    // Missing paths are skipped; a path that is (or goes through) a symlink at launch fails it.
    // They need a mount namespace: see path_rules_best_effort.
    std::vector<std::string> masked_paths{};
    std::vector<std::string> read_only_paths{};
    // At a level without a mount namespace (landlock, none) masked/read-only paths cannot be
    // applied: false (the default) fails the launch; true runs without them (a warning is
    // logged). For hardening defaults, not for paths that deny rules name.
    bool path_rules_best_effort = false;
    std::vector<std::string> writable_paths{};  // Landlock: where writes are allowed
    std::vector<std::string> readable_paths{};  // Landlock at level kLandlock: where reads are
    Limits limits;
    NetworkMode network = NetworkMode::kNone;
    uint16_t proxy_port = 3128;  // NetworkMode::kAllowlist: where the proxy listens inside
    // A network namespace of its own (network none or allowlist): a UDP socket bound on the
    // sandbox's 127.0.0.1:53 before anything untrusted runs, handed over (Sandbox::dns_socket)
    // to a resolver the caller runs outside; `files` should hold an /etc/resolv.conf naming
    // that address. Ignored with the host's network. The caller must serve the socket: a
    // query nobody answers waits out the client's timeouts.
    bool dns_socket = false;
    Isolation isolation = Isolation::kFull;  // resolved: never kAuto at launch
    Identity identity;
    bool idmap_writable_binds = false;  // present writable binds through idmapped mounts
    // Which of the command's fds 0, 1, 2 are a private pseudo-terminal (the supervisor relays
    // it to the user's terminal); the others are passed through.
    std::array<bool, 3> tty_fds{};
    std::optional<std::chrono::milliseconds> timeout{};
    // Execute the command from this descriptor (execveat, AT_EMPTY_PATH) instead of searching
    // PATH: the binary need not be in the image, and nothing inside can write to it.
    int exec_fd = -1;
    // Replacements for the command's stdin, stdout, stderr (-1: inherit the supervisor's).
    std::array<int, 3> stdio{-1, -1, -1};
    // Host descriptors handed to the command as its fds 3, 4, ... (e.g. a worker channel).
    std::vector<int> pass_fds{};
    // The session worker's sandbox: the processes it starts get a memory cgroup of their own
    // below its (CgroupLeaf's `commands`), so that an OOM kill they cause falls on them and
    // never on it. When that cgroup exists, its cgroup.procs, open for writing, is the
    // command's next fd after pass_fds (kCommandsCgroupFd for the worker's one pass_fd).
    bool commands_cgroup = false;
    // Fork a reaping, signal-forwarding init as pid 1 (stockade run). False: the command is
    // pid 1 itself and must reap (the session worker).
    bool init = true;
};

// Where the session worker finds its commands' cgroup.procs (SandboxSpec::commands_cgroup):
// after its channel, fd 3.
inline constexpr int kCommandsCgroupFd = 4;

}  // namespace stockade::sandbox
