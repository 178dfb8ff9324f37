#include "tests/testing/sandbox_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <utility>

#include <gtest/gtest.h>

#include "tests/testing/refusals.h"

extern char** environ;  // NOLINT: POSIX

namespace stockade::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string errno_text(const char* what, int err) {
    const char* name = ::strerrorname_np(err);
    return std::string(what) + ": " + (name != nullptr ? name : std::to_string(err)) + " (" +
           ::strerrordesc_np(err) + ")";
}

void close_fd(int& fd) noexcept {
    if (fd >= 0) {
        (void)::close(fd);
        fd = -1;
    }
}

// Our environment with config's unsets and overrides applied, as "NAME=VALUE" strings.
std::vector<std::string> child_environment(const RunConfig& config) {
    auto name_of = [](const std::string& entry) {
        return entry.substr(0, entry.find('='));
    };
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string entry(*e);
        std::string name = name_of(entry);
        bool dropped = std::find(config.unset_env.begin(), config.unset_env.end(), name) !=
                       config.unset_env.end();
        bool replaced = std::any_of(config.env.begin(), config.env.end(),
                                    [&](const std::string& o) { return name_of(o) == name; });
        if (!dropped && !replaced) {
            env.push_back(std::move(entry));
        }
    }
    env.insert(env.end(), config.env.begin(), config.env.end());
    return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) {
        out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
}

void append_bounded(std::string& to, const char* data, size_t n, size_t limit, bool& truncated) {
    size_t room = to.size() < limit ? limit - to.size() : 0;
    if (n > room) {
        truncated = true;
        n = room;
    }
    to.append(data, n);
}

std::string shortened(const std::string& text, size_t limit) {
    if (text.size() <= limit) {
        return text;
    }
    return text.substr(0, limit / 2) + "\n[... " + std::to_string(text.size() - limit) +
           " bytes ...]\n" + text.substr(text.size() - limit / 2);
}

// In the forked child: reports errno on the exec-error pipe and exits. Async-signal-safe.
[[noreturn]] void child_fail(int pipe_fd) {
    int e = errno;
    if (::write(pipe_fd, &e, sizeof e) < 0) {
        ::_exit(126);
    }
    ::_exit(127);
}

// In the forked child: what RunConfig says a container refuses it. The mask comes first: it needs
// a mount, which a filter may not deny but no_new_privs does not hinder either.
int apply_refusals(const RunConfig& config) noexcept {
    if (!config.mask_proc_path.empty()) {
        if (int err = mask_with_dev_null(config.mask_proc_path.c_str()); err != 0) {
            return err;
        }
    }
    if (config.deny_user_namespaces) {
        if (int err = deny_user_namespaces(); err != 0) {
            return err;
        }
    }
    if (config.deny_sethostname) {
        if (int err = deny_sethostname(); err != 0) {
            return err;
        }
    }
    return 0;
}

int status_code(int status, int& term_signal) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        term_signal = WTERMSIG(status);
        return 128 + term_signal;
    }
    return -1;
}

bool remove_at(int parent, const char* name) {
    if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) {
        return true;
    }
    if (errno != EISDIR && errno != EPERM) {
        return false;
    }
    int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    (void)::fchmod(fd, 0700);  // a read-only directory made by a test cannot be emptied otherwise
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
        (void)::close(fd);
        return false;
    }
    bool ok = true;
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): a private DIR
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
            names.emplace_back(entry->d_name);
        }
    }
    for (const auto& child : names) {
        ok = remove_at(::dirfd(dir), child.c_str()) && ok;
    }
    ::closedir(dir);
    return ::unlinkat(parent, name, AT_REMOVEDIR) == 0 && ok;
}

}  // namespace

std::string RunResult::describe() const {
    std::string text;
    if (!start_error.empty()) {
        text = "could not start: " + start_error + "\n";
    }
    text += "exit " + std::to_string(exit_code);
    if (term_signal != 0) {
        text += " (signal " + std::to_string(term_signal) + ")";
    }
    text += " after " + std::to_string(elapsed.count()) + " ms";
    if (timed_out) {
        text += ", TIMED OUT and killed by the harness";
    }
    if (pipes_held_open) {
        text += ", output pipes still open after exit (a process outlived it)";
    }
    text += "\n--- stdout" + std::string(out_truncated ? " (truncated)" : "") + ":\n" +
            shortened(out, 3000) + "\n--- stderr" + (err_truncated ? " (truncated)" : "") + ":\n" +
            shortened(err, 3000) + "\n---";
    return text;
}

void PrintTo(const RunResult& result, std::ostream* os) {
    *os << result.describe();
}

ChildProcess ChildProcess::start(const std::vector<std::string>& argv, const RunConfig& config) {
    ChildProcess child;
    child.config_ = config;
    child.started_ = Clock::now();
    if (argv.empty() || argv[0].empty()) {
        child.start_error_ = "empty command";
        return child;
    }
    std::vector<std::string> args = argv;
    std::vector<std::string> env = child_environment(config);
    std::vector<char*> c_args = c_strings(args);
    std::vector<char*> c_env = c_strings(env);
    std::vector<int> keep = config.inherit_fds;
    const char* cwd = config.cwd.empty() ? nullptr : config.cwd.c_str();

    std::array<int, 2> in{-1, -1};
    std::array<int, 2> out{-1, -1};
    std::array<int, 2> err{-1, -1};
    std::array<int, 2> exec_err{-1, -1};
    auto close_pair = [](std::array<int, 2>& p) {
        close_fd(p[0]);
        close_fd(p[1]);
    };
    if (::pipe2(in.data(), O_CLOEXEC) != 0 || ::pipe2(out.data(), O_CLOEXEC) != 0 ||
        ::pipe2(err.data(), O_CLOEXEC) != 0 || ::pipe2(exec_err.data(), O_CLOEXEC) != 0) {
        child.start_error_ = errno_text("pipe2", errno);
        close_pair(in);
        close_pair(out);
        close_pair(err);
        close_pair(exec_err);
        return child;
    }

    pid_t pid = ::fork();
    if (pid < 0) {
        child.start_error_ = errno_text("fork", errno);
        close_pair(in);
        close_pair(out);
        close_pair(err);
        close_pair(exec_err);
        return child;
    }
    if (pid == 0) {
        // Child of a (possibly multi-threaded) test: async-signal-safe calls only from here on.
        (void)::setpgid(0, 0);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) {
            (void)::sigaction(sig, &dfl, nullptr);  // ignored signals would survive exec
        }
        sigset_t none;
        ::sigemptyset(&none);
        // NOLINTNEXTLINE(concurrency-mt-unsafe): the forked child has one thread
        (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
        int std_fds[3] = {in[0], out[1], err[1]};
        for (int target = 0; target < 3; ++target) {
            if (std_fds[target] == target) {
                (void)::fcntl(target, F_SETFD, 0);
            } else if (::dup2(std_fds[target], target) < 0) {
                child_fail(exec_err[1]);
            }
        }
        (void)::close_range(3, UINT_MAX, CLOSE_RANGE_CLOEXEC);
        for (int fd : keep) {
            (void)::fcntl(fd, F_SETFD, 0);
        }
        if (cwd != nullptr && ::chdir(cwd) != 0) {
            child_fail(exec_err[1]);
        }
        if (int refused = apply_refusals(config); refused != 0) {
            errno = refused;
            child_fail(exec_err[1]);
        }
        ::execve(c_args[0], c_args.data(), c_env.data());
        child_fail(exec_err[1]);
    }

    child.pid_ = pid;
    close_fd(in[0]);
    close_fd(out[1]);
    close_fd(err[1]);
    close_fd(exec_err[1]);
    int exec_errno = 0;
    ssize_t got = 0;
    do {
        got = ::read(exec_err[0], &exec_errno, sizeof exec_errno);
    } while (got < 0 && errno == EINTR);
    close_fd(exec_err[0]);
    child.in_ = in[1];
    child.out_ = out[0];
    child.err_ = err[0];
    if (got == static_cast<ssize_t>(sizeof exec_errno)) {
        child.start_error_ = errno_text(("exec \"" + argv[0] + "\"").c_str(), exec_errno);
    }
    child.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1: poll with waitpid
    for (int fd : {child.in_, child.out_, child.err_}) {
        (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    if (config.stdin_data.empty()) {
        close_fd(child.in_);
    }
    return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : config_(std::move(other.config_)),
      pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      in_(std::exchange(other.in_, -1)),
      out_(std::exchange(other.out_, -1)),
      err_(std::exchange(other.err_, -1)),
      reaped_(std::exchange(other.reaped_, false)),
      start_error_(std::move(other.start_error_)),
      started_(other.started_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
        kill_and_reap();
        close_all();
        config_ = std::move(other.config_);
        pid_ = std::exchange(other.pid_, -1);
        pidfd_ = std::exchange(other.pidfd_, -1);
        in_ = std::exchange(other.in_, -1);
        out_ = std::exchange(other.out_, -1);
        err_ = std::exchange(other.err_, -1);
        reaped_ = std::exchange(other.reaped_, false);
        start_error_ = std::move(other.start_error_);
        started_ = other.started_;
    }
    return *this;
}

ChildProcess::~ChildProcess() {
    kill_and_reap();
    close_all();
}

void ChildProcess::kill_and_reap() noexcept {
    if (pid_ > 0 && !reaped_) {
        (void)::kill(-pid_, SIGKILL);
        (void)::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
    }
}

void ChildProcess::close_all() noexcept {
    close_fd(pidfd_);
    close_fd(in_);
    close_fd(out_);
    close_fd(err_);
}

bool ChildProcess::signal(int sig) const {
    return pid_ > 0 && !reaped_ && ::kill(pid_, sig) == 0;
}

RunResult ChildProcess::wait() {
    RunResult result;
    result.pid = pid_;
    result.start_error = start_error_;
    if (pid_ <= 0 || reaped_) {
        result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
        close_all();
        return result;
    }
    const Clock::time_point deadline = started_ + config_.timeout;
    std::optional<Clock::time_point> drain_until;  // set once the child has exited
    size_t written = 0;
    std::array<char, 65536> buf{};
    int status = 0;

    auto try_reap = [&] {
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            reaped_ = true;
            drain_until = Clock::now() + config_.drain_grace;
            close_fd(pidfd_);
            close_fd(in_);
        }
    };

    while (!reaped_ || out_ >= 0 || err_ >= 0) {
        Clock::time_point now = Clock::now();
        if (!result.timed_out && now >= deadline && !reaped_) {
            result.timed_out = true;
            (void)::kill(-pid_, SIGKILL);
            (void)::kill(pid_, SIGKILL);
        }
        if (drain_until && now >= *drain_until) {
            result.pipes_held_open = out_ >= 0 || err_ >= 0;
            break;
        }
        std::array<pollfd, 4> fds{};
        nfds_t n = 0;
        int out_slot = -1;
        int err_slot = -1;
        int in_slot = -1;
        int pid_slot = -1;
        if (out_ >= 0) {
            out_slot = static_cast<int>(n);
            fds[n++] = pollfd{out_, POLLIN, 0};
        }
        if (err_ >= 0) {
            err_slot = static_cast<int>(n);
            fds[n++] = pollfd{err_, POLLIN, 0};
        }
        if (in_ >= 0) {
            in_slot = static_cast<int>(n);
            fds[n++] = pollfd{in_, POLLOUT, 0};
        }
        if (!reaped_ && pidfd_ >= 0) {
            pid_slot = static_cast<int>(n);
            fds[n++] = pollfd{pidfd_, POLLIN, 0};
        }
        Clock::time_point wake = drain_until ? *drain_until : deadline;
        if (result.timed_out && !drain_until) {
            wake = now + milliseconds(50);  // SIGKILL sent: wait for the exit
        }
        auto wait_ms = std::chrono::duration_cast<milliseconds>(wake - now).count();
        wait_ms = std::clamp<decltype(wait_ms)>(wait_ms, 0, pidfd_ >= 0 || reaped_ ? 1000 : 50);
        int ready = ::poll(fds.data(), n, static_cast<int>(wait_ms));
        if (ready < 0 && errno != EINTR) {
            break;
        }
        auto drain = [&](int slot, int& fd, std::string& to, bool& truncated) {
            if (slot < 0 || fds[static_cast<size_t>(slot)].revents == 0) {
                return;
            }
            ssize_t got = ::read(fd, buf.data(), buf.size());
            if (got > 0) {
                append_bounded(to, buf.data(), static_cast<size_t>(got), config_.max_capture,
                               truncated);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                close_fd(fd);
            }
        };
        drain(out_slot, out_, result.out, result.out_truncated);
        drain(err_slot, err_, result.err, result.err_truncated);
        if (in_slot >= 0 && fds[static_cast<size_t>(in_slot)].revents != 0) {
            const std::string& data = config_.stdin_data;
            ssize_t put = ::write(in_, data.data() + written, data.size() - written);
            if (put > 0) {
                written += static_cast<size_t>(put);
            }
            if ((put < 0 && errno != EINTR && errno != EAGAIN) || written >= data.size()) {
                close_fd(in_);
            }
        }
        if (!reaped_ &&
            (pidfd_ < 0 || (pid_slot >= 0 && fds[static_cast<size_t>(pid_slot)].revents != 0))) {
            try_reap();
        }
    }
    if (!reaped_) {
        (void)::kill(-pid_, SIGKILL);
        (void)::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
    }
    result.exit_code = status_code(status, result.term_signal);
    result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
    close_all();
    if (result.timed_out) {
        ADD_FAILURE() << "the harness killed the child after its " << config_.timeout.count()
                      << " ms limit: " << result.describe();
    }
    return result;
}

RunResult run_process(const std::vector<std::string>& argv, const RunConfig& config) {
    return ChildProcess::start(argv, config).wait();
}

namespace {

std::mutex started_mutex;
std::vector<pid_t> started_pids;  // Guarded by started_mutex.

}  // namespace

ChildProcess start_stockade(const std::vector<std::string>& args, const RunConfig& config) {
    std::vector<std::string> argv;
    argv.push_back(stockade_path());
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess child = ChildProcess::start(argv, config);
    if (child.pid() > 0) {
        std::lock_guard<std::mutex> lock(started_mutex);
        started_pids.push_back(child.pid());
    }
    return child;
}

std::vector<pid_t> take_started_stockade_pids() {
    std::lock_guard<std::mutex> lock(started_mutex);
    return std::exchange(started_pids, {});
}

std::vector<std::string> sandbox_cgroup_dirs(pid_t stockade_pid) {
    std::vector<std::string> dirs;
    std::string leaf = "stockade/run-" + std::to_string(stockade_pid) + "-*";
    for (const std::string& pattern : {"/sys/fs/cgroup/*/" + leaf, "/sys/fs/cgroup/" + leaf}) {
        glob_t g{};
        // NOLINTNEXTLINE(concurrency-mt-unsafe): tests do not change the locale or environment
        if (::glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; ++i) {
                dirs.emplace_back(g.gl_pathv[i]);
            }
        }
        ::globfree(&g);
    }
    return dirs;
}

RunResult run_stockade(const std::vector<std::string>& args, const RunConfig& config) {
    if (stockade_path().empty()) {
        RunResult result;
        result.start_error = "STOCKADE_BIN is not set: run this suite through ctest";
        return result;
    }
    return start_stockade(args, config).wait();
}

std::string stockade_path() {
    const char* path = std::getenv("STOCKADE_BIN");  // NOLINT(concurrency-mt-unsafe): read-only
    return path != nullptr ? path : "";
}

std::string probe_path() {
    const char* path = std::getenv("STOCKADE_PROBE");  // NOLINT(concurrency-mt-unsafe): read-only
    return path != nullptr ? path : "";
}

std::string probe_dir() {
    std::string path = probe_path();
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool running_as_root() {
    return ::geteuid() == 0;
}

std::string auto_isolation_level(std::string* report) {
    static std::once_flag once;
    static std::string level;
    static std::string doctor_output;
    std::call_once(once, [] {
        if (stockade_path().empty()) {
            return;
        }
        RunResult doctor = run_stockade({"doctor"});
        doctor_output = doctor.out + doctor.err;
        const std::string marker = "--isolation auto chooses \"";
        size_t at = doctor_output.find(marker);
        if (at != std::string::npos) {
            size_t start = at + marker.size();
            size_t end = doctor_output.find('"', start);
            if (end != std::string::npos) {
                level = doctor_output.substr(start, end - start);
            }
        }
    });
    if (report != nullptr) {
        *report = doctor_output;
    }
    return level;
}

TempDir::TempDir(const std::string& prefix) {
    const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read-only
    std::string dir = (base != nullptr && *base != '\0') ? base : "/tmp";
    std::string pattern = dir + "/" + prefix + ".XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        // Every use of a TempDir builds paths under it: going on with an empty path would touch
        // the host's root directory instead.
        (void)std::fprintf(stderr, "TempDir: mkdtemp \"%s\": %s\n", pattern.c_str(),
                           ::strerrordesc_np(errno));
        std::abort();
    }
    path_ = pattern;
    (void)::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
    if (!path_.empty()) {
        (void)remove_tree(path_);
    }
}

std::string TempDir::sub(const std::string& relative) const {
    return path_ + "/" + relative;
}

std::string TempDir::make_dir(const std::string& relative, mode_t mode) const {
    std::string path = sub(relative);
    (void)::mkdir(path.c_str(), mode);
    (void)::chmod(path.c_str(), mode);  // past the umask
    return path;
}

std::string TempDir::write_file(const std::string& relative, const std::string& content,
                                mode_t mode) const {
    std::string path = sub(relative);
    std::error_code ec;  // parents as needed: "a/b/c.txt"
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd >= 0) {
        size_t done = 0;
        while (done < content.size()) {
            ssize_t put = ::write(fd, content.data() + done, content.size() - done);
            if (put <= 0) {
                break;
            }
            done += static_cast<size_t>(put);
        }
        (void)::fchmod(fd, mode);
        (void)::close(fd);
    }
    return path;
}

std::optional<std::string> read_file_text(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return std::nullopt;
    }
    std::string text;
    std::array<char, 8192> buf{};
    ssize_t got = 0;
    while ((got = ::read(fd, buf.data(), buf.size())) > 0) {
        text.append(buf.data(), static_cast<size_t>(got));
    }
    (void)::close(fd);
    return text;
}

bool remove_tree(const std::string& path) {
    return remove_at(AT_FDCWD, path.c_str());
}

std::string namespace_of(pid_t pid, const std::string& type) {
    std::string link =
        (pid == 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid)) + "/ns/" + type;
    std::array<char, 128> target{};
    ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
    return n > 0 ? std::string(target.data(), static_cast<size_t>(n)) : std::string();
}

namespace {

std::vector<pid_t> all_pids() {
    std::vector<pid_t> pids;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return pids;
    }
    while (dirent* entry = ::readdir(proc)) {  // NOLINT(concurrency-mt-unsafe): a private DIR
        char* end = nullptr;
        long pid = std::strtol(entry->d_name, &end, 10);
        if (end != entry->d_name && *end == '\0' && pid > 0) {
            pids.push_back(static_cast<pid_t>(pid));
        }
    }
    ::closedir(proc);
    return pids;
}

}  // namespace

std::vector<pid_t> processes_in_pid_namespace(const std::string& ns) {
    std::vector<pid_t> found;
    if (ns.empty()) {
        return found;
    }
    for (pid_t pid : all_pids()) {
        if (namespace_of(pid, "pid") == ns) {
            found.push_back(pid);
        }
    }
    return found;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> found;
    for (pid_t pid : all_pids()) {
        auto stat = read_file_text("/proc/" + std::to_string(pid) + "/stat");
        if (!stat) {
            continue;
        }
        size_t paren = stat->rfind(')');  // the command name may hold spaces and parentheses
        if (paren == std::string::npos) {
            continue;
        }
        // " S PPID ...": the state, then the parent's pid.
        const char* fields = stat->c_str() + paren + 1;
        while (*fields == ' ') {
            ++fields;
        }
        if (*fields == '\0' || fields[1] != ' ') {
            continue;
        }
        char* end = nullptr;
        long ppid = std::strtol(fields + 2, &end, 10);
        if (end != fields + 2 && ppid == parent) {
            found.push_back(pid);
        }
    }
    return found;
}

std::vector<pid_t> processes_with_cmdline(const std::vector<std::string>& argv) {
    std::string wanted;
    for (const auto& arg : argv) {
        wanted += arg;
        wanted.push_back('\0');
    }
    std::vector<pid_t> found;
    for (pid_t pid : all_pids()) {
        auto cmdline = read_file_text("/proc/" + std::to_string(pid) + "/cmdline");
        if (cmdline && *cmdline == wanted) {
            found.push_back(pid);
        }
    }
    return found;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            lines.push_back(text.substr(start));
            break;
        }
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

}  // namespace stockade::testing
