#include "runner/run_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/path.h"
#include "common/syscall.h"
#include "images/image.h"
#include "runner/policy_enforcement.h"
#include "runner/private_tmp.h"
#include "runner/terminal.h"
#include "sandbox/cgroup.h"
#include "sandbox/features.h"
#include "sandbox/landlock.h"
#include "sandbox/launcher.h"

extern char** environ;  // NOLINT: POSIX

namespace stockade::runner {
namespace {

using sandbox::Isolation;
using sandbox::NetworkMode;
using sandbox::SandboxSpec;

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

Error usage(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

Result<std::string> existing_path(const std::string& flag, const std::string& path) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR) {
            return Error{
                Errc::kNotFound,
                fmt::format("{} \"{}\" does not exist: create it or fix the path", flag, path)};
        }
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} \"{}\" cannot be used: {}", flag, path, errno_string(err))};
    }
    return std::string(resolved);
}

Result<Isolation> parse_isolation(const std::string& text) {
    if (text == "auto")
        return Isolation::kAuto;
    if (text == "full")
        return Isolation::kFull;
    if (text == "namespaces")
        return Isolation::kNamespaces;
    if (text == "landlock")
        return Isolation::kLandlock;
    if (text == "none")
        return Isolation::kNone;
    return usage(fmt::format(
        "--isolation \"{}\" is not a level: use auto, full, namespaces, landlock or none", text));
}

bool valid_env_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    for (char c : name) {
        bool ok =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> lookup_env(const std::vector<std::string>& env, std::string_view name) {
    std::string prefix = fmt::format("{}=", name);
    for (const auto& entry : env) {
        if (entry.rfind(prefix, 0) == 0) {
            return entry.substr(prefix.size());
        }
    }
    return std::nullopt;
}

bool is_within(const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           (dir == "/" || path[dir.size()] == '/'));
}

// The sandbox's PATH: the directories of the caller's PATH that a bind brings in (a toolchain
// mounted with --ro, a virtualenv in the workspace), in the caller's order, then the default.
std::string sandbox_path(const CallerContext& caller, const std::vector<std::string>& mounted) {
    std::vector<std::string> dirs;
    if (auto path = lookup_env(caller.environ, "PATH")) {
        for (std::string& dir : split_path_list(*path)) {
            const bool inside = std::any_of(mounted.begin(), mounted.end(),
                                            [&](const auto& m) { return is_within(dir, m); });
            if (!dir.empty() && dir.front() == '/' && inside &&
                std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) {
                dirs.push_back(std::move(dir));
            }
        }
    }
    dirs.emplace_back(kDefaultPath);
    return fmt::format("{}", fmt::join(dirs, ":"));
}

// A --mask / --read-only path: absolute and normalised (relative ones are taken from `cwd`),
// inside one of the spec's binds, and not through a symlink (the sandbox would refuse it).
Result<std::string> protected_path(const std::string& flag, const std::string& path,
                                   const std::string& cwd,
                                   const std::vector<sandbox::Bind>& binds) {
    if (path.empty()) {
        return usage(fmt::format("{}: an empty path", flag));
    }
    std::filesystem::path joined =
        path.front() == '/' ? std::filesystem::path(path) : std::filesystem::path(cwd) / path;
    std::string normal = joined.lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/') {
        normal.pop_back();
    }
    if (normal.empty() || normal.front() != '/') {
        return usage(fmt::format("{} \"{}\": not an absolute path", flag, path));
    }
    const bool inside = std::any_of(binds.begin(), binds.end(), [&](const sandbox::Bind& bind) {
        return is_within(normal, bind.target);
    });
    if (!inside) {
        return usage(fmt::format(
            "{} \"{}\": not inside the workspace or a --ro/--rw path, so there is nothing "
            "there to protect; name a path inside them",
            flag, path));
    }
    // The deepest part of the path that exists must be its own real path.
    std::string existing = normal;
    struct stat st {};
    while (existing != "/" && ::lstat(existing.c_str(), &st) != 0) {
        existing = std::filesystem::path(existing).parent_path().string();
    }
    char resolved[PATH_MAX];
    const bool resolves = ::realpath(existing.c_str(), resolved) != nullptr;
    if (S_ISLNK(st.st_mode) || (resolves && existing != resolved)) {
        return usage(fmt::format(
            "{} \"{}\": \"{}\" is a symbolic link, which the sandbox cannot protect; name "
            "the real path ({})",
            flag, path, existing,
            resolves ? fmt::format("\"{}\"", resolved) : std::string("it points nowhere")));
    }
    return normal;
}

// Relays the terminal, forwards signals, enforces the timeout; returns the exit code.
int supervise(sandbox::Sandbox& box, const SandboxSpec& spec) {
    auto log = log::get("runner");
    sigset_t handled;
    ::sigemptyset(&handled);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) {
        ::sigaddset(&handled, sig);
    }
    // Blocked before launch by run_command; read here through a signalfd.
    UniqueFd sigfd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));

    int master = box.terminal().get();
    const bool input_tty = spec.tty_fds[0];
    const int out_fd = spec.tty_fds[1] ? 1 : 2;
    std::optional<RawMode> raw;
    if (master >= 0) {
        if (input_tty) {
            raw.emplace(0);
        }
        copy_window_size(spec.tty_fds[0] ? 0 : out_fd, master);
    }
    bool stdin_open = master >= 0 && input_tty;
    bool master_open = master >= 0;

    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> deadline;
    if (spec.timeout) {
        deadline = Clock::now() + *spec.timeout;
    }
    bool timed_out = false;
    bool exited = false;
    char buf[65536];
    while (!exited || master_open) {
        pollfd fds[4];
        nfds_t n = 0;
        fds[n++] = pollfd{box.pidfd(), POLLIN, 0};
        fds[n++] = pollfd{sigfd.get(), POLLIN, 0};
        int master_slot = -1;
        int stdin_slot = -1;
        if (master_open) {
            master_slot = static_cast<int>(n);
            fds[n++] = pollfd{master, POLLIN, 0};
        }
        if (stdin_open && !exited) {
            stdin_slot = static_cast<int>(n);
            fds[n++] = pollfd{0, POLLIN, 0};
        }
        int wait_ms = -1;
        if (exited) {
            wait_ms = 0;  // drain what the terminal still holds, then stop
        } else if (deadline) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
            wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
        }
        int ready = ::poll(fds, n, wait_ms);
        if (ready < 0 && errno != EINTR) {
            SPDLOG_LOGGER_ERROR(log, "poll failed: {}", errno_string(errno));
            box.kill();
            break;
        }
        if (ready == 0) {
            if (exited) {
                break;
            }
            if (deadline && Clock::now() >= *deadline) {
                timed_out = true;
                box.kill();
                deadline.reset();
            }
            continue;
        }
        if ((fds[0].revents & POLLIN) != 0) {
            exited = true;
        }
        if ((fds[1].revents & POLLIN) != 0) {
            signalfd_siginfo si{};
            while (::read(sigfd.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGWINCH && master >= 0) {
                    copy_window_size(spec.tty_fds[0] ? 0 : out_fd, master);
                } else if (si.ssi_signo != SIGWINCH) {
                    (void)box.signal(static_cast<int>(si.ssi_signo));
                }
            }
        }
        if (master_slot >= 0 && fds[master_slot].revents != 0) {
            ssize_t got = ::read(master, buf, sizeof buf);
            if (got > 0) {
                if (!write_all(out_fd, std::string_view(buf, static_cast<size_t>(got)))) {
                    master_open = false;
                }
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                master_open = false;  // EIO: every slave descriptor is closed
            }
        } else if (exited && master_slot >= 0) {
            master_open = false;
        }
        if (stdin_slot >= 0 && fds[stdin_slot].revents != 0) {
            ssize_t got = ::read(0, buf, sizeof buf);
            if (got > 0) {
                (void)write_all(master, std::string_view(buf, static_cast<size_t>(got)));
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                stdin_open = false;
            }
        }
    }
    raw.reset();
    auto status = box.wait();
    if (!status) {
        fmt::print(stderr, "stockade run: {}\n", status.error().message);
        return kExitSetupFailed;
    }
    if (timed_out) {
        fmt::print(stderr, "stockade run: command timed out after {} and was killed\n",
                   fmt::format("{:.3g}s", static_cast<double>(spec.timeout->count()) / 1000.0));
        return kExitTimeout;
    }
    if (status->code == 128 + SIGKILL && box.oom_killed()) {
        fmt::print(
            stderr,
            "stockade run: the command was killed for exceeding its memory limit ({} bytes); "
            "raise --memory\n",
            spec.limits.memory_bytes.value_or(0));
    }
    return status->code;
}

}  // namespace

void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value) {
    std::string prefix = fmt::format("{}=", name);
    for (auto& entry : env) {
        if (entry.rfind(prefix, 0) == 0) {
            entry = prefix + std::string(value);
            return;
        }
    }
    env.push_back(prefix + std::string(value));
}

Result<Resolved> resolve_isolation(Isolation requested) {
    sandbox::HostFeatures features;
    features.user_ns = features.mount_ns = features.pid_ns = features.net_ns = true;
    features.ipc_uts_cgroup_ns = features.seccomp = features.pidfd = features.clone3 = true;
    features.landlock = sandbox::probe_landlock();
    if (requested == Isolation::kAuto || requested == Isolation::kFull) {
        features.cgroups = sandbox::probe_cgroups();
    }
    ASSIGN_OR_RETURN(Isolation level, sandbox::choose_isolation(requested, features));
    return Resolved{.level = level, .cgroups = std::move(features.cgroups)};
}

uint64_t default_memory_bytes(uint64_t host_memory_bytes) {
    return std::max<uint64_t>(host_memory_bytes / 2, uint64_t{512} << 20);
}

void apply_hosted_quotas(RunOptions& options) {
    for (auto [field, value] :
         {std::pair{&options.memory, "2G"}, std::pair{&options.pids, "512"},
          std::pair{&options.cpu, "1"}, std::pair{&options.tmp_size, "512M"}}) {
        if (field->empty()) {
            *field = value;
        }
    }
}

std::string describe_limits(const RunOptions& options, const CallerContext& caller) {
    const auto gib = [](uint64_t bytes) {
        return fmt::format("{:.1f}G", static_cast<double>(bytes) / static_cast<double>(1ULL << 30));
    };
    std::string memory =
        !options.memory.empty() ? options.memory
        : caller.memory_bytes > 0
            ? fmt::format("{} (half of this host's, where a memory cgroup applies)",
                          gib(default_memory_bytes(caller.memory_bytes)))
            : std::string("none");
    return fmt::format("memory {}, pids {}, cpu {}, /tmp {}", memory,
                       options.pids.empty() ? std::to_string(kDefaultPids) : options.pids,
                       options.cpu.empty() ? std::string("all") : options.cpu,
                       options.tmp_size.empty() ? std::string("1G") : options.tmp_size);
}

CallerContext current_caller() {
    CallerContext caller;
    struct sysinfo info {};
    if (::sysinfo(&info) == 0) {
        caller.memory_bytes = static_cast<uint64_t>(info.totalram) * info.mem_unit;
    }
    std::error_code ec;
    caller.cwd = std::filesystem::current_path(ec).string();
    caller.euid = ::geteuid();
    caller.egid = ::getegid();
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        caller.environ.emplace_back(*e);
    }
    caller.tty_fds = terminal_fds();
    return caller;
}

Result<SandboxSpec> build_run_spec(const RunOptions& options, const CallerContext& caller) {
    SandboxSpec spec;
    if (options.command.empty()) {
        return usage("no command given: put it after --, e.g. stockade run -- bash");
    }
    spec.argv = options.command;

    // Workspace and binds: every path must exist; they appear at the same path inside.
    ASSIGN_OR_RETURN(
        std::string workspace,
        existing_path("workspace", options.workspace.empty() ? caller.cwd : options.workspace));
    struct stat st {};
    if (::stat(workspace.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return usage(fmt::format(
            "workspace \"{}\" is not a directory: pass a directory with --workspace", workspace));
    }
    if (workspace == "/") {
        return usage(
            "refusing to use / as the workspace: pass a project directory with --workspace");
    }
    ASSIGN_OR_RETURN(spec.isolation, parse_isolation(options.isolation));
    if (options.network == "none") {
        spec.network = NetworkMode::kNone;
    } else if (options.network == "host") {
        spec.network = NetworkMode::kHost;
    } else {
        return usage(
            fmt::format("--network \"{}\" is not a mode: use none or host", options.network));
    }
    auto parsed = [](const std::string& flag, auto result) -> decltype(result) {
        if (!result) {
            return usage(fmt::format("{}: {}", flag, result.error().message));
        }
        return result;
    };
    if (!options.memory.empty()) {
        ASSIGN_OR_RETURN(uint64_t bytes, parsed("--memory", parse_size(options.memory)));
        if (bytes < (4ULL << 20)) {
            return usage("--memory: at least 4M is needed to start a process");
        }
        spec.limits.memory_bytes = bytes;
    } else if (caller.memory_bytes > 0) {
        spec.limits.memory_bytes = default_memory_bytes(caller.memory_bytes);
        spec.limits.memory_is_default = true;
    }
    spec.limits.pids = kDefaultPids;
    if (!options.pids.empty()) {
        ASSIGN_OR_RETURN(uint64_t pids, parsed("--pids", parse_uint(options.pids, 2, 4'194'304)));
        spec.limits.pids = pids;
    }
    if (!options.cpu.empty()) {
        ASSIGN_OR_RETURN(double cpu, parsed("--cpu", parse_cpu_fraction(options.cpu)));
        spec.limits.cpu = cpu;
    }
    if (!options.tmp_size.empty()) {
        ASSIGN_OR_RETURN(uint64_t bytes, parsed("--tmp-size", parse_size(options.tmp_size)));
        if (bytes == 0) {
            return usage("--tmp-size: must be more than 0 (tmpfs reads 0 as unlimited)");
        }
        spec.limits.tmp_bytes = bytes;
    }
    if (!options.timeout.empty()) {
        ASSIGN_OR_RETURN(auto timeout, parsed("--timeout", parse_duration(options.timeout)));
        spec.timeout = timeout;
    }

    // Identity: never host root. Root callers map the sandbox user to a dedicated host id and
    // see writable binds through idmapped mounts; others map their own uid.
    const bool root = caller.euid == 0;
    spec.identity.host_uid = root ? options.host_uid.value_or(kDefaultHostUid) : caller.euid;
    spec.identity.host_gid = root ? options.host_gid.value_or(kDefaultHostGid) : caller.egid;
    if (root && (spec.identity.host_uid == 0 || spec.identity.host_gid == 0)) {
        return usage(
            "--host-uid/--host-gid 0 would make the sandbox user host root: pick another id");
    }
    spec.idmap_writable_binds = root;
    if (root && spec.isolation == Isolation::kLandlock && st.st_uid != 0) {
        // No mount namespace, so no idmapped mount: run as the workspace's owner.
        spec.identity.host_uid = st.st_uid;
        spec.identity.host_gid = st.st_gid;
    }

    spec.binds.clear();
    spec.writable_paths = {workspace, "/tmp", "/dev/shm"};
    if (auto applied = images::apply_image(options.image, spec); !applied) {
        return usage(fmt::format("--image: {}", applied.error().message));
    }
    spec.binds.push_back(sandbox::Bind{.source = workspace, .target = workspace, .writable = true});
    std::vector<std::string> readable = images::image_readable_paths(options.image);
    readable.insert(readable.end(), {workspace, "/tmp", "/dev", "/proc"});
    std::vector<std::string> mounted = {workspace};  // what the caller's PATH may point into
    for (const auto& path : options.ro) {
        ASSIGN_OR_RETURN(std::string resolved, existing_path("--ro path", path));
        spec.binds.push_back(sandbox::Bind{.source = resolved, .target = resolved});
        readable.push_back(resolved);
        mounted.push_back(resolved);
    }
    for (const auto& path : options.rw) {
        ASSIGN_OR_RETURN(std::string resolved, existing_path("--rw path", path));
        spec.binds.push_back(
            sandbox::Bind{.source = resolved, .target = resolved, .writable = true});
        spec.writable_paths.push_back(resolved);
        readable.push_back(resolved);
        mounted.push_back(resolved);
    }
    if (spec.isolation == Isolation::kLandlock) {
        spec.readable_paths = readable;
    }
    for (const auto& path : options.masked_paths) {
        ASSIGN_OR_RETURN(std::string checked,
                         protected_path("--mask", path, caller.cwd, spec.binds));
        spec.masked_paths.push_back(std::move(checked));
    }
    for (const auto& path : options.read_only_paths) {
        ASSIGN_OR_RETURN(std::string checked,
                         protected_path("--read-only", path, caller.cwd, spec.binds));
        spec.read_only_paths.push_back(std::move(checked));
    }
    spec.path_rules_best_effort = options.path_rules_best_effort;

    // Working directory: where we are, if that is inside the workspace; else the workspace.
    if (!options.cwd.empty()) {
        spec.cwd = options.cwd;
    } else {
        std::string here = caller.cwd;
        char resolved[PATH_MAX];
        if (::realpath(here.c_str(), resolved) != nullptr) {
            here = resolved;
        }
        spec.cwd = is_within(here, workspace) ? here : workspace;
    }

    // Environment: a small baseline, plus exactly what --env allows. Nothing else crosses.
    spec.tty_fds = caller.tty_fds;
    bool any_tty = spec.tty_fds[0] || spec.tty_fds[1] || spec.tty_fds[2];
    set_env(spec.env, "PATH", sandbox_path(caller, mounted));
    set_env(spec.env, "HOME", "/tmp");
    set_env(spec.env, "USER", spec.identity.user_name);
    set_env(spec.env, "LOGNAME", spec.identity.user_name);
    set_env(spec.env, "SHELL", "/bin/bash");
    set_env(spec.env, "LANG", "C.UTF-8");
    if (any_tty) {
        set_env(spec.env, "TERM", lookup_env(caller.environ, "TERM").value_or("xterm-256color"));
    }
    for (const auto& entry : options.env) {
        size_t eq = entry.find('=');
        std::string name = entry.substr(0, eq);
        if (!valid_env_name(name)) {
            return usage(fmt::format("--env \"{}\": \"{}\" is not a variable name", entry, name));
        }
        if (eq != std::string::npos) {
            set_env(spec.env, name, entry.substr(eq + 1));
        } else if (auto value = lookup_env(caller.environ, name)) {
            set_env(spec.env, name, *value);
        } else {
            fmt::print(stderr, "stockade run: warning: --env {}: not set here; not passed\n", name);
        }
    }
    return spec;
}

int run_command(const RunOptions& given) {
    auto log = log::get("runner");
    CallerContext caller = current_caller();
    RunOptions options = given;
    if (!options.writable_git) {
        // As serve does: nothing the command does may plant a hook for the host's git. Best
        // effort at levels without a mount namespace, unless paths were asked for explicitly.
        char real[PATH_MAX];
        const std::string ws = options.workspace.empty() ? caller.cwd : options.workspace;
        if (::realpath(ws.c_str(), real) != nullptr) {
            std::vector<std::string> notes;
            std::vector<std::string> git = git_metadata_paths(real, notes);
            options.path_rules_best_effort =
                options.masked_paths.empty() && options.read_only_paths.empty();
            options.read_only_paths.insert(options.read_only_paths.end(), git.begin(), git.end());
            for (const std::string& note : notes) {
                SPDLOG_LOGGER_WARN(log, "{}", note);
            }
        }
    }
    auto built = build_run_spec(options, caller);
    if (!built) {
        fmt::print(stderr, "stockade run: {}\n", built.error().message);
        return kExitUsage;
    }
    SandboxSpec spec = std::move(built).value();
    auto resolved = resolve_isolation(spec.isolation);
    if (!resolved) {
        fmt::print(stderr, "stockade run: {}\n", resolved.error().message);
        return kExitUnavailable;
    }
    spec.isolation = resolved->level;
    PrivateTmp private_tmp("run");
    if (spec.isolation == Isolation::kLandlock) {
        if (auto applied = private_tmp.apply(spec); !applied) {
            fmt::print(stderr, "stockade run: {}\n", applied.error().message);
            return kExitSetupFailed;
        }
    }
    if (spec.isolation == Isolation::kNone) {
        fmt::print(stderr,
                   "stockade run: WARNING: --isolation none: the command runs WITHOUT a sandbox "
                   "(development only)\n");
    }

    // Signals we relay are blocked before the sandbox exists, so none is lost in between; the
    // child restores its own mask.
    sigset_t handled;
    ::sigemptyset(&handled);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) {
        ::sigaddset(&handled, sig);
    }
    ::sigprocmask(SIG_BLOCK, &handled, nullptr);
    (void)::signal(SIGPIPE, SIG_IGN);

    const sandbox::CgroupSupport& cgroups = resolved->cgroups;
    auto box = sandbox::launch(spec, cgroups);
    if (!box && box.error().code == Errc::kUnavailable && options.isolation == "auto" &&
        spec.isolation != Isolation::kLandlock && sandbox::probe_landlock().abi > 0) {
        // `auto` assumed user namespaces; the kernel said no. Take the next level down.
        fmt::print(stderr, "stockade run: warning: {}; falling back to --isolation landlock\n",
                   box.error().message);
        RunOptions fallback = options;
        fallback.isolation = "landlock";
        auto rebuilt = build_run_spec(fallback, caller);
        if (rebuilt) {
            spec = std::move(rebuilt).value();
            spec.isolation = Isolation::kLandlock;
            if (auto applied = private_tmp.apply(spec); applied) {
                box = sandbox::launch(spec, cgroups);
            }
        }
    }
    if (!box) {
        const Error& error = box.error();
        fmt::print(stderr, "stockade run: {}\n", error.message);
        switch (error.code) {
            case Errc::kNotFound:
                return kExitNotFound;
            case Errc::kPermissionDenied:
                return error.message.rfind("command", 0) == 0 ? kExitNotExecutable
                                                              : kExitSetupFailed;
            case Errc::kUnavailable:
                return kExitUnavailable;
            default:
                return kExitSetupFailed;
        }
    }
    SPDLOG_LOGGER_DEBUG(log, "sandbox started pid={} level={}", box->pid(),
                        sandbox::isolation_name(spec.isolation));
    return supervise(*box, spec);
}

}  // namespace stockade::runner
