#include "sandbox/features.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <net/if.h>

#include "common/defer.h"
#include "common/log.h"
#include "common/syscall.h"
#include "common/unique_fd.h"

namespace stockade::sandbox {

namespace {

// The host id that uid/gid 0 of the idmap probe's user namespace maps to.
constexpr int kIdmapProbeHostId = 65534;

// fork-like clone(2): the child runs on a copy of the caller's stack. Only async-signal-safe
// calls may follow in the child (the caller may have other threads).
pid_t raw_clone(unsigned long flags) {
    return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

// Waits for `pid`; 0 when it exited 0, its exit code (an errno) otherwise, or -signal.
int reap(pid_t pid) {
    int status = 0;
    if (retry_eintr([&] { return ::waitpid(pid, &status, 0); }) != pid) {
        return errno;
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return WIFSIGNALED(status) ? -WTERMSIG(status) : EINVAL;
}

std::string read_sysctl(const char* path) {
    auto text = read_file(path, 64);
    if (!text) {
        return {};
    }
    std::string value = std::move(*text);
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) {
        value.pop_back();
    }
    return value;
}

std::string describe_exit(int code) {
    if (code < 0) {
        return fmt::format("probe child killed by signal {} ({})", -code, sigabbrev_np(-code));
    }
    return errno_string(code);
}

// Why clone(CLONE_NEWUSER) failed with `err`, with the likely cause.
std::string userns_failure(int err) {
    std::string cause;
    if (err == EPERM || err == EACCES) {
        if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
            cause =
                "unprivileged user namespaces are disabled "
                "(sysctl kernel.unprivileged_userns_clone=0)";
        } else if (read_sysctl("/proc/sys/user/max_user_namespaces") == "0") {
            cause = "user namespaces are disabled (sysctl user.max_user_namespaces=0)";
        } else {
            cause =
                "denied by a seccomp filter or security module (e.g. a container runtime's "
                "default profile)";
        }
    } else if (err == ENOSPC || err == EUSERS) {
        cause = "the user namespace limit is reached (sysctl user.max_user_namespaces)";
    } else if (err == EINVAL) {
        cause = "the kernel lacks user namespaces (CONFIG_USER_NS)";
    } else {
        cause = "unexpected failure";
    }
    return fmt::format("clone(CLONE_NEWUSER): {} — {}", errno_string(err), cause);
}

// Why an operation inside a fresh user namespace failed: usually a security module that
// strips the namespace's capabilities.
std::string in_userns_failure(std::string_view what, int code) {
    std::string text = fmt::format("{}: {}", what, describe_exit(code));
    if ((code == EPERM || code == EACCES) &&
        read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
        text +=
            " — AppArmor restricts unprivileged user namespaces "
            "(sysctl kernel.apparmor_restrict_unprivileged_userns=1)";
    }
    return text;
}

// Each probe below runs in a child cloned with the namespace flags; it returns 0 or an errno.
// Child zone: async-signal-safe calls only, no allocation.
int child_mount_probe() {
    // SAFETY: mount(2) is a plain syscall; needs CAP_SYS_ADMIN in the new user namespace.
    return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
}

// The launcher assembles the root on a tmpfs at /tmp (its staging directory); the probes below
// do the same in their own mount namespace, so nothing of it is visible outside.
int child_private_tmpfs() {
    // SAFETY: mount(2) is a plain syscall, as in the launcher's child.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") != 0) {
        return errno;
    }
    return 0;
}

// A new /proc, as the launcher mounts it (in a new pid namespace: this child is its pid 1). The
// kernel refuses it where the caller's /proc has paths mounted over (mount_too_revealing), as
// in containers with masked /proc paths.
int child_proc_probe() {
    if (int err = child_private_tmpfs(); err != 0) {
        return err;
    }
    // SAFETY: mkdir/mount are plain syscalls.
    if (::mkdir("/tmp/proc", 0755) != 0 ||
        ::mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        return errno;
    }
    return 0;
}

// pivot_root into the tmpfs and detach the old root, as the launcher does.
int child_pivot_root_probe() {
    if (int err = child_private_tmpfs(); err != 0) {
        return err;
    }
    // SAFETY: chdir/pivot_root/umount2 are plain syscalls.
    if (::chdir("/tmp") != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 ||
        ::umount2(".", MNT_DETACH) != 0) {
        return errno;
    }
    return 0;
}

int child_pid_probe() {
    return ::getpid() == 1 ? 0 : ESRCH;
}

int child_net_probe() {
    // SAFETY: socket/ioctl/close are syscalls; bringing loopback up needs CAP_NET_ADMIN in the
    // new user namespace, as the launcher does.
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return errno;
    }
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, "lo", 3);
    int err = 0;
    if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
        err = errno;
    } else {
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
        if (::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) {
            err = errno;
        }
    }
    (void)::close(fd);
    return err;
}

int child_uts_probe() {
    // SAFETY: sethostname is a syscall; needs CAP_SYS_ADMIN over the new UTS namespace.
    return ::sethostname("stockade", 8) == 0 ? 0 : errno;
}

// Clones a child with CLONE_NEWUSER | `extra`, runs `probe` in it and returns its result:
// nullopt when the clone itself succeeded and the probe returned 0, else an error text.
std::optional<std::string> probe_namespace(unsigned long extra, int (*probe)(),
                                           std::string_view what, int* clone_errno) {
    pid_t pid = raw_clone(CLONE_NEWUSER | extra);
    if (pid == 0) {
        _exit(probe());
    }
    if (pid < 0) {
        *clone_errno = errno;
        return fmt::format("clone({}): {}", what, errno_string(*clone_errno));
    }
    *clone_errno = 0;
    int code = reap(pid);
    if (code == 0) {
        return std::nullopt;
    }
    return in_userns_failure(fmt::format("in a new {}", what), code);
}

// As probe_namespace, but the child waits until the caller's uid and gid are mapped in its user
// namespace (as the launcher maps them before its child mounts anything): a new /proc is
// refused (EOVERFLOW) to a caller whose ids are unmapped.
std::optional<std::string> probe_mapped_namespace(unsigned long extra, int (*probe)(),
                                                  std::string_view what, int* clone_errno) {
    *clone_errno = 0;
    auto go = make_pipe();
    if (!go) {
        return go.error().message;
    }
    const int go_read = go->first.get();
    const int go_write = go->second.get();
    pid_t pid = raw_clone(CLONE_NEWUSER | extra);
    if (pid == 0) {
        // SAFETY: close/read/_exit are async-signal-safe; EOF without a byte: not mapped.
        (void)::close(go_write);
        char byte = 0;
        if (::read(go_read, &byte, 1) != 1) {
            _exit(ECANCELED);
        }
        _exit(probe());
    }
    if (pid < 0) {
        *clone_errno = errno;
        return fmt::format("clone({}): {}", what, errno_string(*clone_errno));
    }
    go->first.reset();
    Status mapped =
        write_file(fmt::format("/proc/{}/uid_map", pid), fmt::format("0 {} 1", ::geteuid()));
    if (mapped) {
        mapped = write_file(fmt::format("/proc/{}/setgroups", pid), "deny");
    }
    if (mapped) {
        mapped =
            write_file(fmt::format("/proc/{}/gid_map", pid), fmt::format("0 {} 1", ::getegid()));
    }
    if (mapped) {
        (void)write_all(go_write, "g");
    }
    go->second.reset();
    int code = reap(pid);
    if (!mapped) {
        return fmt::format("{}: map the caller's ids: {}", what, mapped.error().message);
    }
    if (code == 0) {
        return std::nullopt;
    }
    return in_userns_failure(fmt::format("in a new {}", what), code);
}

// Every step above in one child with all the launcher's namespaces, as the launcher's child
// does them: the common case (everything works) costs one clone instead of seven.
int child_everything_probe() {
    if (int err = child_proc_probe(); err != 0) {
        return err;
    }
    if (int err = child_uts_probe(); err != 0) {
        return err;
    }
    if (int err = child_net_probe(); err != 0) {
        return err;
    }
    // SAFETY: chdir/pivot_root/umount2 are plain syscalls.
    if (::chdir("/tmp") != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 ||
        ::umount2(".", MNT_DETACH) != 0) {
        return errno;
    }
    return 0;
}

void probe_namespaces(HostFeatures& f) {
    int err = 0;
    if (!probe_mapped_namespace(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                    CLONE_NEWUTS | CLONE_NEWCGROUP,
                                child_everything_probe, "set of namespaces", &err)) {
        f.user_ns = f.mount_ns = f.pid_ns = f.net_ns = f.ipc_uts_cgroup_ns = true;
        f.proc_mount = f.pivot_root = true;
        return;
    }
    // Something failed: one probe a step, so that the report names it.
    if (auto failure = probe_namespace(
            0, [] { return 0; }, "user namespace", &err)) {
        f.userns_reason = err != 0 ? userns_failure(err) : *failure;
        constexpr std::string_view kNeedsUserns = "needs a user namespace, which is unavailable";
        f.mount_ns_reason = f.pid_ns_reason = f.net_ns_reason = f.ipc_uts_cgroup_ns_reason =
            f.proc_mount_reason = f.pivot_root_reason = std::string(kNeedsUserns);
        return;
    }
    f.user_ns = true;
    auto mount = probe_namespace(CLONE_NEWNS, child_mount_probe, "mount namespace", &err);
    f.mount_ns = !mount;
    f.mount_ns_reason = mount.value_or("");
    auto pid = probe_namespace(CLONE_NEWPID, child_pid_probe, "pid namespace", &err);
    f.pid_ns = !pid;
    f.pid_ns_reason = pid.value_or("");
    auto net = probe_namespace(CLONE_NEWNET, child_net_probe, "network namespace", &err);
    f.net_ns = !net;
    f.net_ns_reason = net.value_or("");
    auto other = probe_namespace(CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP, child_uts_probe,
                                 "ipc/uts/cgroup namespace", &err);
    f.ipc_uts_cgroup_ns = !other;
    f.ipc_uts_cgroup_ns_reason = other.value_or("");
    auto proc = probe_mapped_namespace(CLONE_NEWNS | CLONE_NEWPID, child_proc_probe,
                                       "mount+pid namespace: mount /proc", &err);
    f.proc_mount = !proc;
    f.proc_mount_reason = proc.value_or("");
    if (proc && err == 0 && proc->find("EPERM") != std::string::npos &&
        proc->find("AppArmor") == std::string::npos) {
        f.proc_mount_reason +=
            " — the caller's /proc has paths mounted over (e.g. a container's masked /proc "
            "paths), so the kernel refuses a new /proc";
    }
    auto pivot =
        probe_namespace(CLONE_NEWNS, child_pivot_root_probe, "mount namespace: pivot_root", &err);
    f.pivot_root = !pivot;
    f.pivot_root_reason = pivot.value_or("");
}

void probe_seccomp(HostFeatures& f) {
    uint32_t action = SECCOMP_RET_ERRNO;
    if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) {
        f.seccomp = true;
        return;
    }
    int err = errno;
    f.seccomp_reason =
        fmt::format("seccomp(SECCOMP_GET_ACTION_AVAIL): {}{}", errno_string(err),
                    err == ENOSYS || err == EINVAL
                        ? " — the kernel lacks seccomp filters (CONFIG_SECCOMP_FILTER)"
                        : "");
}

// Whether the status text of a process ("Seccomp:\t2") says it runs under a seccomp filter.
bool status_says_filtered(std::string_view status) {
    constexpr std::string_view kKey = "\nSeccomp:";
    const size_t at = status.find(kKey);
    if (at == std::string_view::npos) {
        return false;
    }
    std::string_view rest = status.substr(at + kKey.size());
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    return rest.starts_with("2");
}

void probe_caller_seccomp(HostFeatures& f) {
    std::ifstream in("/proc/self/status");
    std::ostringstream text;
    text << "\n" << in.rdbuf();
    f.caller_seccomp_filtered = status_says_filtered(text.str());
}

void probe_pidfd_clone3(HostFeatures& f) {
    // glibc 2.36's <sys/pidfd.h> lacks extern "C" for C++, hence the raw syscall.
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    if (fd >= 0) {
        (void)::close(fd);
        f.pidfd = true;
    } else {
        f.pidfd_reason = fmt::format("pidfd_open: {}{}", errno_string(errno),
                                     errno == ENOSYS ? " — needs Linux >= 5.3" : "");
    }
    // A zero-sized argument is rejected with EINVAL by every kernel that has clone3; no process
    // is created.
    if (::syscall(SYS_clone3, nullptr, 0) == -1 && errno != ENOSYS && errno != EPERM) {
        f.clone3 = true;
    } else {
        int err = errno;
        f.clone3_reason = fmt::format("clone3: {} — {}", errno_string(err),
                                      err == ENOSYS ? "needs Linux >= 5.3, or a seccomp filter "
                                                      "hides it (clone is used instead)"
                                                    : "denied by a seccomp filter");
    }
}

// A user namespace fd whose uid/gid 0 map to kIdmapProbeHostId: a child is cloned into a new
// user namespace, mapped, its namespace opened, and released and reaped before returning.
Result<UniqueFd> make_idmap_userns() {
    ASSIGN_OR_RETURN(FdPair release, make_pipe());
    pid_t pid = raw_clone(CLONE_NEWUSER);
    if (pid == 0) {
        // SAFETY: close/read/_exit are async-signal-safe; the child waits for EOF.
        (void)::close(release.second.get());
        char byte = 0;
        ssize_t n = ::read(release.first.get(), &byte, 1);
        (void)n;
        _exit(0);
    }
    if (pid < 0) {
        return errno_error("clone(CLONE_NEWUSER)", errno);
    }
    Defer reap_child{[&] {
        release.second.reset();
        (void)reap(pid);
    }};
    std::string map = fmt::format("0 {} 1", kIdmapProbeHostId);
    RETURN_IF_ERROR(write_file(fmt::format("/proc/{}/uid_map", pid), map));
    RETURN_IF_ERROR(write_file(fmt::format("/proc/{}/gid_map", pid), map));
    return open_path(fmt::format("/proc/{}/ns/user", pid), O_RDONLY);
}

void probe_idmap(HostFeatures& f) {
    if (!privileged_caller()) {
        f.idmap_required = false;
        f.idmap_reason = "not needed: unprivileged callers run as their own uid";
        return;
    }
    char dir[] = "/tmp/stockade-idmap-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
        f.idmap_reason = fmt::format("mkdtemp \"/tmp\": {}", errno_string(errno));
        return;
    }
    Defer remove_dir{[&] {
        (void)::rmdir(dir);
    }};
    int tree = ::open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0) {
        f.idmap_reason = fmt::format("open_tree \"{}\": {}{}", dir, errno_string(errno),
                                     errno == ENOSYS ? " — needs Linux >= 5.2" : "");
        return;
    }
    UniqueFd tree_fd(tree);
    auto userns = make_idmap_userns();
    if (!userns) {
        f.idmap_reason = userns.error().wrap("create a user namespace for the id map").message;
        return;
    }
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<decltype(attr.userns_fd)>(userns->get());
    if (::mount_setattr(tree_fd.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
        int err = errno;
        std::string cause;
        if (err == ENOSYS) {
            cause = " — needs Linux >= 5.12";
        } else if (err == EINVAL) {
            cause = " — the file system of /tmp does not support idmapped mounts";
        }
        f.idmap_reason = fmt::format("mount_setattr(MOUNT_ATTR_IDMAP) \"{}\": {}{}", dir,
                                     errno_string(err), cause);
        return;
    }
    f.idmapped_mounts = true;
    f.idmap_reason = "MOUNT_ATTR_IDMAP works on /tmp";
}

std::string landlock_detail(const LandlockSupport& l) {
    if (l.abi >= 1) {
        return fmt::format("ABI {}", l.abi);
    }
    switch (l.sys_errno) {
        case 0:
            return "not available";
        case ENOSYS:
            return "landlock_create_ruleset: ENOSYS — the kernel has no Landlock (needs Linux >= "
                   "5.13)";
        case EOPNOTSUPP:
            return "landlock_create_ruleset: EOPNOTSUPP — Landlock is built but not enabled "
                   "(add \"landlock\" to the lsm= boot parameter)";
        default:
            return fmt::format("landlock_create_ruleset: {}", errno_string(l.sys_errno));
    }
}

std::string cgroups_detail(const CgroupSupport& c) {
    std::string text = fmt::format("memory {}, pids {}, cpu {}, swap limit {}",
                                   cgroup_version_name(c.memory), cgroup_version_name(c.pids),
                                   cgroup_version_name(c.cpu), c.memory_swap ? "yes" : "no");
    if (!c.reason.empty()) {
        text += fmt::format(" ({})", c.reason);
    }
    return text;
}

std::string or_default(const std::string& reason, std::string_view fallback) {
    return reason.empty() ? std::string(fallback) : reason;
}

// Why a level is missing and what to do about it.
struct Gap {
    std::string cause;
    std::string fix;
};

std::optional<Gap> landlock_gap(const HostFeatures& f) {
    if (!f.seccomp) {
        return Gap{fmt::format("seccomp: {}", or_default(f.seccomp_reason, "not available")),
                   "use a kernel built with CONFIG_SECCOMP_FILTER"};
    }
    if (f.landlock.abi < 1) {
        return Gap{fmt::format("Landlock: {}", landlock_detail(f.landlock)),
                   "boot a kernel >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in "
                   "the lsm= boot parameter"};
    }
    return std::nullopt;
}

std::optional<Gap> namespaces_gap(const HostFeatures& f) {
    constexpr std::string_view kHostFix =
        "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
        "user.max_user_namespaces>0, and on Ubuntu >= 23.10 "
        "kernel.apparmor_restrict_unprivileged_userns=0), or use --isolation=landlock";
    // Under a seccomp filter already (a container's, or a service manager's), that filter and a
    // masked /proc may be what refuses, not the host.
    constexpr std::string_view kContainerFix =
        "this process runs under a seccomp filter already (a container's or a service "
        "manager's), which may refuse what a sandbox is built with: in a container, run it with "
        "Stockade's seccomp profile (/usr/share/stockade/seccomp-stockade-nested.json; podman "
        "--security-opt seccomp=FILE, Kubernetes seccompProfile type Localhost) and an unmasked "
        "/proc (podman --security-opt unmask=ALL, Kubernetes procMount: Unmasked); on a host, "
        "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
        "user.max_user_namespaces>0); or use --isolation=landlock";
    const std::string_view fix = f.caller_seccomp_filtered ? kContainerFix : kHostFix;
    struct Need {
        bool ok;
        std::string_view name;
        const std::string& reason;
    };
    const std::array<Need, 7> needs = {{
        {f.user_ns, "user namespace", f.userns_reason},
        {f.mount_ns, "mount namespace", f.mount_ns_reason},
        {f.pid_ns, "pid namespace", f.pid_ns_reason},
        {f.net_ns, "network namespace", f.net_ns_reason},
        {f.ipc_uts_cgroup_ns, "ipc/uts/cgroup namespaces", f.ipc_uts_cgroup_ns_reason},
        {f.proc_mount, "new /proc", f.proc_mount_reason},
        {f.pivot_root, "pivot_root", f.pivot_root_reason},
    }};
    for (const Need& need : needs) {
        if (!need.ok) {
            return Gap{fmt::format("{}: {}", need.name, or_default(need.reason, "not available")),
                       std::string(fix)};
        }
    }
    // The mount view already confines the sandbox; Landlock is added where the kernel has it.
    if (!f.seccomp) {
        return Gap{fmt::format("seccomp: {}", or_default(f.seccomp_reason, "not available")),
                   "use a kernel built with CONFIG_SECCOMP_FILTER"};
    }
    return std::nullopt;
}

std::optional<Gap> full_gap(const HostFeatures& f) {
    if (auto gap = namespaces_gap(f)) {
        return gap;
    }
    if (!f.cgroups.usable()) {
        const std::string cause = fmt::format(
            "cgroups: {}", or_default(f.cgroups.reason, "memory and pids controllers unavailable"));
        if (f.caller_seccomp_filtered) {
            return Gap{cause,
                       "in a container, the container's own cgroup limits (a pod's resources) "
                       "bound every sandbox together, and each sandbox has rlimits inside; full "
                       "needs a cgroup the container may write (a delegated cgroup v2 "
                       "subtree), else use --isolation=namespaces"};
        }
        return Gap{cause,
                   "run stockade as root, or on a cgroup v2 host inside a delegated cgroup "
                   "(systemd-run --user --scope -p Delegate=yes stockade ...), or use "
                   "--isolation=namespaces (rlimits instead of cgroup limits)"};
    }
    return std::nullopt;
}

Error unavailable(Isolation level, const Gap& gap) {
    return Error{Errc::kUnavailable, fmt::format("{} isolation is not available: {}. Fix: {}",
                                                 isolation_name(level), gap.cause, gap.fix)};
}

}  // namespace

std::vector<FeatureCheck> HostFeatures::checks() const {
    auto line = [](std::string name, bool ok, const std::string& reason, std::string ok_detail) {
        return FeatureCheck{std::move(name), ok,
                            ok ? std::move(ok_detail) : or_default(reason, "not available")};
    };
    std::vector<FeatureCheck> out;
    out.push_back(line("user namespace", user_ns, userns_reason, "clone(CLONE_NEWUSER) works"));
    out.push_back(line("mount namespace", mount_ns, mount_ns_reason,
                       "mount(MS_PRIVATE) works in a new user+mount namespace"));
    out.push_back(line("pid namespace", pid_ns, pid_ns_reason, "a new pid namespace works"));
    out.push_back(line("network namespace", net_ns, net_ns_reason,
                       "loopback comes up in a new network namespace"));
    out.push_back(line("ipc/uts/cgroup namespaces", ipc_uts_cgroup_ns, ipc_uts_cgroup_ns_reason,
                       "sethostname works in new ipc/uts/cgroup namespaces"));
    out.push_back(line("new /proc", proc_mount, proc_mount_reason,
                       "proc mounts in a new user+mount+pid namespace"));
    out.push_back(line("pivot_root", pivot_root, pivot_root_reason,
                       "pivot_root into a new root works in a new user+mount namespace"));
    out.push_back(line("seccomp", seccomp, seccomp_reason, "SECCOMP_RET_ERRNO filters available"));
    out.push_back(
        line("landlock", landlock.abi >= 1, landlock_detail(landlock), landlock_detail(landlock)));
    out.push_back(
        line("cgroups", cgroups.usable(), cgroups_detail(cgroups), cgroups_detail(cgroups)));
    out.push_back(line("idmapped mounts", idmapped_mounts || !idmap_required, idmap_reason,
                       or_default(idmap_reason, "MOUNT_ATTR_IDMAP works")));
    out.push_back(line("pidfd", pidfd, pidfd_reason, "pidfd_open works"));
    out.push_back(line("clone3", clone3, clone3_reason, "clone3 available"));
    return out;
}

HostFeatures probe_host_features() {
    HostFeatures f;
    probe_namespaces(f);
    probe_seccomp(f);
    probe_caller_seccomp(f);
    f.landlock = probe_landlock();
    f.cgroups = probe_cgroups();
    probe_idmap(f);
    probe_pidfd_clone3(f);
    auto log = log::get("sandbox");
    for (const FeatureCheck& check : f.checks()) {
        SPDLOG_LOGGER_DEBUG(log, "host feature name=\"{}\" ok={} detail=\"{}\"", check.name,
                            check.ok, check.detail);
    }
    return f;
}

HostFeatures probe_host_features_without_children() {
    HostFeatures f;
    f.user_ns = f.mount_ns = f.pid_ns = f.net_ns = f.ipc_uts_cgroup_ns = true;
    f.proc_mount = f.pivot_root = true;
    probe_seccomp(f);
    probe_caller_seccomp(f);
    f.landlock = probe_landlock();
    f.cgroups = probe_cgroups();
    f.idmap_required = privileged_caller();
    f.idmapped_mounts = true;
    probe_pidfd_clone3(f);
    return f;
}

Result<Isolation> choose_isolation(Isolation requested, const HostFeatures& features) {
    switch (requested) {
        case Isolation::kAuto: {
            if (!full_gap(features)) {
                return Isolation::kFull;
            }
            if (!namespaces_gap(features)) {
                return Isolation::kNamespaces;
            }
            std::optional<Gap> gap = landlock_gap(features);
            if (!gap) {
                return Isolation::kLandlock;
            }
            return Error{Errc::kUnavailable,
                         fmt::format("no isolation level is available (auto never picks none): {}. "
                                     "Fix: {}, or pass --isolation=none (development only: no "
                                     "isolation at all)",
                                     gap->cause, gap->fix)};
        }
        case Isolation::kFull:
            if (auto gap = full_gap(features)) {
                return unavailable(requested, *gap);
            }
            return requested;
        case Isolation::kNamespaces:
            if (auto gap = namespaces_gap(features)) {
                return unavailable(requested, *gap);
            }
            return requested;
        case Isolation::kLandlock:
            if (auto gap = landlock_gap(features)) {
                return unavailable(requested, *gap);
            }
            return requested;
        case Isolation::kNone:
            return requested;
    }
    return Error{Errc::kInternal, "unknown isolation level"};
}

std::string auto_shortfall(Isolation chosen, const HostFeatures& features) {
    std::optional<Gap> gap;
    Isolation above = Isolation::kFull;
    switch (chosen) {
        case Isolation::kNamespaces:
            gap = full_gap(features);
            break;
        case Isolation::kLandlock:
            gap = namespaces_gap(features);
            above = Isolation::kNamespaces;
            break;
        case Isolation::kAuto:
        case Isolation::kFull:
        case Isolation::kNone:
            break;
    }
    return gap ? unavailable(above, *gap).message : std::string();
}

}  // namespace stockade::sandbox
