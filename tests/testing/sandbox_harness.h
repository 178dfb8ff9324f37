// The sandbox harness: runs the real `stockade` binary (or any program) as a child process with a
// hard time limit and bounded output capture, for the integration and security suites.
//
// The binaries come from the environment ctest sets: STOCKADE_BIN (the stockade CLI) and
// STOCKADE_PROBE (the in-sandbox probe, tests/security/probe.cc). tests/testing/as_user.sh runs
// every suite twice, as root and as an unprivileged user; nothing here assumes either.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace stockade::testing {

struct RunConfig {
    // Written to the child's stdin, which is then closed (an empty string: stdin is at EOF at
    // once).
    std::string stdin_data;
    // Working directory of the child; empty: the test's own.
    std::string cwd;
    // "NAME=VALUE" entries added to (or replacing in) the test's environment for the child.
    std::vector<std::string> env;
    // Names removed from the child's environment.
    std::vector<std::string> unset_env;
    // Descriptors of the test process the child inherits at the same numbers (all others close).
    std::vector<int> inherit_fds;
    // What a container would refuse the child and all it starts (tests/testing/refusals.h),
    // applied in it just before exec: user namespaces, sethostname, and (root only) a /proc
    // path masked with /dev/null in a mount namespace of its own ("": none).
    bool deny_user_namespaces = false;
    bool deny_sethostname = false;
    std::string mask_proc_path{};
    // Hard limit: the child's process group is killed with SIGKILL, the result says timed_out
    // and the current test fails.
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    // Per stream; further bytes are read and dropped (and the result says truncated).
    size_t max_capture = size_t{4} << 20;
    // After the child exits, how long to wait for the pipes to reach EOF (a process that outlived
    // it holds them open); then the result says pipes_held_open.
    std::chrono::milliseconds drain_grace{std::chrono::seconds(2)};
};

struct RunResult {
    // The exit status, or 128+N when signal N killed the child; -1 if it never ran.
    int exit_code = -1;
    int term_signal = 0;  // N when a signal killed it, else 0
    bool timed_out = false;
    bool pipes_held_open = false;
    bool out_truncated = false;
    bool err_truncated = false;
    std::string out;
    std::string err;
    std::string start_error;  // why the child could not be started (fork/exec), if it was not
    pid_t pid = -1;
    std::chrono::milliseconds elapsed{};

    // One paragraph for assertion messages: status, timing, stdout and stderr (shortened).
    [[nodiscard]] std::string describe() const;
};

// gtest prints a RunResult through describe() instead of as raw bytes.
void PrintTo(const RunResult& result, std::ostream* os);

// A child process started with the harness's rules, for tests that act while it runs (signal
// it, inspect /proc, wait for a file). The destructor kills and reaps it if nobody waited.
class ChildProcess {
public:
    // Starts `argv` (argv[0] is a path, not searched in PATH). Never throws; check running().
    static ChildProcess start(const std::vector<std::string>& argv, const RunConfig& config = {});

    ChildProcess(ChildProcess&& other) noexcept;
    ChildProcess& operator=(ChildProcess&& other) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess();

    [[nodiscard]] bool running() const { return pid_ > 0 && !reaped_; }
    [[nodiscard]] pid_t pid() const { return pid_; }
    // Sends `sig` to the child itself (not its process group). False if it is gone.
    bool signal(int sig) const;
    // Reads output until the child exits (and the pipes drain), enforcing the timeout counted
    // from start(). Call once.
    RunResult wait();

private:
    ChildProcess() = default;
    void close_all() noexcept;
    void kill_and_reap() noexcept;

    RunConfig config_;
    pid_t pid_ = -1;
    int pidfd_ = -1;
    int in_ = -1;
    int out_ = -1;
    int err_ = -1;
    bool reaped_ = false;
    std::string start_error_;
    std::chrono::steady_clock::time_point started_{};
};

// Runs argv to completion.
RunResult run_process(const std::vector<std::string>& argv, const RunConfig& config = {});

// Runs `$STOCKADE_BIN args...` to completion, e.g. run_stockade({"run", "--", "true"}).
RunResult run_stockade(const std::vector<std::string>& args, const RunConfig& config = {});

// Starts `$STOCKADE_BIN args...` without waiting.
ChildProcess start_stockade(const std::vector<std::string>& args, const RunConfig& config = {});

// The pids of the stockade processes started since the last call (by run_stockade and
// start_stockade), for checks after a test: e.g. that no cgroup named after one remains.
std::vector<pid_t> take_started_stockade_pids();

// The cgroup directories of stockade run <pid>'s sandbox that exist now
// (/sys/fs/cgroup/*/stockade/run-<pid>-* and the same under a cgroup2 root).
std::vector<std::string> sandbox_cgroup_dirs(pid_t stockade_pid);

// $STOCKADE_BIN / $STOCKADE_PROBE; empty if unset (run the suites through ctest, which sets
// them). run_stockade reports an unset STOCKADE_BIN as a start_error.
std::string stockade_path();
std::string probe_path();
// The directory holding the probe, to pass with --ro.
std::string probe_dir();

bool running_as_root();

// The level `stockade run --isolation auto` picks on this host for this caller, from
// `stockade doctor` (asked once per process): "full", "namespaces", "landlock", "none", or ""
// if doctor could not say. The doctor's full report is in *report when given.
std::string auto_isolation_level(std::string* report = nullptr);

// A fresh directory (mkdtemp under $TMPDIR, else /tmp), mode 0755 so that the sandbox user can
// traverse it, removed recursively (with its contents, whatever their modes) on destruction.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "stockade-test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    [[nodiscard]] const std::string& path() const { return path_; }
    // path()/relative
    [[nodiscard]] std::string sub(const std::string& relative) const;
    // Creates path()/relative (one level) with `mode`; returns its path.
    std::string make_dir(const std::string& relative, mode_t mode = 0755) const;
    // Writes path()/relative with `mode`; returns its path.
    std::string write_file(const std::string& relative, const std::string& content,
                           mode_t mode = 0644) const;

private:
    std::string path_;
};

// Whole-file read; nullopt if it cannot be opened.
std::optional<std::string> read_file_text(const std::string& path);

// Removes a tree whatever the modes inside it; true on success (or if it did not exist).
bool remove_tree(const std::string& path);

// readlink("/proc/<pid>/ns/<type>"), e.g. "pid:[4026531836]"; pid 0 means this process. Empty if
// it cannot be read.
std::string namespace_of(pid_t pid, const std::string& type);

// Every process (of those this one may inspect) whose pid namespace is `ns` (a namespace_of
// value), i.e. what is left of a sandbox after its pid 1 is gone.
std::vector<pid_t> processes_in_pid_namespace(const std::string& ns);

// The processes whose parent is `pid` (from /proc/*/stat: /proc/PID/task/*/children needs
// CONFIG_PROC_CHILDREN, which not every kernel has).
std::vector<pid_t> children_of(pid_t parent);

// Every process whose command line is exactly `argv`.
std::vector<pid_t> processes_with_cmdline(const std::vector<std::string>& argv);

// The lines of `text`, without their terminators; a final empty line is dropped.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace stockade::testing
