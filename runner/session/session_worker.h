// SessionWorker: the session's sandboxed worker, seen from the supervisor as a Workspace.
// One worker per session, started on first use and kept for the session. Every call is
// forwarded over the channel, several at once (RemoteWorkspace multiplexes them); if the
// worker dies, every call in flight fails with a clear error, the event log says so once, and
// the next call starts a fresh worker (one, however many calls come). A call whose reply came
// and passed its checks before another call broke the channel keeps its result.
//
// Locking: mutex_ guards which worker is current; it is held to look at, start or replace the
// worker, never across a forwarded call. A call takes the current RemoteWorkspace (a
// shared_ptr: it stays alive for the call even if the worker is replaced meanwhile) and its
// generation under the lock, runs without it, and replaces the worker afterwards only if the
// channel broke and that worker is still the current one.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/event_sink.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "runner/session/private_tmp.h"
#include "runner/session/sandbox_config.h"
#include "runner/session/session_meters.h"
#include "sandbox/launcher.h"
#include "workspace/remote_workspace.h"
#include "workspace/snapshot.h"
#include "workspace/workspace.h"

namespace stockade::runner {

struct WorkerConfig {
    std::string workspace{};  // where the worker finds sandbox.workspace inside (its view)
    // The session's spill directory, mounted read-only at its path (or sandbox.spill_view).
    HostDir spill{};
    // The worker's sandbox: workspace (the one above), binds, isolation, network, limits. Its
    // process is set for each worker (WorkerProcess).
    SandboxConfig sandbox{};
    // When set, every worker after the first gets its sandbox from it instead of `sandbox`
    // (the session re-derives the masks of its deny rules from the workspace as it is then).
    std::function<SandboxConfig()> rederive{};
    // Network mode allowlist: gets each new worker's proxy listener (SandboxNetwork::serve).
    std::function<void(UniqueFd)> on_proxy_listener{};
    // Network modes none and allowlist: gets each new worker's resolver socket
    // (SandboxNetwork::serve_resolver).
    std::function<void(UniqueFd)> on_dns_socket{};
    SessionMeters* meters = nullptr;  // counts restarts (may be null; outlives the worker)
};

class SessionWorker final : public workspace::Workspace {
public:
    // `events` (may be null; outlives the worker) gets "WorkerStarted" and "WorkerExited",
    // durably: a worker's start and end are part of the session's record.
    SessionWorker(WorkerConfig config, EventSink* events);
    ~SessionWorker() override;
    SessionWorker(const SessionWorker&) = delete;
    SessionWorker& operator=(const SessionWorker&) = delete;

    // Starts the worker now (serve does this at start-up, so a broken host fails early).
    Status start();
    // Kills the worker and its pid namespace.
    void stop() noexcept;

    [[nodiscard]] std::string root_path(workspace::Root root) const override;
    // Where the spill directory is inside the sandbox.
    [[nodiscard]] std::string spill_inside() const;
    Result<workspace::FileInfo> stat(workspace::Root root, const std::string& path) override;
    Result<workspace::RealPath> real_path(workspace::Root root, const std::string& path) override;
    Result<workspace::ReadData> read(workspace::Root root, const std::string& path,
                                     uint64_t max_bytes) override;
    Result<workspace::WriteOutcome> write(const workspace::WriteRequest& request) override;
    Status make_dirs(workspace::Root root, const std::string& path) override;
    Result<std::vector<workspace::DirEntry>> list(workspace::Root root, const std::string& path,
                                                  size_t max_entries) override;
    Result<workspace::RgOutcome> run_rg(const workspace::RgRequest& request) override;
    // Spawned processes carry the worker's generation as their epoch: a signal for a process
    // of an earlier worker (whose pid namespace is gone) reaches nothing.
    Result<workspace::SpawnedProcess> spawn(const workspace::SpawnRequest& request) override;
    Result<bool> signal_group(workspace::ProcessGroupRef group, int signal) override;
    Result<std::vector<std::string>> path_commands() override;
    Result<workspace::ProcessCensus> census() override;
    // A worker that started since the last snapshot holds no index: the walk says so
    // (kFailedPrecondition) and the caller resets it.
    Result<workspace::Snapshot> snapshot(const workspace::SnapshotRequest& request) override;
    Result<workspace::RestoreOutcome> restore(const workspace::RestoreRequest& request) override;

    // When a worker died on its own (the OOM killer, a signal) since the last time this was
    // asked: one sentence for the model saying so and what was lost; then "" until it
    // happens again.
    std::string take_loss_note();

private:
    // Runs `op(remote, generation)` against a live worker (starting one if needed), without
    // holding mutex_; turns a dead worker into the model-facing error and forgets it.
    template <class T, class Op>
    Result<T> with_worker(Op op);
    Status start_locked();
    void reap_locked(std::string_view reason) noexcept;

    WorkerConfig config_;
    EventSink* const events_;
    std::mutex mutex_;  // guards the fields below; never held across a forwarded call
    std::unique_ptr<sandbox::Sandbox> sandbox_;
    // At level landlock: the worker's /tmp (host /tmp and /dev/shm are not its); removed after
    // the sandbox that used it is gone. Declared before sandbox_ would be wrong: it must
    // outlive the processes, so it is reset only by reap_locked, after the wait.
    std::unique_ptr<PrivateTmp> private_tmp_;
    // The current worker's channel; calls in flight hold their own reference.
    std::shared_ptr<workspace::RemoteWorkspace> remote_;
    int generation_ = 0;     // of the current worker (of the last one while there is none)
    std::string loss_note_;  // take_loss_note()
};

}  // namespace stockade::runner
