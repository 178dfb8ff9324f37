#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "common/path.h"
#include "common/proc_table.h"
#include "common/sigpipe.h"
#include "common/syscall.h"
#include "workspace/diagnostics.h"
#include "workspace/exit_report.h"
#include "workspace/local_internal.h"
#include "workspace/local_workspace.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)  // Linux 4.13
#endif

namespace stockade::workspace {

namespace local {

ChildTable& children() {
    // Never destroyed: another thread may still reap while static destructors run.
    static auto* table = new ChildTable;  // NOLINT(cppcoreguidelines-owning-memory)
    return *table;
}

}  // namespace local

namespace {

using Clock = std::chrono::steady_clock;
using local::children;
using local::ChildTable;
using local::shown;

// The absolute directories of a PATH value; relative entries (and "", meaning ".") are
// skipped: they would resolve against the worker's cwd, not the command's.
std::vector<std::string_view> path_dirs(std::string_view path_env) {
    std::vector<std::string_view> dirs;
    for (std::string_view dir : split(path_env, ':')) {
        if (!dir.empty() && dir.front() == '/') {
            dirs.push_back(dir);
        }
    }
    return dirs;
}

// Writes a leader's exit report to its status pipe, then the caller closes it. The supervisor
// may have closed the read end already: the EPIPE must not become a SIGPIPE that kills the
// worker.
void deliver_report(int fd, const ExitReport& report) {
    const std::string bytes = encode_exit_report(report);
    const ScopedSigpipeBlock no_sigpipe;
    (void)retry_eintr([&] { return ::write(fd, bytes.data(), bytes.size()); });
}

struct Reaped {
    pid_t pid = 0;
    int status = 0;
};

// Preconditions: table.mu held. Reaps the spawned leaders that exited, each by its pid.
std::vector<Reaped> reap_leaders(ChildTable& table) {
    std::vector<Reaped> reaped;
    for (auto it = table.leaders.begin(); it != table.leaders.end();) {
        int status = 0;
        const pid_t pid = it->first;
        const pid_t r = retry_eintr([&] { return ::waitpid(pid, &status, WNOHANG); });
        if (r == pid) {
            reaped.push_back({pid, status});
            ++it;
        } else if (r < 0 && errno == ECHILD) {
            // Reaped behind our back (SIGCHLD set to SIG_IGN): the status is lost, and the
            // pipe closing without 4 bytes says so.
            table.left_by.erase(pid);
            it = table.leaders.erase(it);
        } else {
            ++it;
        }
    }
    return reaped;
}

// Preconditions: table.mu held. Stops every child of this process that is neither a spawned
// leader nor rg nor already stopping: an orphan, reparented here because the command it came
// from ended (leaders are subreapers: while one lives, what it started stays beneath it). Each
// goes down to the leader whose session it still belongs to or, when it made a session of its
// own, to the one leader reaped now, if there is exactly one.
void stop_orphans(ChildTable& table, const std::vector<Reaped>& reaped) {
    auto kids = own_children();
    if (!kids) {
        return;
    }
    const Clock::time_point due = Clock::now() + LocalWorkspace::kLeftoverGrace;
    for (const int pid : *kids) {
        if (table.leaders.contains(pid) || table.waited_elsewhere.contains(pid) ||
            table.stopping.contains(pid)) {
            continue;
        }
        ProcStat st;
        st.pid = pid;
        std::array<char, 1024> buf{};
        const std::string path = fmt::format("/proc/{}/stat", pid);
        if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
            const ssize_t n = retry_eintr([&] { return ::read(fd, buf.data(), buf.size()); });
            (void)::close(fd);
            if (n > 0) {
                st = parse_proc_stat(std::string_view(buf.data(), static_cast<size_t>(n)))
                         .value_or(st);
            }
        }
        (void)::kill(pid, SIGTERM);
        (void)::kill(pid, SIGCONT);  // a stopped process acts on SIGTERM only once continued
        table.stopping.emplace(pid, due);
        pid_t owner = 0;
        if (table.leaders.contains(st.session)) {
            owner = st.session;
        } else if (reaped.size() == 1) {
            owner = reaped.front().pid;
        }
        if (owner != 0 && st.alive()) {
            Leftovers& left = table.left_by[owner];
            ++left.count;
            if (left.names.size() < kMaxLeftoverNames) {
                left.names.push_back(st.comm.empty() ? std::string("?") : st.comm);
            }
        }
    }
}

// Preconditions: table.mu held. Reaps exited orphans: peek at an exited child, then reap it
// only if no one else waits for it. A pending rg stops the loop (waitid always shows the same
// first zombie); run_rg reaps it shortly, and the next call takes the rest. true: a leader
// exited since reap_leaders (left unreaped for the next round).
bool reap_orphans(ChildTable& table) {
    constexpr int kMaxOrphansPerCall = 4096;
    for (int i = 0; i < kMaxOrphansPerCall; ++i) {
        siginfo_t info{};
        if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
            return false;
        }
        const pid_t pid = info.si_pid;
        if (table.waited_elsewhere.contains(pid)) {
            return false;
        }
        if (table.leaders.contains(pid)) {
            return true;
        }
        if (retry_eintr([&] { return ::waitpid(pid, nullptr, WNOHANG); }) != pid) {
            return false;
        }
        table.stopping.erase(pid);
    }
    return false;
}

// Preconditions: table.mu held. SIGKILLs the stopping orphans whose grace has passed; returns
// the time until the next is due.
std::optional<std::chrono::milliseconds> kill_overdue(ChildTable& table) {
    const Clock::time_point now = Clock::now();
    std::optional<Clock::time_point> next;
    for (auto& [pid, due] : table.stopping) {
        if (due <= now) {
            (void)::kill(pid, SIGKILL);  // still our unreaped child: the pid is its
            due = Clock::time_point::max();
        } else if (due != Clock::time_point::max()) {
            next = next ? std::min(*next, due) : due;
        }
    }
    if (!next) {
        return std::nullopt;
    }
    return std::chrono::ceil<std::chrono::milliseconds>(*next - now);
}

// Where a child failed before its program ran; sent to the parent with the errno.
enum class ChildStage : int { kSetup = 1, kSetsid, kStdio, kControllingTty, kChdir, kExec };

// Everything the forked child needs, prepared before the fork.
struct ChildPlan {
    const char* exe = nullptr;
    char* const* argv = nullptr;
    char* const* envp = nullptr;
    int stdin_fd = -1;
    int output_fd = -1;  // stdout and stderr
    int cwd_fd = -1;
    int report_fd = -1;  // write end of the CLOEXEC failure pipe
    int cgroup_fd = -1;  // cgroup.procs to join, or -1
    bool controlling_tty = false;
    int max_fd = 0;  // where the close loop stops if close_range is missing
};

// The rest of this section runs in the child, in the worker's memory (start_child): system
// calls on what the plan holds only — no allocation, nothing that writes the worker's data.

[[noreturn]] void child_fail(int report_fd, ChildStage stage) {
    const std::array<int, 2> message{static_cast<int>(stage), errno};
    [[maybe_unused]] const ssize_t n = ::write(report_fd, message.data(), sizeof message);
    ::_exit(127);
}

// Descriptors 0-2 may be any of the plan's: each one still needed is moved above 2 first so
// that no dup2 onto 0-2 overwrites it before its own dup2.
int lift_above_stdio(int fd) {
    return fd > STDERR_FILENO ? fd : ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
}

void close_fd_span(unsigned first, unsigned last, int max_fd) {
    if (first > last) {
        return;
    }
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, first, last, 0U) == 0) {
        return;
    }
#endif
    for (unsigned fd = first; fd <= last && fd < static_cast<unsigned>(max_fd); ++fd) {
        (void)::close(static_cast<int>(fd));
    }
}

[[noreturn]] void exec_child(const ChildPlan& plan) {
    const int report = lift_above_stdio(plan.report_fd);
    if (report < 0) {
        ::_exit(127);
    }
    // Into the commands' memory cgroup first, so that all the program does is charged there.
    // Where the move fails, the command runs in the worker's cgroup, as without one.
    if (plan.cgroup_fd >= 0) {
        [[maybe_unused]] const ssize_t moved = ::write(plan.cgroup_fd, "0", 1);
    }
    const int in = lift_above_stdio(plan.stdin_fd);
    const int out = lift_above_stdio(plan.output_fd);
    const int cwd = lift_above_stdio(plan.cwd_fd);
    if (in < 0 || out < 0 || cwd < 0) {
        child_fail(report, ChildStage::kSetup);
    }
    if (::setsid() < 0) {
        child_fail(report, ChildStage::kSetsid);
    }
    if (::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(out, STDERR_FILENO) < 0) {
        child_fail(report, ChildStage::kStdio);
    }
    // A session leader without a controlling terminal acquires the PTY it names here.
    if (plan.controlling_tty && ::ioctl(STDIN_FILENO, TIOCSCTTY, 0) < 0) {
        child_fail(report, ChildStage::kControllingTty);
    }
    // Ignored signals and the mask survive execve: the command must start from the defaults,
    // whatever the worker (SIGCHLD blocked for its signalfd) or a test process set. Dispositions
    // first, so that no handler of the parent runs once the mask opens.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            (void)::sigaction(sig, &default_action, nullptr);  // EINVAL for glibc's own: fine
        }
    }
    sigset_t none;
    sigemptyset(&none);
    (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
    // What the command starts and leaves behind (a daemon, `setsid cmd &`, a double fork) is
    // reparented to it rather than to the worker while it lives (the flag survives execve),
    // and to the worker, which stops it, once it ends: nothing outlives its command unseen.
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    if (::fchdir(cwd) < 0) {
        child_fail(report, ChildStage::kChdir);
    }
    // Everything but 0-2 and the report pipe (CLOEXEC: execve closes it) goes: the worker's
    // channel, other commands' pipes, status pipes.
    const auto keep = static_cast<unsigned>(report);
    close_fd_span(STDERR_FILENO + 1, keep - 1, plan.max_fd);
    close_fd_span(keep + 1, ~0U, plan.max_fd);
    ::execve(plan.exe, plan.argv, plan.envp);
    child_fail(report, ChildStage::kExec);
}

int child_main(void* plan) {
    exec_child(*static_cast<const ChildPlan*>(plan));
}

// The child shares the worker's memory (CLONE_VM) on a stack of its own, and the worker waits
// until it has exec'd or failed (CLONE_VFORK), as glibc's posix_spawn does: no page tables are
// copied and nothing is copied on write, which a fork would do for every command. Every signal
// is blocked across the clone so that no handler of the worker ever runs on the child's stack;
// the child resets the dispositions (its own copy) before it opens the mask.
constexpr size_t kChildStackBytes = size_t{64} << 10;

pid_t start_child(const ChildPlan& plan) {
    auto stack = std::make_unique<std::byte[]>(kChildStackBytes);  // 16-byte aligned
    sigset_t all;
    sigfillset(&all);
    sigset_t old;
    sigemptyset(&old);
    (void)::pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t pid = ::clone(child_main, stack.get() + kChildStackBytes,
                              CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<ChildPlan*>(&plan));
    const int clone_errno = errno;
    (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = clone_errno;
    return pid;
}

// ---- (back in the parent) -------------------------------------------------------------------

Error child_error(ChildStage stage, int err, const std::string& name, const std::string& cwd) {
    switch (stage) {
        case ChildStage::kExec:
            if (err == EACCES) {
                return Error{Errc::kPermissionDenied, fmt::format("{}: permission denied", name),
                             err};
            }
            if (err == ENOENT) {
                // Found on PATH but not executable as such: a #! interpreter or the ELF loader
                // is missing.
                return Error{Errc::kNotFound,
                             name.find('/') != std::string::npos
                                 ? fmt::format("{}: no such file or directory", name)
                                 : fmt::format("{}: its interpreter or loader is missing", name),
                             err};
            }
            if (err == ENOEXEC) {
                return Error{Errc::kFailedPrecondition,
                             fmt::format("{}: cannot execute: exec format error", name), err};
            }
            return errno_error(fmt::format("spawn \"{}\": execve", name), err);
        case ChildStage::kChdir:
            return errno_error(fmt::format("spawn: chdir to \"{}\"", shown(cwd)), err);
        case ChildStage::kSetsid:
            return errno_error("spawn: setsid", err);
        case ChildStage::kStdio:
            return errno_error("spawn: redirect stdin/stdout/stderr", err);
        case ChildStage::kControllingTty:
            return errno_error("spawn: make the PTY the controlling terminal", err);
        case ChildStage::kSetup:
            return errno_error("spawn: prepare descriptors", err);
    }
    return Error{Errc::kInternal, "spawn: the child reported an unknown failure"};
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (std::string& s : strings) {
        out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
}

// The worker's environment with `extra` (NAME=VALUE, already checked) added or replacing.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    // The worker is single-threaded, and nothing calls setenv while it spawns.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        env.emplace_back(*e);
    }
    for (const std::string& entry : extra) {
        const std::string_view prefix(entry.data(), entry.find('=') + 1);  // "NAME="
        std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
        env.push_back(entry);
    }
    return env;
}

struct Pty {
    UniqueFd master;
    UniqueFd slave;
};

// A PTY pair from /dev/ptmx (the sandbox's own devpts instance), sized rows x cols, with ONLCR
// off so that output lines end in "\n" exactly as through a pipe.
Result<Pty> open_pty(uint16_t rows, uint16_t cols) {
    auto master = open_path("/dev/ptmx", O_RDWR | O_NOCTTY);
    if (!master) {
        return Error{Errc::kUnavailable,
                     fmt::format("spawn: no PTY available: {}", master.error().message),
                     master.error().sys_errno};
    }
    Pty pty;
    pty.master = std::move(*master);
    if (::unlockpt(pty.master.get()) != 0) {
        return errno_error("spawn: unlockpt", errno);
    }
    // TIOCGPTPEER opens the slave through the master, never by a name in /dev/pts that could
    // name another devpts's slave.
    const int slave = ::ioctl(pty.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave >= 0) {
        pty.slave.reset(slave);
    } else {
        std::array<char, 128> name{};
        if (int rc = ::ptsname_r(pty.master.get(), name.data(), name.size()); rc != 0) {
            return errno_error("spawn: ptsname", rc);
        }
        ASSIGN_OR_RETURN(pty.slave, open_path(name.data(), O_RDWR | O_NOCTTY));
    }
    winsize size{};
    size.ws_row = rows;
    size.ws_col = cols;
    if (::ioctl(pty.master.get(), TIOCSWINSZ, &size) != 0) {
        return errno_error("spawn: set the PTY size", errno);
    }
    termios mode{};
    if (::tcgetattr(pty.slave.get(), &mode) != 0) {
        return errno_error("spawn: tcgetattr", errno);
    }
    mode.c_oflag &= ~static_cast<tcflag_t>(ONLCR);
    if (::tcsetattr(pty.slave.get(), TCSANOW, &mode) != 0) {
        return errno_error("spawn: tcsetattr", errno);
    }
    return pty;
}

// Whether a live (not zombie) process has process group `pgid`, per /proc/<pid>/stat.
Result<bool> group_has_live_member(int pgid) {
    bool found = false;
    RETURN_IF_ERROR(for_each_process([&](const ProcStat& st) {
        found = st.pgrp == pgid && st.alive();
        return !found;
    }));
    return found;
}

}  // namespace

// ---- Commands -------------------------------------------------------------------------------

namespace {
constexpr const char* kBash = "/bin/bash";
constexpr const char* kPosixShell = "/bin/sh";
}  // namespace

Result<std::string> LocalWorkspace::find_command(const std::string& name) const {
    if (name.find('/') != std::string::npos) {
        return name;  // a path: execve resolves it in the command's cwd
    }
    // As execvp: a match that is not executable is remembered while later directories are
    // searched, and reported only when none has an executable one.
    bool denied = false;
    for (std::string_view dir : path_dirs(options_.path_env)) {
        std::string candidate = fmt::format("{}/{}", dir, name);
        struct stat st {};
        if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        denied = true;
    }
    if (denied) {
        return Error{Errc::kPermissionDenied, fmt::format("{}: permission denied", name), EACCES};
    }
    return Error{Errc::kNotFound, fmt::format("{}: command not found", name), ENOENT};
}

Result<SpawnedProcess> LocalWorkspace::spawn(const SpawnRequest& request) {
    if (request.argv.empty() || request.argv.front().empty()) {
        return Error{Errc::kInvalidArgument, "spawn: the command is empty"};
    }
    for (const std::string& arg : request.argv) {
        if (arg.find('\0') != std::string::npos) {
            return Error{Errc::kInvalidArgument, "spawn: an argument contains a NUL byte"};
        }
    }
    for (const std::string& entry : request.env) {
        const size_t eq = entry.find('=');
        if (eq == 0 || eq == std::string::npos || entry.find('\0') != std::string::npos) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("spawn: environment entry \"{}\" is not NAME=VALUE",
                                     entry.substr(0, 64))};
        }
    }
    if (request.pty && (request.rows == 0 || request.cols == 0)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("spawn: PTY size {}x{} is empty", request.rows, request.cols)};
    }
    const std::string& name = request.argv.front();
    ASSIGN_OR_RETURN(std::string exe, find_command(name));
    ASSIGN_OR_RETURN(UniqueFd cwd,
                     resolve(Root::kWorkspace, "spawn: cwd", request.cwd, O_PATH | O_DIRECTORY));

    // Everything the child needs is built before the fork: it must not allocate.
    std::vector<std::string> arg_strings = request.argv;
    // The tools run shell syntax with /bin/bash -c. An image may have no bash (busybox, alpine):
    // there the POSIX shell runs it, under its own name (busybox picks its applet by argv[0]).
    struct stat bash_st {};
    if (name == kBash && ::stat(kBash, &bash_st) != 0 && errno == ENOENT &&
        ::access(kPosixShell, X_OK) == 0) {
        exe = kPosixShell;
        arg_strings.front() = kPosixShell;
    }
    std::vector<char*> argv = c_strings(arg_strings);
    std::vector<std::string> env_strings = merged_environment(request.env);
    std::vector<char*> envp = c_strings(env_strings);

    SpawnedProcess spawned;
    UniqueFd child_out;  // the child's stdout and stderr
    UniqueFd child_in;
    if (request.pty) {
        ASSIGN_OR_RETURN(Pty pty, open_pty(request.rows, request.cols));
        spawned.output = std::move(pty.master);
        child_out = std::move(pty.slave);
    } else {
        ASSIGN_OR_RETURN(FdPair out, make_pipe());
        spawned.output = std::move(out.first);
        child_out = std::move(out.second);
    }
    int child_in_fd = -1;
    if (request.interactive && request.pty) {
        child_in_fd = child_out.get();  // the slave, also the controlling terminal
    } else if (request.interactive) {
        ASSIGN_OR_RETURN(FdPair in, make_pipe());
        child_in = std::move(in.first);
        spawned.input = std::move(in.second);
        child_in_fd = child_in.get();
    } else {
        ASSIGN_OR_RETURN(child_in, open_path("/dev/null", O_RDONLY));
        child_in_fd = child_in.get();
    }
    ASSIGN_OR_RETURN(FdPair status, make_pipe());
    ASSIGN_OR_RETURN(FdPair report, make_pipe());

    rlimit nofile{};
    int max_fd = 1 << 16;
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
        max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, rlim_t{1} << 20));
    }
    const ChildPlan plan{.exe = exe.c_str(),
                         .argv = argv.data(),
                         .envp = envp.data(),
                         .stdin_fd = child_in_fd,
                         .output_fd = child_out.get(),
                         .cwd_fd = cwd.get(),
                         .report_fd = report.second.get(),
                         .cgroup_fd = options_.commands_cgroup_fd,
                         .controlling_tty = request.pty && request.interactive,
                         .max_fd = max_fd};

    ChildTable& table = children();
    // Held from the fork until the child is in the table: reap_children (on another thread)
    // must not take it for an orphan and lose its status.
    std::lock_guard lock(table.mu);
    const pid_t pid = start_child(plan);
    if (pid < 0) {
        return errno_error("spawn: clone", errno);
    }
    child_out.reset();  // a PTY master sees EOF/EIO only once no slave is open
    child_in.reset();
    cwd.reset();
    report.second.reset();

    // EOF: execve succeeded (the report pipe closed on exec). A message: the child failed
    // before running anything and exits 127.
    std::array<int, 2> failure{};
    const ssize_t n =
        retry_eintr([&] { return ::read(report.first.get(), failure.data(), sizeof failure); });
    if (n != 0) {
        const int read_errno = errno;
        if (n != static_cast<ssize_t>(sizeof failure)) {
            (void)::kill(pid, SIGKILL);  // we cannot tell whether it runs: it must not
        }
        (void)retry_eintr([&] { return ::waitpid(pid, nullptr, 0); });
        if (n < 0) {
            return errno_error("spawn: read the child's report", read_errno);
        }
        if (n != static_cast<ssize_t>(sizeof failure)) {
            return Error{Errc::kInternal, "spawn: the child sent a truncated report"};
        }
        return child_error(static_cast<ChildStage>(failure[0]), failure[1], name, request.cwd);
    }

    // Opened while the child is unreaped (the table lock is held), so the pid is still its.
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd && errno != ENOSYS && errno != EPERM) {
        const int err = errno;
        (void)::kill(-pid, SIGKILL);
        (void)retry_eintr([&] { return ::waitpid(pid, nullptr, 0); });
        return errno_error("spawn: pidfd_open", err);
    }
    table.leaders.emplace(pid, std::move(status.second));
    diagnose(Severity::kDebug, "spawned pid={} exe={} pty={} interactive={}", pid, exe, request.pty,
             request.interactive);
    spawned.pid = pid;
    spawned.pidfd = std::move(pidfd);
    spawned.status = std::move(status.first);
    return spawned;
}

std::optional<std::chrono::milliseconds> LocalWorkspace::reap_children() {
    ChildTable& table = children();
    std::lock_guard lock(table.mu);
    // A few rounds at most: a leader that exits while the orphans are reaped is taken by the
    // next round, after its leftovers were looked for.
    for (int round = 0; round < 8; ++round) {
        const std::vector<Reaped> reaped = reap_leaders(table);
        // Also while earlier leftovers are going down: what they started comes here next.
        if (options_.stop_leftovers && (!reaped.empty() || !table.stopping.empty())) {
            stop_orphans(table, reaped);
        }
        for (const Reaped& r : reaped) {
            ExitReport report{.wait_status = r.status};
            if (auto left = table.left_by.extract(r.pid)) {
                report.leftovers = std::move(left.mapped());
            }
            if (auto it = table.leaders.find(r.pid); it != table.leaders.end()) {
                deliver_report(it->second.get(), report);
                table.leaders.erase(it);
            }
        }
        if (!reap_orphans(table)) {
            break;
        }
    }
    return kill_overdue(table);
}

Result<bool> LocalWorkspace::signal_group(ProcessGroupRef group, int signal) {
    const int pgid = group.pgid;
    if (pgid <= 1 || pgid == ::getpgrp()) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("refusing to signal process group {}: it is not a command's", pgid)};
    }
    if (signal < 0 || signal >= NSIG) {
        return Error{Errc::kInvalidArgument, fmt::format("signal {} is out of range", signal)};
    }
    ChildTable& table = children();
    // Held across the check and the kill: a tracked leader cannot be reaped meanwhile, and
    // while it is unreaped no new process can take its pid, hence its group id.
    std::lock_guard lock(table.mu);
    if (!table.leaders.contains(pgid)) {
        // The leader is gone: its id may be reused by a new process, but not as a group id
        // while any member of the old group lives. (A member dying between this scan and the
        // kill, and the id being reused within that window, would need the pid space to wrap.)
        ASSIGN_OR_RETURN(bool alive, group_has_live_member(pgid));
        if (!alive) {
            return false;
        }
    }
    if (::kill(-pgid, signal) == 0) {
        return true;
    }
    if (errno == ESRCH) {
        return false;
    }
    return errno_error(fmt::format("signal process group {}", pgid), errno);
}

Result<ProcessCensus> LocalWorkspace::census() {
    ProcessCensus census;
    std::map<int, ProcessCensus::Session> by_session;
    const int self = ::getpid();
    RETURN_IF_ERROR(for_each_process([&](const ProcStat& st) {
        if (st.pid == self || !st.alive()) {
            return true;
        }
        ++census.total;
        ProcessCensus::Session& s = by_session[st.session];
        s.sid = st.session;
        ++s.processes;
        if (s.name.empty() || st.pid == st.session) {
            s.name = st.comm;
        }
        return true;
    }));
    for (auto& [sid, session] : by_session) {
        census.sessions.push_back(std::move(session));
    }
    return census;
}

Result<std::vector<std::string>> LocalWorkspace::path_commands() {
    std::set<std::string> names;  // the kMaxPathCommands smallest
    for (std::string_view dir_path : path_dirs(options_.path_env)) {
        const std::string path(dir_path);
        const int fd =
            retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
        if (fd < 0) {
            continue;  // a PATH entry that does not exist is common and harmless
        }
        std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd), &::closedir);
        if (!dir) {
            (void)::close(fd);
            continue;
        }
        for (;;) {
            const dirent* entry = ::readdir(dir.get());  // NOLINT(concurrency-mt-unsafe): ours
            if (entry == nullptr) {
                break;
            }
            const std::string_view name(entry->d_name);
            if (name == "." || name == ".." || entry->d_type == DT_DIR) {
                continue;
            }
            if (names.size() >= kMaxPathCommands && name >= *names.rbegin()) {
                continue;
            }
            std::string owned(name);
            if (names.contains(owned)) {
                continue;
            }
            struct stat st {};
            if (::fstatat(::dirfd(dir.get()), owned.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode) ||
                ::faccessat(::dirfd(dir.get()), owned.c_str(), X_OK, 0) != 0) {
                continue;
            }
            names.insert(std::move(owned));
            if (names.size() > kMaxPathCommands) {
                names.erase(std::prev(names.end()));
            }
        }
    }
    return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace stockade::workspace
