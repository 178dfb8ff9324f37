// The supervisor's side of a launch. launch() reads top to bottom in the order of
// docs/sandbox-lifecycle.md: prepare (step 1), clone (2), id maps / cgroup / go (3), then the
// child's report (steps 4-5 run in sandbox/child.cc).
#include "sandbox/launcher.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "common/log.h"
#include "common/proc_table.h"
#include "common/syscall.h"
#include "sandbox/child.h"
#include "sandbox/child_report.h"
#include "sandbox/idmap.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"

namespace stockade::sandbox {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
// Where the child assembles the new root, in its own mount namespace. Every bind source is
// captured (open_tree) before this is covered, so a source below it is still reachable.
constexpr const char* kStaging = "/tmp";

bool has_user_ns(Isolation level) {
    switch (level) {
        case Isolation::kFull:
        case Isolation::kNamespaces:
            return true;
        case Isolation::kAuto:
        case Isolation::kLandlock:
        case Isolation::kNone:
            return false;
    }
    return false;
}

// The supervisor's argv and environment blocks (/proc/self/stat fields 48-51), which the
// sandbox's init scrubs from its copy of our memory.
struct ProcessBlocks {
    char* args_begin = nullptr;
    char* args_end = nullptr;
    char* env_begin = nullptr;
    char* env_end = nullptr;
};

ProcessBlocks read_process_blocks() {
    ProcessBlocks blocks;
    auto stat = read_file("/proc/self/stat", 8192);
    if (!stat) {
        return blocks;
    }
    size_t pos = stat->rfind(')');
    if (pos == std::string::npos) {
        return blocks;
    }
    // Field 3 (the state letter) follows ") "; fields 48..51 are arg_start, arg_end,
    // env_start and env_end.
    std::vector<unsigned long> fields;
    size_t at = pos + 2;
    for (int field = 3; field <= 51 && at < stat->size(); ++field) {
        size_t end = stat->find(' ', at);
        if (end == std::string::npos) {
            end = stat->size();
        }
        if (field >= 48) {
            fields.push_back(std::strtoul(stat->substr(at, end - at).c_str(), nullptr, 10));
        }
        at = end + 1;
    }
    if (fields.size() == 4) {
        blocks.args_begin = reinterpret_cast<char*>(fields[0]);  // NOLINT: an address, by design
        blocks.args_end = reinterpret_cast<char*>(fields[1]);    // NOLINT
        blocks.env_begin = reinterpret_cast<char*>(fields[2]);   // NOLINT
        blocks.env_end = reinterpret_cast<char*>(fields[3]);     // NOLINT
    }
    return blocks;
}

int last_capability() {
    static const int cap = [] {
        auto text = read_file("/proc/sys/kernel/cap_last_cap", 64);
        return text ? std::atoi(text->c_str()) : 40;
    }();
    return cap;
}

// Whether this process may call setgroups: not in a user namespace whose setgroups file says
// "deny" (`unshare --map-root-user` writes it), where no namespace below may either. Its
// sandboxes then keep the supplementary groups the caller has, as an unprivileged caller's do.
bool setgroups_allowed() {
    static const bool allowed = [] {
        auto text = read_file("/proc/self/setgroups", 64);
        return !text || !text->starts_with("deny");
    }();
    return allowed;
}

// Compiled once per process and socket policy: the filter depends on nothing else.
const SeccompProgram* seccomp_for(const SeccompOptions& options, Error* error) {
    static std::mutex mutex;
    static std::optional<SeccompProgram> programs[3];
    std::lock_guard lock(mutex);
    size_t slot = options.deny_all_sockets ? 2 : options.restrict_socket_families ? 0 : 1;
    if (!programs[slot]) {
        auto built = build_seccomp_program(options);
        if (!built) {
            *error = built.error();
            return nullptr;
        }
        programs[slot] = std::move(built).value();
    }
    return &*programs[slot];
}

std::vector<std::string> search_path(const std::vector<std::string>& env) {
    std::string path = kDefaultPath;
    for (const auto& entry : env) {
        if (entry.rfind("PATH=", 0) == 0) {
            path = entry.substr(5);
        }
    }
    std::vector<std::string> dirs;
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find(':', start);
        if (end == std::string::npos) {
            end = path.size();
        }
        std::string dir = path.substr(start, end - start);
        dirs.push_back(dir.empty() ? "." : dir);
        start = end + 1;
    }
    return dirs;
}

std::vector<RlimitSetting> make_rlimits(const SandboxSpec& spec, const CgroupLeaf* leaf) {
    std::vector<RlimitSetting> limits;
    auto set = [&](int resource, uint64_t value) {
        rlimit current{};
        (void)::getrlimit(static_cast<__rlimit_resource>(resource), &current);
        rlim_t v = static_cast<rlim_t>(value);
        if (current.rlim_max != RLIM_INFINITY && v > current.rlim_max) {
            v = current.rlim_max;  // raising a hard limit needs privileges we do not want
        }
        limits.push_back(RlimitSetting{resource, rlimit{v, v}});
    };
    set(RLIMIT_CORE, 0);
    set(RLIMIT_NOFILE, spec.limits.nofile);
    bool cgroup_pids = leaf != nullptr && leaf->applies_pids();
    bool cgroup_memory = leaf != nullptr && leaf->applies_memory();
    // Counted per uid within the sandbox's own user namespace, so it bounds this sandbox.
    uint64_t nproc = spec.limits.pids.value_or(spec.limits.nproc_fallback);
    if (cgroup_pids && !spec.limits.pids) {
        nproc = spec.limits.nproc_fallback;
    }
    set(RLIMIT_NPROC, nproc);
    if (spec.limits.memory_bytes && !cgroup_memory && !spec.limits.memory_is_default) {
        set(RLIMIT_AS, *spec.limits.memory_bytes);
    }
    set(RLIMIT_SIGPENDING, spec.limits.sigpending);
    set(RLIMIT_MSGQUEUE, spec.limits.msgqueue_bytes);
    return limits;
}

// The sandbox's user namespace's own limits (step 4a): its share of inotify, and no
// namespaces at all (seccomp refuses to make them anyway).
std::vector<UserNamespaceLimit> make_userns_limits(const SandboxSpec& spec) {
    std::vector<UserNamespaceLimit> out = {
        {"max_inotify_instances", fmt::format("{}", spec.limits.inotify_instances)},
        {"max_inotify_watches", fmt::format("{}", spec.limits.inotify_watches)},
        {"max_fanotify_groups", "0"},
        {"max_fanotify_marks", "0"},
    };
    // Not mnt: the child's open_tree captures make anonymous mount namespaces, which count, and
    // seccomp refuses the mount API to the command anyway.
    for (const char* ns : {"user", "pid", "net", "ipc", "uts", "cgroup", "time"}) {
        out.push_back(
            {fmt::format("max_{}_namespaces", ns), "0", std::string_view(ns) == "cgroup"});
    }
    for (UserNamespaceLimit& limit : out) {
        limit.path = "/proc/sys/user/" + limit.path;
    }
    return out;
}

// Turns the child's {step, errno, index} into an operator-facing error.
Error child_error(const ChildError& e, const ChildPlan& plan, const SandboxSpec& spec) {
    auto index = static_cast<size_t>(e.index);
    switch (e.step) {
        case ChildStep::kExec:
            if (e.err == ENOENT) {
                return Error{
                    Errc::kNotFound,
                    fmt::format("command \"{}\" not found in the sandbox image: install it "
                                "in the image, pass its directory with --ro, or check PATH",
                                spec.argv[0]),
                    e.err};
            }
            return Error{Errc::kPermissionDenied,
                         fmt::format("command \"{}\" cannot be executed in the sandbox: {}",
                                     spec.argv[0], errno_string(e.err)),
                         e.err};
        case ChildStep::kChdir:
            return Error{Errc::kFailedPrecondition,
                         fmt::format("working directory \"{}\" is not reachable in the sandbox: {}",
                                     plan.cwd, errno_string(e.err)),
                         e.err};
        case ChildStep::kCaptureSource:
            if (e.index >= 0 && index < plan.mounts.sources.size() && e.err == ESTALE &&
                plan.mounts.source_fds[index] >= 0) {
                return Error{Errc::kFailedPrecondition,
                             fmt::format("sandbox setup: bind \"{}\": the directory that was "
                                         "opened at that path has been moved, removed or "
                                         "replaced since; open a new session on it",
                                         plan.mounts.sources[index]),
                             e.err};
            }
            if (e.index >= 0 && index < plan.mounts.sources.size()) {
                return errno_error(
                    fmt::format("sandbox setup: bind \"{}\"", plan.mounts.sources[index]), e.err);
            }
            break;
        case ChildStep::kMountOp:
            if (e.index >= 0 && index < plan.mounts.ops.size()) {
                const MountOp& op = plan.mounts.ops[index];
                std::string what;
                switch (op.kind) {
                    case MountOpKind::kBind:
                        what = fmt::format("bind \"{}\" -> \"{}\"", op.data, op.target);
                        break;
                    case MountOpKind::kPin:
                        what = fmt::format("pin \"{}\" (a parent of a masked or read-only path)",
                                           op.target);
                        break;
                    case MountOpKind::kReadOnlyPath:
                        what = fmt::format("make \"{}\" read-only", op.target);
                        break;
                    case MountOpKind::kMaskPath:
                        what = fmt::format("mask \"{}\"", op.target);
                        break;
                    default:
                        what = fmt::format("mount \"{}\"", op.target);
                        break;
                }
                const bool policy_path = op.kind == MountOpKind::kPin ||
                                         op.kind == MountOpKind::kReadOnlyPath ||
                                         op.kind == MountOpKind::kMaskPath;
                if (policy_path && e.err == ELOOP) {
                    return Error{Errc::kFailedPrecondition,
                                 fmt::format("sandbox setup: {}: the path is, or goes through, a "
                                             "symbolic link, so it cannot be protected; replace "
                                             "the link with the real file or directory",
                                             what)};
                }
                Error err = errno_error(fmt::format("sandbox setup: {}", what), e.err);
                if (op.kind == MountOpKind::kProc && e.err == EPERM) {
                    err.message +=
                        ". Likely cause: the host's /proc has masked entries (as inside "
                        "a container); run with --isolation landlock";
                }
                return err;
            }
            break;
        case ChildStep::kLandlock:
            if (e.index >= 0 && index < plan.landlock.rules.size()) {
                return errno_error(fmt::format("sandbox setup: Landlock rule \"{}\"",
                                               plan.landlock.rules[index].path),
                                   e.err);
            }
            break;
        default:
            break;
    }
    return errno_error(fmt::format("sandbox setup: {}", child_step_name(e.step)), e.err);
}

// A sandbox without a pid namespace has no init of its own to take its orphans (a daemon, a
// `setsid cmd &`): this process adopts them instead, as a child subreaper, and kills them when
// the sandbox ends. Its children are then its sandboxes' inits (listed here while they run)
// and what they left behind.
struct Adopter {
    std::mutex mu;
    std::set<pid_t> inits;   // guarded by mu
    bool subreaper = false;  // guarded by mu
};

Adopter& adopter() {
    static auto* adopter = new Adopter;  // NOLINT(cppcoreguidelines-owning-memory): never freed
    return *adopter;
}

// Kills and reaps every child of this process that is no sandbox's init: orphans of ended
// sandboxes. What one of them started comes here when it dies, so it is looked for again.
void kill_adopted_orphans() noexcept {
    Adopter& a = adopter();
    std::lock_guard lock(a.mu);
    if (!a.subreaper) {
        return;
    }
    for (int round = 0; round < 256; ++round) {
        auto kids = own_children();
        if (!kids) {
            return;
        }
        bool found = false;
        for (const int kid : *kids) {
            if (a.inits.contains(kid)) {
                continue;
            }
            found = true;
            (void)::kill(kid, SIGKILL);  // our unreaped child: the pid is still its
            (void)retry_eintr([&] { return ::waitpid(kid, nullptr, 0); });
        }
        if (!found) {
            return;
        }
    }
}

}  // namespace

Sandbox::Sandbox(Sandbox&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      terminal_(std::move(other.terminal_)),
      proxy_listener_(std::move(other.proxy_listener_)),
      dns_socket_(std::move(other.dns_socket_)),
      cgroup_(std::move(other.cgroup_)),
      reaped_(std::exchange(other.reaped_, true)),
      adopts_(std::exchange(other.adopts_, false)) {
    other.cgroup_.reset();
}

Sandbox& Sandbox::operator=(Sandbox&& other) noexcept {
    if (this != &other) {
        if (pid_ > 0 && !reaped_) {
            kill();
            (void)wait();
        }
        pid_ = std::exchange(other.pid_, -1);
        pidfd_ = std::move(other.pidfd_);
        terminal_ = std::move(other.terminal_);
        proxy_listener_ = std::move(other.proxy_listener_);
        dns_socket_ = std::move(other.dns_socket_);
        cgroup_ = std::move(other.cgroup_);
        other.cgroup_.reset();
        reaped_ = std::exchange(other.reaped_, true);
        adopts_ = std::exchange(other.adopts_, false);
    }
    return *this;
}

Sandbox::~Sandbox() {
    if (pid_ > 0 && !reaped_) {
        kill();
        (void)wait();
    }
}

Status Sandbox::signal(int sig) const {
    if (::syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0) != 0) {
        return errno_error("signal the sandbox", errno);
    }
    return {};
}

void Sandbox::kill() noexcept {
    if (pidfd_.valid()) {
        (void)::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    }
    if (pid_ > 0 && !reaped_) {
        (void)::kill(-pid_, SIGKILL);  // without a pid namespace: the command's process group
    }
    if (cgroup_) {
        cgroup_->kill();
    }
}

Result<ExitStatus> Sandbox::wait() {
    if (reaped_) {
        return Error{Errc::kFailedPrecondition, "sandbox already reaped"};
    }
    siginfo_t info{};
    if (retry_eintr([&] {
            return ::waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED);
        }) != 0) {
        return errno_error("wait for the sandbox", errno);
    }
    reaped_ = true;
    if (cgroup_) {
        cgroup_->kill();  // without a pid namespace, orphans may remain in the cgroup
    }
    if (adopts_) {
        {
            std::lock_guard lock(adopter().mu);
            adopter().inits.erase(pid_);
        }
        kill_adopted_orphans();
    }
    if (info.si_code == CLD_EXITED) {
        return ExitStatus{.code = info.si_status, .signal = 0};
    }
    return ExitStatus{.code = 128 + info.si_status, .signal = info.si_status};
}

bool Sandbox::oom_killed() const {
    return cgroup_ && cgroup_->oom_killed();
}

// The steps of launch(), named as docs/sandbox-lifecycle.md numbers them. Each returns an error
// that names what failed; on failure nothing is left behind (the Sandbox and CgroupLeaf
// destructors kill, reap and remove what was made).
namespace {

// 1.1 A spec the launcher can start: a command, a resolved level, and masked and read-only
// paths only where there is a mount namespace to make them in.
Status check_spec(const SandboxSpec& spec) {
    if (spec.argv.empty()) {
        return Error{Errc::kInvalidArgument, "no command to run"};
    }
    if (spec.isolation == Isolation::kAuto) {
        return Error{Errc::kInternal, "launch: isolation level not resolved"};
    }
    // The allowlist is a proxy reached from an empty network namespace; without one the
    // sandbox would have the host's network, so fail rather than run unconfined.
    if (spec.network == NetworkMode::kAllowlist && !has_user_ns(spec.isolation)) {
        return Error{Errc::kUnavailable,
                     fmt::format("--network allowlist needs a network namespace of the sandbox's "
                                 "own, and isolation level {} has none: use --isolation full or "
                                 "namespaces (`stockade doctor` shows which levels this host "
                                 "gives)",
                                 isolation_name(spec.isolation))};
    }
    if (spec.network == NetworkMode::kAllowlist && spec.proxy_port == 0) {
        return Error{Errc::kInvalidArgument, "--network allowlist needs a proxy port"};
    }
    // Masked and read-only paths are mounts: without a mount namespace they cannot be made,
    // and running anyway would expose what a deny rule hides. Fail closed, unless the caller
    // said they are best-effort hardening.
    const size_t path_rules = spec.masked_paths.size() + spec.read_only_paths.size();
    if (path_rules == 0 || has_user_ns(spec.isolation)) {
        return {};
    }
    const std::string& example =
        spec.masked_paths.empty() ? spec.read_only_paths.front() : spec.masked_paths.front();
    if (!spec.path_rules_best_effort) {
        return Error{Errc::kUnavailable,
                     fmt::format("{} path(s) must be hidden or made read-only in the sandbox (deny "
                                 "rules, --mask, --read-only; e.g. \"{}\"), which needs a mount "
                                 "namespace, and isolation level {} has none: use --isolation full "
                                 "or namespaces (`stockade doctor` shows which levels this host "
                                 "gives)",
                                 path_rules, example, isolation_name(spec.isolation))};
    }
    SPDLOG_LOGGER_WARN(log::get("sandbox"),
                       "isolation level {} has no mount namespace: {} path(s) such as \"{}\" "
                       "are not masked or made read-only",
                       isolation_name(spec.isolation), path_rules, example);
    return {};
}

// 1.2 and 1.3: the mount plan and everything else the child reads, so that it never allocates:
// argv, environment, PATH, the seccomp filter, the Landlock plan, our argv/environ blocks.
Status prepare_child_plan(const SandboxSpec& spec, ChildPlan& plan) {
    const bool userns = has_user_ns(spec.isolation);
    const bool sandboxed = spec.isolation != Isolation::kNone;
    const bool root = privileged_caller();
    plan.new_user_ns = userns;
    plan.new_mount_ns = userns;
    plan.new_uts_ns = userns;
    plan.new_net_ns = userns && spec.network != NetworkMode::kHost;
    plan.proxy_port = spec.network == NetworkMode::kAllowlist ? spec.proxy_port : 0;
    plan.dns_socket = plan.new_net_ns && spec.dns_socket;
    plan.as_pid1 = userns && spec.init;
    plan.exec_fd = spec.exec_fd;
    plan.pass_fds = spec.pass_fds;
    plan.stdio = spec.stdio;
    plan.drop_groups = root && sandboxed && setgroups_allowed();
    plan.set_ids = userns || (root && sandboxed);
    plan.uid = userns ? spec.identity.sandbox_uid : spec.identity.host_uid;
    plan.gid = userns ? spec.identity.sandbox_gid : spec.identity.host_gid;
    plan.hostname = spec.hostname;
    plan.last_cap = last_capability();
    plan.cwd = spec.cwd;
    plan.tty = {spec.tty_fds[0], spec.tty_fds[1], spec.tty_fds[2]};

    if (userns) {
        std::vector<bool> is_dir;
        for (const auto& bind : spec.binds) {
            struct stat st {};
            const int rc = bind.source_fd >= 0 ? ::fstat(bind.source_fd, &st)
                                               : ::stat(bind.source.c_str(), &st);
            is_dir.push_back(rc != 0 || S_ISDIR(st.st_mode));
        }
        plan.mounts = make_mount_plan(spec, is_dir);
        plan.staging = kStaging;
        for (const auto& op : plan.mounts.ops) {
            plan.staged.push_back(plan.staging + op.target);
        }
        plan.staged_dev_null = plan.staging + "/dev/null";
        plan.source_fds.assign(plan.mounts.sources.size(), -1);
        plan.prepared_fds.assign(plan.mounts.sources.size(), -1);
    }
    plan.argv_storage = spec.argv;
    plan.envp_storage = spec.env;
    for (auto& arg : plan.argv_storage) {
        plan.argv.push_back(arg.data());
    }
    plan.argv.push_back(nullptr);
    for (auto& entry : plan.envp_storage) {
        plan.envp.push_back(entry.data());
    }
    plan.envp.push_back(nullptr);
    plan.search_path = search_path(spec.env);

    if (sandboxed) {
        Error error;
        // Without a network namespace (level landlock), "no network" has to be seccomp's job.
        const bool no_network = spec.network != NetworkMode::kHost;
        const SeccompProgram* program =
            seccomp_for(SeccompOptions{.restrict_socket_families = no_network,
                                       .deny_all_sockets = no_network && !userns},
                        &error);
        if (program == nullptr) {
            return std::move(error).wrap("compile the seccomp filter");
        }
        plan.seccomp = program->fprog();
        static const LandlockSupport landlock = probe_landlock();
        plan.landlock = make_landlock_plan(
            landlock.abi,
            LandlockPaths{.writable = spec.writable_paths, .readable = spec.readable_paths});
        plan.landlock.exec_fd = spec.exec_fd;
        // Without a mount namespace the rules' paths are the host's, which a sandbox may have
        // changed: a rule on a bind the caller opened is given that directory itself.
        for (LandlockRule& rule : plan.landlock.rules) {
            for (const Bind& bind : spec.binds) {
                if (!userns && bind.source_fd >= 0 && bind.target == rule.path) {
                    rule.fd = bind.source_fd;
                }
            }
        }
    }
    if (plan.as_pid1) {
        ProcessBlocks blocks = read_process_blocks();
        plan.args_begin = blocks.args_begin;
        plan.args_end = blocks.args_end;
        plan.env_begin = blocks.env_begin;
        plan.env_end = blocks.env_end;
    }
    return {};
}

// 1.4 At level full: the cgroup leaf (the commands' cgroup.procs joins the passed descriptors).
// Then what depends on it: the rlimits (a limit no cgroup applies becomes one), and the user
// namespace's own limits.
Result<std::optional<CgroupLeaf>> create_cgroup_leaf(const SandboxSpec& spec,
                                                     const CgroupSupport& cgroups,
                                                     ChildPlan& plan) {
    std::optional<CgroupLeaf> leaf;
    if (spec.isolation == Isolation::kFull) {
        auto created = CgroupLeaf::create(spec.limits, cgroups, spec.commands_cgroup);
        if (!created) {
            return std::move(created).error().wrap("create the sandbox's cgroup");
        }
        leaf = std::move(created).value();
        if (leaf->commands_procs_fd() >= 0) {
            plan.pass_fds.push_back(leaf->commands_procs_fd());
        }
    }
    plan.rlimits = make_rlimits(spec, leaf ? &*leaf : nullptr);
    plan.userns_limits = make_userns_limits(spec);
    return leaf;
}

// Whether the supervisor creates the user namespace as the sandbox's host uid (a root caller
// with a user namespace): see clone_child.
bool owns_as_host_uid(const SandboxSpec& spec) {
    return has_user_ns(spec.isolation) && privileged_caller() && spec.identity.host_uid != 0;
}

// The user namespace an image's root is idmapped through (0 -> `id`): the same for every
// sandbox of the process, so made once per id and held for the process's life.
Result<int> image_root_userns(uid_t id) {
    static std::mutex mutex;
    static std::map<uid_t, UniqueFd> made;
    std::lock_guard lock(mutex);
    auto it = made.find(id);
    if (it == made.end()) {
        ASSIGN_OR_RETURN(UniqueFd ns, make_userns_fd(0, id, 0, id));
        it = made.emplace(id, std::move(ns)).first;
    }
    return it->second.get();
}

// 1.5 Root callers: writable binds appear through idmapped mounts, so the sandbox user (an
// unprivileged host uid) can write them and files keep their owner on disk. The other
// sources are captured here too (the child, running as the host uid, may not traverse what
// root can: the state directory under /root, say), as the child would have; a missing one is
// left to the child, which skips it when it is optional. The trees are held until the clone.
Result<std::vector<UniqueFd>> prepare_bind_trees(const SandboxSpec& spec, ChildPlan& plan) {
    std::vector<UniqueFd> trees;
    if (!owns_as_host_uid(spec)) {
        return trees;
    }
    for (size_t i = 0; spec.idmap_writable_binds && i < plan.mounts.ops.size(); ++i) {
        const MountOp& op = plan.mounts.ops[i];
        if (op.kind != MountOpKind::kBind || !op.writable || op.device) {
            continue;
        }
        const int source_fd = plan.mounts.source_fds[static_cast<size_t>(op.source_index)];
        struct stat st {};
        if ((source_fd >= 0 ? ::fstat(source_fd, &st) : ::stat(op.data.c_str(), &st)) != 0) {
            return errno_error(fmt::format("stat \"{}\"", op.data), errno);
        }
        ASSIGN_OR_RETURN(UniqueFd ns, make_userns_fd(st.st_uid, spec.identity.host_uid, st.st_gid,
                                                     spec.identity.host_gid));
        auto tree = make_idmapped_tree(op.data, source_fd, ns.get());
        if (!tree && tree.error().sys_errno == EINVAL) {
            // The file system refuses idmapped mounts: overlayfs, a container's own root, on
            // older kernels and under user namespaces.
            struct statfs fs {};
            const bool overlay = (source_fd >= 0 ? ::fstatfs(source_fd, &fs)
                                                 : ::statfs(op.data.c_str(), &fs)) == 0 &&
                                 fs.f_type == OVERLAYFS_SUPER_MAGIC;
            return Error{
                Errc::kUnavailable,
                fmt::format("present \"{}\" with its owner: its file system{} refuses "
                            "idmapped mounts, so a root supervisor cannot show it to the "
                            "sandbox user as that user's. Put it on a volume (podman -v, "
                            "a Kubernetes emptyDir or PersistentVolumeClaim), or run "
                            "stockade as {}, not as root",
                            op.data, overlay ? " (overlayfs, a container's own root)" : "",
                            st.st_uid == 0 ? std::string("an unprivileged user who owns it")
                                           : fmt::format("its owner (uid {})", st.st_uid))};
        }
        if (!tree) {
            return std::move(tree).error().wrap(
                "present the workspace with its owner (idmapped mount)");
        }
        plan.prepared_fds[static_cast<size_t>(op.source_index)] = tree->get();
        trees.push_back(std::move(tree).value());
    }
    // A stored image's tree, where image root is mapped: its files of uid and gid 0 are the
    // mapped id's, root's inside. A file system that refuses idmapped mounts leaves them the
    // overflow ids (the plain capture below), as for an unprivileged caller.
    const uid_t image_root = spec.identity.image_root_host_id;
    int root_ns = -1;
    for (size_t i = 0; image_root != 0 && i < plan.mounts.ops.size(); ++i) {
        const MountOp& op = plan.mounts.ops[i];
        const auto index = static_cast<size_t>(op.source_index);
        if (op.kind != MountOpKind::kBind || !op.image || op.writable ||
            plan.prepared_fds[index] >= 0) {
            continue;
        }
        if (root_ns < 0) {
            ASSIGN_OR_RETURN(root_ns, image_root_userns(image_root));
        }
        auto tree = make_idmapped_tree(op.data, plan.mounts.source_fds[index], root_ns);
        if (!tree) {
            SPDLOG_LOGGER_DEBUG(log::get("sandbox"), "image root stays unmapped: {}",
                                tree.error().message);
            continue;
        }
        plan.prepared_fds[index] = tree->get();
        trees.push_back(std::move(tree).value());
    }
    for (size_t i = 0; i < plan.mounts.sources.size(); ++i) {
        if (plan.prepared_fds[i] >= 0) {
            continue;
        }
        auto tree = detached_tree(plan.mounts.sources[i], plan.mounts.source_fds[i]);
        if (!tree) {
            if (tree.error().sys_errno == ENOENT) {
                continue;
            }
            return std::move(tree).error().wrap("sandbox setup: bind");
        }
        plan.prepared_fds[i] = tree->get();
        trees.push_back(std::move(tree).value());
    }
    return trees;
}

// The child, once cloned: it runs child_main(plan) and never returns to the caller's code.
struct Cloned {
    pid_t pid = -1;
    UniqueFd pidfd;
    bool into_cgroup = false;  // it entered its v2 leaf at clone time (CLONE_INTO_CGROUP)
};

// 2. clone3 into the new namespaces, with a pidfd (and straight into a v2 cgroup when it can).
// Without a pid namespace the child is listed as a sandbox's init of the adopter before the
// lock is released, so that a sweep of orphans never takes it.
Result<Cloned> clone_child(const SandboxSpec& spec, ChildPlan& plan,
                           const std::optional<CgroupLeaf>& leaf) {
    auto log = log::get("sandbox");
    const bool userns = has_user_ns(spec.isolation);
    const bool own_owner = owns_as_host_uid(spec);
    uint64_t flags = CLONE_PIDFD;
    if (userns) {
        // The cgroup namespace is unshared by the child after "go", once it sits in its leaf,
        // so that its own cgroup is the root it sees.
        flags |= CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
        if (plan.new_net_ns) {
            flags |= CLONE_NEWNET;
        }
    }
    int pidfd = -1;
    clone_args args{};
    args.flags = flags;
    args.pidfd = reinterpret_cast<__u64>(&pidfd);  // NOLINT: the kernel ABI wants an address
    args.exit_signal = SIGCHLD;
    // The kernel charges a user namespace's per-user counts (inotify, queued signals, timers,
    // namespaces) to its owner as well, at every level up: made by root, every sandbox would
    // draw on root's own budget, and on each other's. A root caller makes it as the sandbox's
    // host uid instead: the effective uid of this thread alone (a raw setresuid; glibc's would
    // change every thread) for the length of the clone. The creds have no CAP_SYS_ADMIN over
    // root's cgroup then, so the child joins its leaf after the clone.
    Cloned cloned;
    cloned.into_cgroup = leaf && leaf->v2_dir_fd() >= 0 && !own_owner;
    if (cloned.into_cgroup) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<__u64>(static_cast<unsigned int>(leaf->v2_dir_fd()));
    }
    std::lock_guard adopting(adopter().mu);
    if (!userns && !adopter().subreaper) {
        adopter().subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
    }
    if (own_owner && ::syscall(SYS_setresuid, -1, spec.identity.host_uid, -1) != 0) {
        return errno_error("take the sandbox's host uid to create its user namespace", errno);
    }
    // SAFETY: fork-like clone3 (no CLONE_VM, no stack): the child runs child_main on a copy of
    // this stack and never returns.
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0 && (errno == ENOSYS || errno == E2BIG)) {
        cloned.into_cgroup = false;
        pid = ::syscall(SYS_clone, flags | SIGCHLD, nullptr, &pidfd, nullptr, nullptr);
    }
    if (pid == 0) {
        child_main(plan);
    }
    const int clone_errno = errno;
    if (own_owner && ::syscall(SYS_setresuid, -1, 0, -1) != 0) {
        // The saved uid is 0: this cannot fail; if it did, this thread must not go on.
        SPDLOG_LOGGER_CRITICAL(log, "cannot take back uid 0 after the clone: {}",
                               errno_string(errno));
        std::abort();
    }
    if (pid < 0) {
        Error error = errno_error("clone the sandbox", clone_errno);
        if (userns && (clone_errno == EPERM || clone_errno == ENOSPC || clone_errno == EUSERS)) {
            error.code = Errc::kUnavailable;
            error.message +=
                ". Likely cause: user namespaces are disabled or exhausted (sysctl "
                "user.max_user_namespaces, kernel.unprivileged_userns_clone or an AppArmor "
                "restriction). Enable them, or run with --isolation landlock";
        }
        return error;
    }
    cloned.pid = static_cast<pid_t>(pid);
    cloned.pidfd.reset(pidfd);
    if (!userns) {
        adopter().inits.insert(cloned.pid);
    }
    SPDLOG_LOGGER_DEBUG(log, "sandbox cloned pid={} isolation={}", pid,
                        isolation_name(spec.isolation));
    return cloned;
}

}  // namespace

Result<Sandbox> launch(const SandboxSpec& spec, const CgroupSupport& cgroups,
                       LaunchStage* failed_at) {
    if (failed_at != nullptr) {
        *failed_at = LaunchStage::kSetup;
    }
    // 1. The supervisor, before clone: check the spec, prepare everything the child needs
    // (1.2-1.3), the cgroup leaf and the limits that depend on it (1.4), the trees of the
    // binds a root caller prepares itself (1.5), and the socket the child reports on (1.6).
    RETURN_IF_ERROR(check_spec(spec));
    ChildPlan plan;
    RETURN_IF_ERROR(prepare_child_plan(spec, plan));
    ASSIGN_OR_RETURN(std::optional<CgroupLeaf> leaf, create_cgroup_leaf(spec, cgroups, plan));
    ASSIGN_OR_RETURN(std::vector<UniqueFd> trees, prepare_bind_trees(spec, plan));
    ASSIGN_OR_RETURN(FdPair sync, make_socketpair(SOCK_SEQPACKET));
    plan.sync_fd = sync.second.get();
    plan.parent_sync_fd = sync.first.get();

    // 2. Clone. The child's copies of the trees and of its end of the socket are its own now.
    ASSIGN_OR_RETURN(Cloned cloned, clone_child(spec, plan, leaf));
    Sandbox sandbox;
    sandbox.pid_ = cloned.pid;
    sandbox.pidfd_ = std::move(cloned.pidfd);
    sandbox.cgroup_ = std::move(leaf);
    sandbox.adopts_ = !has_user_ns(spec.isolation);
    sync.second.reset();
    trees.clear();

    // 3. The supervisor, after clone: id maps (3.1), the cgroup (3.2), then "go" and the
    // child's report (3.3). On failure the Sandbox destructor kills and reaps.
    if (has_user_ns(spec.isolation)) {
        if (auto st = write_id_maps(sandbox.pid_, spec.identity.sandbox_uid, spec.identity.host_uid,
                                    spec.identity.sandbox_gid, spec.identity.host_gid,
                                    !privileged_caller(),
                                    owns_as_host_uid(spec) ? spec.identity.image_root_host_id : 0);
            !st) {
            return std::move(st).error().wrap("write the sandbox's id maps");
        }
    }
    // "go" first: the child builds its root while it is moved into its cgroup (on v1 each
    // move waits for an RCU grace period), and waits for "in" before anything the leaf's limits
    // are for. A child that failed meanwhile has reported why: its error wins.
    const int sync_fd = sync.first.get();
    auto send_byte = [sync_fd](char byte) {
        return retry_eintr([&] { return ::send(sync_fd, &byte, 1, MSG_NOSIGNAL); }) == 1;
    };
    auto fail_with = [&](Error error) -> Error {
        (void)::shutdown(sync_fd, SHUT_WR);  // a child waiting for "in" exits
        if (auto report = receive_child_report(sync_fd); report && report->error) {
            error = child_error(report->child_error, plan, spec);
        }
        (void)sandbox.wait();
        return error;
    };
    if (!send_byte('g')) {
        return fail_with(errno_error("start the sandbox", errno));
    }
    if (sandbox.cgroup_) {
        if (auto st = sandbox.cgroup_->add_process(sandbox.pid_, cloned.into_cgroup); !st) {
            return fail_with(std::move(st).error().wrap("move the sandbox into its cgroup"));
        }
    }
    if (!send_byte('i')) {
        return fail_with(errno_error("start the sandbox", errno));
    }
    ASSIGN_OR_RETURN(ChildReport report, receive_child_report(sync_fd));
    if (report.error) {
        if (failed_at != nullptr && report.child_error.step == ChildStep::kExec) {
            *failed_at = LaunchStage::kExec;
        }
        Error error = child_error(report.child_error, plan, spec);
        (void)sandbox.wait();  // the child has exited (or will, having reported)
        return error;
    }
    sandbox.terminal_ = std::move(report.terminal);
    sandbox.proxy_listener_ = std::move(report.proxy_listener);
    if (spec.network == NetworkMode::kAllowlist && !sandbox.proxy_listener_) {
        return Error{Errc::kInternal, "the sandbox did not hand over the proxy's listening socket"};
    }
    sandbox.dns_socket_ = std::move(report.dns_socket);
    if (plan.dns_socket && !sandbox.dns_socket_) {
        return Error{Errc::kInternal, "the sandbox did not hand over its resolver's socket"};
    }
    return sandbox;
}

}  // namespace stockade::sandbox
