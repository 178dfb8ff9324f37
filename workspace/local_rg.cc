#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/syscall.h"
#include "workspace/local_internal.h"
#include "workspace/local_workspace.h"

namespace stockade::workspace {

namespace {

using Clock = std::chrono::steady_clock;
using local::children;
using local::ChildTable;

constexpr size_t kPipeChunk = 64 << 10;               // what one read from rg's pipes takes at most
constexpr auto kKillGrace = std::chrono::seconds(2);  // draining pipes after the timeout kill

}  // namespace

// ---- rg -------------------------------------------------------------------------------------

Result<std::string> LocalWorkspace::find_rg() const {
    if (!options_.rg_path.empty()) {
        return options_.rg_path;
    }
    std::string_view dirs = options_.path_env;
    while (!dirs.empty()) {
        size_t colon = dirs.find(':');
        std::string_view dir = dirs.substr(0, colon);
        dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
        if (dir.empty() || dir.front() != '/') {
            continue;  // only absolute PATH entries: cwd is the workspace
        }
        std::string candidate = fmt::format("{}/rg", dir);
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return Error{
        Errc::kUnavailable,
        fmt::format("rg is not installed in the sandbox (searched PATH={})", options_.path_env)};
}

Result<RgOutcome> LocalWorkspace::run_rg(const RgRequest& request) {
    ASSIGN_OR_RETURN(std::unique_ptr<RgRun> run, start_rg(request));
    for (;;) {
        std::array<pollfd, 3> fds{};
        const size_t n = run->poll_fds(fds);
        const auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(run->wake_at() - Clock::now());
        const int ready = ::poll(fds.data(), static_cast<nfds_t>(n),
                                 static_cast<int>(std::clamp<int64_t>(wait.count(), 0, INT_MAX)));
        if (ready < 0 && errno != EINTR) {
            return errno_error("rg: poll", errno);
        }
        ASSIGN_OR_RETURN(bool over, run->advance());
        if (over) {
            return run->finish();
        }
    }
}

Result<std::unique_ptr<RgRun>> LocalWorkspace::start_rg(const RgRequest& request) {
    ASSIGN_OR_RETURN(int root_dir, root_fd(request.root));
    const std::vector<int>& carried = options_.rg_fds;
    std::string rg;
    std::vector<std::string> arg_strings;
    arg_strings.reserve(request.args.size() + 6);
    if (carried.size() == 1) {
        rg = "/proc/self/fd/3";  // a static rg
        arg_strings.emplace_back("rg");
    } else if (!carried.empty()) {
        // The host's loader runs rg with every library preloaded (rg_bundle.h): the loader at
        // fd 3, rg at 4, the libraries from 5.
        rg = "/proc/self/fd/3";
        std::string preload;
        for (size_t i = 2; i < carried.size(); ++i) {
            preload += fmt::format("{}/proc/self/fd/{}", preload.empty() ? "" : " ", 3 + i);
        }
        arg_strings.insert(arg_strings.end(),
                           {"ld.so", "--argv0", "rg", "--preload", preload, "/proc/self/fd/4"});
    } else {
        ASSIGN_OR_RETURN(rg, find_rg());
        arg_strings.emplace_back("rg");
    }

    // Everything the child needs is built before the spawn.
    for (const std::string& a : request.args) {
        if (a.find('\0') != std::string::npos) {
            return Error{Errc::kInvalidArgument, "rg: an argument contains a NUL byte"};
        }
        arg_strings.push_back(a);
    }
    std::vector<char*> argv;
    argv.reserve(arg_strings.size() + 1);
    for (std::string& a : arg_strings) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::string path_var = "PATH=" + options_.path_env;
    std::array<char*, 2> envp{path_var.data(), nullptr};

    ASSIGN_OR_RETURN(FdPair out, make_pipe());
    ASSIGN_OR_RETURN(FdPair err, make_pipe());
    ASSIGN_OR_RETURN(UniqueFd devnull, open_path("/dev/null", O_RDONLY));

    posix_spawn_file_actions_t actions;
    if (int rc = ::posix_spawn_file_actions_init(&actions); rc != 0) {
        return errno_error("rg: posix_spawn_file_actions_init", rc);
    }
    Defer destroy_actions{[&] {
        ::posix_spawn_file_actions_destroy(&actions);
    }};
    posix_spawnattr_t attr;
    if (int rc = ::posix_spawnattr_init(&attr); rc != 0) {
        return errno_error("rg: posix_spawnattr_init", rc);
    }
    Defer destroy_attr{[&] {
        ::posix_spawnattr_destroy(&attr);
    }};
    sigset_t empty_mask;
    sigset_t default_signals;
    sigemptyset(&empty_mask);
    sigemptyset(&default_signals);
    for (int sig :
         {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD}) {
        sigaddset(&default_signals, sig);
    }
    int rc = 0;
    // In the child, in order: stdin /dev/null, stdout/stderr the pipes, cwd the root (fchdir
    // accepts an O_PATH descriptor), a carried rg's descriptors at 3, 4, … (each comes from
    // above them all: no move overwrites one not yet moved), then every other descriptor
    // closed.
    for (size_t i = 0; i < carried.size(); ++i) {
        if (carried[i] < STDERR_FILENO + 1 + static_cast<int>(carried.size())) {
            return Error{Errc::kInvalidArgument, "rg: a carried descriptor is below its slot"};
        }
    }
    for (auto step : {
             ::posix_spawn_file_actions_adddup2(&actions, devnull.get(), STDIN_FILENO),
             ::posix_spawn_file_actions_adddup2(&actions, out.second.get(), STDOUT_FILENO),
             ::posix_spawn_file_actions_adddup2(&actions, err.second.get(), STDERR_FILENO),
             ::posix_spawn_file_actions_addfchdir_np(&actions, root_dir),
         }) {
        if (step != 0 && rc == 0) {
            rc = step;
        }
    }
    for (size_t i = 0; i < carried.size(); ++i) {
        const int step = ::posix_spawn_file_actions_adddup2(
            &actions, carried[i], STDERR_FILENO + 1 + static_cast<int>(i));
        if (step != 0 && rc == 0) {
            rc = step;
        }
    }
    for (auto step : {
             ::posix_spawn_file_actions_addclosefrom_np(
                 &actions, STDERR_FILENO + 1 + static_cast<int>(carried.size())),
             ::posix_spawnattr_setflags(
                 &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
             ::posix_spawnattr_setpgroup(&attr, 0),
             ::posix_spawnattr_setsigmask(&attr, &empty_mask),
             ::posix_spawnattr_setsigdefault(&attr, &default_signals),
         }) {
        if (step != 0 && rc == 0) {
            rc = step;
        }
    }
    if (rc != 0) {
        return errno_error("rg: prepare spawn", rc);
    }
    for (int fd : {out.first.get(), err.first.get()}) {
        int flags = ::fcntl(fd, F_GETFL);
        if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
            return errno_error("rg: set pipe non-blocking", errno);
        }
    }
    pid_t pid = -1;
    {
        // rg is entered in the table before reap_children (on another thread, or later on
        // this one) could see it exit: its RgRun waits for it by pid and needs its status.
        ChildTable& table = children();
        std::lock_guard lock(table.mu);
        rc = ::posix_spawn(&pid, rg.c_str(), &actions, &attr, argv.data(), envp.data());
        if (rc == 0) {
            table.waited_elsewhere.insert(pid);
        }
    }
    if (rc != 0) {
        Error e = errno_error(fmt::format("spawn \"{}\"", rg), rc);
        if (rc == ENOENT || rc == EACCES || rc == ENOEXEC) {
            e.code = Errc::kUnavailable;
        }
        return e;
    }
    // A pidfd wakes the poll when rg exits; without one (old kernel, seccomp), poll in steps.
    // Opened while rg is unreaped, so the pid is still rg's.
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    // From here the run owns the pid: its destructor kills the group and reaps rg.
    return std::unique_ptr<RgRun>(
        new RgRun(pid, std::move(out.first), std::move(err.first), std::move(pidfd), request));
}

RgRun::RgRun(pid_t pid, UniqueFd out, UniqueFd err, UniqueFd pidfd, const RgRequest& request)
    : pid_(pid),
      out_(std::move(out)),
      err_(std::move(err)),
      pidfd_(std::move(pidfd)),
      max_output_bytes_(request.max_output_bytes),
      deadline_(Clock::now() + request.timeout),
      next_look_(Clock::now()),
      buf_(kPipeChunk) {}

RgRun::~RgRun() {
    kill_and_forget();
}

void RgRun::kill_and_forget() noexcept {
    if (pid_ < 0) {
        return;
    }
    // Until reaped, rg's pid is also its process group id: killing the group is safe.
    (void)::kill(-pid_, SIGKILL);
    (void)retry_eintr([&] { return ::waitpid(pid_, nullptr, 0); });
    // Forgotten only once reaped: until then reap_children must not take it for an orphan.
    ChildTable& table = children();
    std::lock_guard lock(table.mu);
    table.waited_elsewhere.erase(pid_);
    pid_ = -1;
}

size_t RgRun::poll_fds(std::span<pollfd, 3> out) const {
    size_t n = 0;
    if (out_open_) {
        out[n++] = pollfd{out_.get(), POLLIN, 0};
    }
    if (err_open_) {
        out[n++] = pollfd{err_.get(), POLLIN, 0};
    }
    if (!exited_ && pidfd_) {
        out[n++] = pollfd{pidfd_.get(), POLLIN, 0};
    }
    return n;
}

RgRun::Clock::time_point RgRun::wake_at() const {
    const Clock::time_point at = outcome_.timed_out ? give_up_ : deadline_;
    return !exited_ && !pidfd_ ? std::min(at, next_look_) : at;
}

Result<bool> RgRun::drain(int fd, std::string& dst, size_t cap, bool* truncated) {
    size_t taken = 0;
    while (taken < kStepBytes) {
        const ssize_t n = ::read(fd, buf_.data(), buf_.size());
        if (n > 0) {
            const size_t take = std::min(static_cast<size_t>(n), cap - std::min(cap, dst.size()));
            dst.append(buf_.data(), take);
            if (take < static_cast<size_t>(n) && truncated != nullptr) {
                *truncated = true;
            }
            taken += static_cast<size_t>(n);
            continue;
        }
        if (n == 0) {
            return false;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return true;
        }
        return errno_error("rg: read output", errno);
    }
    return true;  // more may be there: the next advance() takes it
}

Result<bool> RgRun::advance() {
    const Clock::time_point now = Clock::now();
    if (!outcome_.timed_out && now >= deadline_) {
        (void)::kill(-pid_, SIGKILL);
        outcome_.timed_out = true;
        give_up_ = now + kKillGrace;
    }
    if (now >= give_up_) {
        return true;  // a pipe held open by something that escaped the group; rg is dead
    }
    if (out_open_) {
        ASSIGN_OR_RETURN(out_open_,
                         drain(out_.get(), outcome_.out, max_output_bytes_, &outcome_.truncated));
        if (!out_open_) {
            out_.reset();
        }
    }
    if (err_open_) {
        ASSIGN_OR_RETURN(err_open_, drain(err_.get(), outcome_.err, kRgMaxErrBytes, nullptr));
        if (!err_open_) {
            err_.reset();
        }
    }
    if (!exited_) {
        siginfo_t info{};
        exited_ =
            ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid_;
        if (exited_) {
            pidfd_.reset();
        } else if (!pidfd_) {
            next_look_ = Clock::now() + std::chrono::milliseconds(10);
        }
    }
    return !out_open_ && !err_open_ && exited_;
}

Result<RgOutcome> RgRun::finish() {
    // rg has exited or been killed; take down anything it left in its group, then reap.
    (void)::kill(-pid_, SIGKILL);
    int status = 0;
    const pid_t reaped = retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
    const int wait_errno = errno;
    {
        ChildTable& table = children();
        std::lock_guard lock(table.mu);
        table.waited_elsewhere.erase(pid_);
    }
    const pid_t pid = std::exchange(pid_, -1);
    if (reaped != pid) {
        return errno_error("rg: waitpid", wait_errno);
    }
    RgOutcome outcome = std::move(outcome_);
    if (outcome.timed_out) {
        outcome.exit_code = -1;
    } else if (WIFEXITED(status)) {
        outcome.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        outcome.exit_code = 128 + WTERMSIG(status);
    }
    return outcome;
}

}  // namespace stockade::workspace
