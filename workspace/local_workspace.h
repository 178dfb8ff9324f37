// LocalWorkspace: the Workspace over real syscalls. It runs in the sandbox worker (behind
// serve_channel), where its paths can only resolve inside the sandbox's own view; tests and
// `--isolation none` use it directly.
//
// Each root is an O_PATH directory descriptor opened once; every path is resolved beneath it
// with open_beneath (openat2 RESOLVE_BENEATH, or the O_NOFOLLOW walk), so neither a symlink nor
// ".." reaches outside the root. The spill root is read-only: write and make_dirs on it fail
// with kPermissionDenied before touching the disk.
//
// Children: spawn starts commands for the bash and process tools; their status pipes (and rg's
// pid while a run of it is unreaped) are kept in one process-wide table, since waitpid reaps per
// process, not per object. reap_children collects exited children (and, where the worker is
// pid 1 of its namespace, the orphans reparented to it) and delivers each spawned leader's
// wait status.
//
// Implemented in three files: local_workspace.cc (construction and files), local_rg.cc (rg)
// and local_commands.cc (commands and reaping); local_internal.h has what they share.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "workspace/open_beneath.h"
#include "workspace/snapshot.h"
#include "workspace/workspace.h"

namespace stockade::workspace {

// One rg run in progress, started by LocalWorkspace::start_rg and driven by its owner's poll
// loop: poll poll_fds() for POLLIN, call advance() when one of them is ready or wake_at() has
// come, and finish() once advance() returned true. run_rg drives one this way and waits;
// serve_channel drives several beside the channel, so that rg never blocks the worker.
//
// rg runs in its own process group; at the timeout the whole group is SIGKILLed. The run owns
// rg's pid until it is reaped: the pid stays in the process-wide child table (reap_children
// leaves it alone) until finish() or the destructor, which SIGKILLs the group and reaps rg.
// Thread: one thread drives a run (not thread-safe); reap_children may run on another.
class RgRun {
public:
    using Clock = std::chrono::steady_clock;

    RgRun(const RgRun&) = delete;
    RgRun& operator=(const RgRun&) = delete;
    RgRun(RgRun&&) = delete;
    RgRun& operator=(RgRun&&) = delete;
    ~RgRun();

    // The descriptors to poll for POLLIN: stdout and stderr while open, the pidfd until rg
    // exits. Writes them to the front of `out` and returns how many.
    size_t poll_fds(std::span<pollfd, 3> out) const;
    // When advance() must run even if no descriptor is ready: the timeout, the end of the grace
    // for the pipes after the kill, or the next look at rg where there is no pidfd.
    [[nodiscard]] Clock::time_point wake_at() const;
    // Reads what the pipes hold (at most kStepBytes each per call, so that one chatty rg does
    // not starve its owner's other work), kills the group at the timeout, looks whether rg
    // exited. true: the run is over (finish() is next); never blocks.
    Result<bool> advance();
    // Precondition: advance() returned true. Kills what rg left in its group, reaps rg.
    Result<RgOutcome> finish();

    static constexpr size_t kStepBytes = size_t{1} << 20;

private:
    friend class LocalWorkspace;
    RgRun(pid_t pid, UniqueFd out, UniqueFd err, UniqueFd pidfd, const RgRequest& request);
    // Reads `fd` until EAGAIN or kStepBytes; bytes past `cap` are read and dropped. false: EOF.
    Result<bool> drain(int fd, std::string& dst, size_t cap, bool* truncated);
    void kill_and_forget() noexcept;

    pid_t pid_ = -1;  // rg, unreaped while >= 0; also its process group id
    UniqueFd out_;
    UniqueFd err_;
    UniqueFd pidfd_;  // invalid where pidfd_open is unavailable: wake_at() then polls in steps
    size_t max_output_bytes_ = 0;
    Clock::time_point deadline_;
    Clock::time_point give_up_ = Clock::time_point::max();
    Clock::time_point next_look_{};  // without a pidfd: when to look whether rg exited
    bool out_open_ = true;
    bool err_open_ = true;
    bool exited_ = false;
    RgOutcome outcome_{};
    std::vector<char> buf_;
};

class LocalWorkspace final : public Workspace {
public:
    struct Options {
        ResolveMode resolve = ResolveMode::kAuto;
        // rg's environment is exactly PATH=<path_env>; rg itself is found on it.
        std::string path_env = "/usr/local/bin:/usr/bin:/bin";
        // An explicit rg executable (tests); empty: "rg" on path_env.
        std::string rg_path{};
        // A ripgrep carried in by descriptor (runner/session/rg_bundle.h), used instead of
        // rg_path and path_env: the host's dynamic loader, rg and its libraries, or a static
        // rg alone. rg gets them as its fds 3, 4, …, so each must be at least 3 + their count
        // (the worker keeps them above 128). Owned by the caller, open while this lives.
        std::vector<int> rg_fds{};
        // What a command leaves running when its leader ends is stopped (SIGTERM, then
        // SIGKILL after kLeftoverGrace) and reported with the leader's status. For a process
        // that receives the orphans of its commands: the worker (pid 1 of the sandbox), or a
        // test that made itself a child subreaper. Spawned leaders are subreapers themselves,
        // so what a command starts stays beneath it until it ends.
        bool stop_leftovers = false;
        // cgroup.procs of the commands' memory cgroup (sandbox::SandboxSpec::commands_cgroup):
        // each spawned command moves itself there before it execs; -1: they stay in this
        // process's cgroup.
        int commands_cgroup_fd = -1;
    };

    // Opens both roots (O_PATH | O_DIRECTORY). An empty spill_root means the session has no
    // spill directory: calls on Root::kSpill then fail with kUnavailable.
    static Result<LocalWorkspace> open(std::string workspace_root, std::string spill_root,
                                       Options options);
    static Result<LocalWorkspace> open(std::string workspace_root, std::string spill_root) {
        return open(std::move(workspace_root), std::move(spill_root), Options{});
    }

    LocalWorkspace(LocalWorkspace&&) noexcept = default;
    LocalWorkspace& operator=(LocalWorkspace&&) noexcept = default;
    LocalWorkspace(const LocalWorkspace&) = delete;
    LocalWorkspace& operator=(const LocalWorkspace&) = delete;
    ~LocalWorkspace() override = default;

    [[nodiscard]] std::string root_path(Root root) const override;
    Result<FileInfo> stat(Root root, const std::string& path) override;
    Result<RealPath> real_path(Root root, const std::string& path) override;
    Result<ReadData> read(Root root, const std::string& path, uint64_t max_bytes) override;
    Result<WriteOutcome> write(const WriteRequest& request) override;
    Status make_dirs(Root root, const std::string& path) override;
    Result<std::vector<DirEntry>> list(Root root, const std::string& path,
                                       size_t max_entries) override;
    // rg with cwd = the root, stdin /dev/null, env PATH only, in its own process group; the
    // timeout SIGKILLs the group. Output past max_output_bytes is read and dropped. Blocks
    // until rg ends: start_rg and drive the run instead to do other work meanwhile.
    Result<RgOutcome> run_rg(const RgRequest& request) override;
    // Starts rg as run_rg does and returns at once; the timeout counts from now. Errors are
    // run_rg's (rg missing: kUnavailable; a NUL in an argument: kInvalidArgument).
    Result<std::unique_ptr<RgRun>> start_rg(const RgRequest& request);

    // fork + execve (see SpawnRequest): a new session, stdio dup'ed, signal dispositions and
    // mask reset, cwd beneath the workspace root, every other descriptor closed. argv[0] is
    // looked up on Options::path_env; the environment is the worker's plus request.env. An
    // exec failure is reported here (through a CLOEXEC pipe), not as a child exiting 127.
    Result<SpawnedProcess> spawn(const SpawnRequest& request) override;
    // kill(-pgid) while the leader is unreaped (its pid cannot be reused meanwhile); after
    // that only if /proc shows a live (non-zombie) member of the group. The epoch is ignored:
    // whoever hands out epochs checks them.
    Result<bool> signal_group(ProcessGroupRef group, int signal) override;
    // Executable regular files (or symlinks to one) in the absolute directories of
    // Options::path_env; the kMaxPathCommands smallest names.
    Result<std::vector<std::string>> path_commands() override;
    // Every process /proc shows but this one, by session.
    Result<ProcessCensus> census() override;
    // The walk and the restore of workspace/snapshot.h, beneath the workspace root.
    Result<Snapshot> snapshot(const SnapshotRequest& request) override;
    Result<RestoreOutcome> restore(const RestoreRequest& request) override;

    // Reaps every exited child without blocking: a spawned leader's exit report (its wait
    // status and, with Options::stop_leftovers, what it left running: workspace/exit_report.h)
    // goes to its status pipe, which is then closed; other exited children — orphans that
    // were reparented to this process — are reaped and dropped. rg's pid is left to its RgRun.
    // Returns how long until it must be called again (a leftover's SIGKILL is due), or
    // nullopt. Thread-safe. serve_channel calls it on SIGCHLD, after each reply and when the
    // time it returned has passed.
    std::optional<std::chrono::milliseconds> reap_children();

    static constexpr size_t kMaxPathCommands = 20'000;
    static constexpr std::chrono::milliseconds kLeftoverGrace{2000};

private:
    struct RootDir {
        std::string path{};
        UniqueFd fd{};
    };

    LocalWorkspace(RootDir workspace, RootDir spill, Options options);
    Result<int> root_fd(Root root) const;
    Result<int> writable_root_fd(Root root, std::string_view op, const std::string& path) const;
    Result<UniqueFd> resolve(Root root, std::string_view op, const std::string& path,
                             int flags) const;
    Result<std::string> find_rg() const;
    // argv[0] as spawn executes it: unchanged when it has a '/', else found on path_env.
    Result<std::string> find_command(const std::string& name) const;

    RootDir workspace_;
    RootDir spill_;
    Options options_;
    std::unique_ptr<SnapshotIndex> snapshots_ = std::make_unique<SnapshotIndex>();
};

}  // namespace stockade::workspace
