// The session's ProcessManager (TOOL_PROTOCOL §8.2, DESIGN.md §1): commands are spawned by the
// sandboxed worker, which hands back the output pipe or PTY master, a pidfd and a status pipe;
// from then on the supervisor owns them. One Asio thread reads every output into a ring buffer
// (2 MiB / 10,000 lines per process) and appends it to a log file that keeps everything up to
// a cap; exits are recorded when the worker reports them, whether or not anyone is waiting.
// Stopping signals the whole process group through the worker (SIGTERM, grace, SIGKILL); the
// supervisor never signals a pid number itself, so a recycled pid is never hit.
//
//   ProcessManagerImpl pm(worker, {.log_dir = paths.tool_output + "/process-logs"}, events);
//   auto p = pm.start({.command = "npm run dev", .argv = {"/bin/bash", "-c", "npm run dev"}});
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/event_sink.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "runner/session/output_budget.h"
#include "runner/session/session_meters.h"
#include "tools/process_manager.h"
#include "workspace/exit_report.h"
#include "workspace/workspace.h"

namespace stockade::runner {

class SandboxNetwork;

struct ProcessManagerConfig {
    // Created (0755) when missing; logs are 0644 so the sandbox user can read them. With
    // `log_parent_fd` (the directory that holds log_dir; it outlives the manager) the logs are
    // opened beneath it by descriptor, never through a symlink; else by path (tests).
    std::string log_dir{};
    int log_parent_fd = -1;
    // Per process: output past it is counted and kept in the ring, but not written to the log.
    uint64_t log_cap_bytes = uint64_t{8} << 30;
    size_t ring_bytes = size_t{2} << 20;
    size_t ring_lines = 10'000;
    size_t max_running = 128;  // running processes at once (foreground + background)
    // After the leader ended, output that stays quiet this long counts as drained even when a
    // leftover child keeps the output open.
    std::chrono::milliseconds drain_quiet{100};
    int first_id = 1;                      // of "p<N>" (a resumed session continues its numbering)
    std::optional<uint64_t> pids_limit{};  // the sandbox's process limit, for load()
    // The session's output budget, which the logs share with its spilled results (may be null:
    // only log_cap_bytes bounds a log). Everything a log holds is taken from it: the output,
    // the notes on where the log stops and what it lacks, and the tail added at its end.
    OutputBudget* budget = nullptr;
    // Network mode allowlist: each command's proxy settings, and what the proxy refused it
    // (may be null: no proxy).
    SandboxNetwork* network = nullptr;
    // Counts the processes running (may be null; outlives the manager).
    SessionMeters* meters = nullptr;
};

class ProcessManagerImpl final : public tools::ProcessManager {
public:
    ProcessManagerImpl(workspace::Workspace& spawner, ProcessManagerConfig config,
                       EventSink* events);  // ProcessStarted/Exited/Adopted; may be null
    // Stops every process (stop_all) and the reader thread.
    ~ProcessManagerImpl() override;
    ProcessManagerImpl(const ProcessManagerImpl&) = delete;
    ProcessManagerImpl& operator=(const ProcessManagerImpl&) = delete;

    // Session end: SIGTERM to every running group, `grace`, SIGKILL to what is left.
    void stop_all(std::chrono::milliseconds grace) noexcept;

    Result<tools::ProcessInfo> start(const tools::StartRequest& request) override;
    std::vector<tools::ProcessInfo> list() override;
    Result<tools::ProcessInfo> info(const std::string& id) override;
    Result<std::vector<std::string>> path_commands() override;
    Result<tools::ProcessLoad> load() override;
    Result<tools::ProcessInfo> wait_exit(
        const std::string& id, std::chrono::steady_clock::time_point until, std::stop_token stop,
        const std::function<void(const tools::ProcessInfo&)>& tick) override;
    Result<tools::ProcessInfo> wait_output(const std::string& id, uint64_t after_bytes,
                                           std::chrono::steady_clock::time_point until,
                                           std::chrono::milliseconds settle,
                                           std::stop_token stop) override;
    Result<tools::OutputSlice> output(const std::string& id, uint64_t from,
                                      uint64_t max_bytes) override;
    Result<uint64_t> line_start(const std::string& id, uint64_t line) override;
    Result<uint64_t> cursor(const std::string& id) override;
    Status set_cursor(const std::string& id, uint64_t offset) override;
    Result<size_t> write(const std::string& id, std::string_view bytes) override;
    Result<tools::ProcessInfo> stop(const std::string& id,
                                    std::chrono::milliseconds grace) override;
    Status kill(const std::string& id) override;
    Result<std::string> adopt(const std::string& id) override;
    void forget(const std::string& id) override;

    // Bytes of output held in memory by all rings (for tests and the benchmark).
    [[nodiscard]] size_t ring_memory();

private:
    struct Proc;
    class Reader;

    // Preconditions: mu_ held.
    std::shared_ptr<Proc> find_locked(const std::string& id);
    tools::ProcessInfo info_locked(const Proc& p) const;
    bool drained_locked(const Proc& p, std::chrono::steady_clock::time_point now) const;
    Result<std::shared_ptr<Proc>> find(const std::string& id);
    void count_running(int64_t delta) noexcept;  // the meters' gauge, if any
    // Signals the group through the worker; false when it is empty (or of a dead worker).
    bool signal(const Proc& p, int sig) noexcept;
    // Waits (mu_ held through `lock`) until `done()` or `until` or `stop`.
    template <class Pred>
    void wait_locked(std::unique_lock<std::mutex>& lock,
                     std::chrono::steady_clock::time_point until, const std::stop_token& stop,
                     Pred done);
    // Preconditions: mu_ held, or `p` not yet shared.
    void open_log(Proc& p);
    // The log of `p` opened with `flags` (| O_CLOEXEC | O_NOFOLLOW), beneath log_dir_fd_ when
    // there is one. -1 with errno on failure.
    int open_log_file(const Proc& p, int flags, mode_t mode = 0) const;
    // Reads the log of `p` over [from, to) in chunks, handing each to `chunk_fn(bytes, offset)`
    // until it returns false or the log ends; returns where it stopped.
    Result<uint64_t> scan_log(
        const Proc& p, uint64_t from, uint64_t to,
        const std::function<bool(std::string_view, uint64_t)>& chunk_fn) const;
    // Called on the reader thread.
    void on_output(Proc& p, const char* data, size_t n);
    void on_output_closed(Proc& p);
    // Preconditions: mu_ held. Closes the log; one that stopped early gets what it lacks said
    // and, as far as the budget has room for it, the tail the ring still holds.
    void finish_log(Proc& p);
    // The worker's exit report; nullopt when the status pipe closed without one.
    void on_status(Proc& p, std::optional<workspace::ExitReport> report);

    workspace::Workspace& spawner_;
    const ProcessManagerConfig config_;
    EventSink* events_;

    std::atomic<bool> log_dir_made_{false};
    UniqueFd log_dir_fd_;  // set once, before log_dir_made_ (with config_.log_parent_fd)
    std::mutex mu_;
    std::condition_variable_any changed_;  // output arrived, a process ended, stop requested
    std::map<std::string, std::shared_ptr<Proc>> procs_;  // guarded by mu_
    std::vector<std::string> order_;                      // public ids in start order
    int next_public_ = 1;                                 // guarded by mu_
    int next_foreground_ = 1;                             // guarded by mu_
    std::atomic<uint64_t> next_tag_{1};  // of each command's network tag ("c1", ...)

    std::unique_ptr<Reader> reader_;  // the Asio thread
};

}  // namespace stockade::runner
