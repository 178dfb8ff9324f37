#include "runner/session/session_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/syscall.h"
#include "runner/session/rg_bundle.h"
#include "runner/session/start_sandbox.h"
#include "runner/session/worker_binary.h"
#include "runner/worker/worker_main.h"
#include "workspace/remote_workspace.h"

namespace stockade::runner {

SessionWorker::SessionWorker(WorkerConfig config, EventSink* events)
    : config_(std::move(config)), events_(events) {}

SessionWorker::~SessionWorker() {
    stop();
}

std::string SessionWorker::root_path(workspace::Root root) const {
    switch (root) {
        case workspace::Root::kWorkspace:
            return config_.workspace;
        case workspace::Root::kSpill:
            return spill_inside();
    }
    return config_.workspace;
}

std::string SessionWorker::spill_inside() const {
    return config_.sandbox.spill_view.empty() ? config_.spill.path() : config_.sandbox.spill_view;
}

Status SessionWorker::start() {
    std::lock_guard lock(mutex_);
    return remote_ ? Status{} : start_locked();
}

void SessionWorker::stop() noexcept {
    std::lock_guard lock(mutex_);
    reap_locked("session ended");
}

Status SessionWorker::start_locked() {
    auto log = log::get("runner");
    // The worker is executed from a descriptor (execveat): it need not be in the image, and
    // nothing inside can write to it (worker_binary.h).
    ASSIGN_OR_RETURN(WorkerBinary binary, worker_binary());
    ASSIGN_OR_RETURN(FdPair channel, make_socketpair(SOCK_STREAM));
    ASSIGN_OR_RETURN(UniqueFd null, open_path("/dev/null", O_RDWR));

    SandboxConfig config =
        generation_ > 0 && config_.rederive ? config_.rederive() : config_.sandbox;
    config.spill = config_.spill;
    WorkerProcess process{.argv = {"stockade-worker", std::string(worker::kWorkerVerb),
                                   config_.workspace, spill_inside()},
                          .exec_fd = binary.fd,
                          .channel_fd = channel.second.get(),
                          .null_fd = null.get()};
    if (config.image.stored()) {
        // grep and glob run the host's rg, carried in (rg_bundle.h), never the image's.
        if (auto rg = rg_bundle_fds()) {
            process.argv.push_back(fmt::format("{}{}", worker::kRgFdsFlag, rg->size()));
            process.rg_fds = std::move(*rg);
        } else if (generation_ == 0) {
            SPDLOG_LOGGER_WARN(log, "grep and glob will not work in this session: {}",
                               rg.error().message);
        }
    }
    config.process = std::move(process);
    auto started = start_sandbox(config, current_caller(), StartOptions{.label = "session"});
    if (!started) {
        Error error = std::move(started).error().wrap("start the session worker");
        if (events_ != nullptr) {
            // The session's record says why it had no worker, not only serve's stderr.
            events_->record("WorkerFailed",
                            {{"generation", generation_ + 1}, {"error", error.message}}, true);
        }
        return error;
    }
    if (generation_ == 0 && !started->shortfall.empty()) {
        SPDLOG_LOGGER_WARN(log, "isolation auto falls back to \"{}\": {}",
                           sandbox::isolation_name(started->spec.isolation), started->shortfall);
    }
    channel.second.reset();
    private_tmp_ = std::move(started->private_tmp);
    sandbox_ = std::make_unique<sandbox::Sandbox>(std::move(started->box));
    auto remote = std::make_shared<workspace::RemoteWorkspace>(std::move(channel.first),
                                                               config_.workspace, spill_inside());
    if (auto hello = remote->handshake(); !hello) {
        reap_locked("handshake failed");
        return std::move(hello).error().wrap("connect to the session worker");
    }
    remote_ = std::move(remote);
    if (config_.on_proxy_listener && sandbox_->proxy_listener()) {
        config_.on_proxy_listener(std::move(sandbox_->proxy_listener()));
    }
    if (config_.on_dns_socket && sandbox_->dns_socket()) {
        config_.on_dns_socket(std::move(sandbox_->dns_socket()));
    }
    if (generation_ > 0 && config_.meters != nullptr) {
        config_.meters->worker_restarts.fetch_add(1, std::memory_order_relaxed);
    }
    ++generation_;
    SPDLOG_LOGGER_INFO(log, "worker started pid={} generation={} isolation={}", sandbox_->pid(),
                       generation_, sandbox::isolation_name(started->spec.isolation));
    if (events_ != nullptr) {
        events_->record("WorkerStarted",
                        {{"pid", sandbox_->pid()},
                         {"generation", generation_},
                         {"isolation", sandbox::isolation_name(started->spec.isolation)},
                         {"isolation_shortfall", started->shortfall}},
                        true);
    }
    return {};
}

void SessionWorker::reap_locked(std::string_view reason) noexcept {
    remote_.reset();
    if (!sandbox_) {
        return;
    }
    // Dead already, or killed here: only the first says why it ended.
    pollfd exited{sandbox_->pidfd(), POLLIN, 0};
    const bool died = ::poll(&exited, 1, 0) > 0;
    sandbox_->kill();
    auto status = sandbox_->wait();
    const int code = status ? status->code : -1;
    const int signal = status ? status->signal : 0;
    const bool oom = died && sandbox_->oom_killed();
    SPDLOG_LOGGER_INFO(log::get("runner"),
                       "worker exited generation={} status={} reason=\"{}\" oom={}", generation_,
                       code, reason, oom);
    try {
        if (died) {
            std::string cause =
                oom      ? "killed by the out-of-memory killer: the session reached its memory "
                           "limit (/tmp counts too)"
                : signal ? fmt::format("killed by SIG{}", sigabbrev_np(signal) != nullptr
                                                              ? std::string(sigabbrev_np(signal))
                                                              : std::to_string(signal))
                         : fmt::format("ended with exit code {}", code);
            loss_note_ = fmt::format(
                "Note: the session's sandbox worker was {}; a new one serves the session now, "
                "and the processes that were running in the old one are gone.",
                cause);
        }
        if (events_ != nullptr) {
            events_->record("WorkerExited",
                            {{"generation", generation_},
                             {"status", code},
                             {"signal", signal},
                             {"oom_killed", oom},
                             {"died", died},
                             {"reason", std::string(reason)}},
                            true);
        }
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory while reporting: keep going
    }
    sandbox_.reset();
    private_tmp_.reset();
}

std::string SessionWorker::take_loss_note() {
    std::lock_guard lock(mutex_);
    return std::exchange(loss_note_, {});
}

template <class T, class Op>
Result<T> SessionWorker::with_worker(Op op) {
    std::shared_ptr<workspace::RemoteWorkspace> remote;
    int generation = 0;
    {
        std::lock_guard lock(mutex_);
        if (remote_ && sandbox_) {
            // A worker that died between calls (killed, OOM), or whose channel a call in
            // flight broke, is replaced before this call.
            pollfd exited{sandbox_->pidfd(), POLLIN, 0};
            if (::poll(&exited, 1, 0) > 0) {
                reap_locked("exited between calls");
            } else if (remote_->broken()) {
                reap_locked("channel broken");
            }
        }
        if (!remote_) {
            if (auto started = start_locked(); !started) {
                return std::move(started).error();
            }
        }
        remote = remote_;
        generation = generation_;
    }
    Result<T> result = op(*remote, generation);
    if (remote->broken()) {
        // Dead, hung, or it sent something invalid: either way it is not trusted again. The
        // first call to get here replaces it; a call of an older worker leaves the new one be.
        {
            std::lock_guard lock(mutex_);
            if (remote_ == remote) {
                reap_locked(result ? "channel broken" : result.error().message);
            }
        }
        if (!result) {
            return Error{
                Errc::kUnavailable,
                "The sandbox worker stopped while running this call, so it did not complete. "
                "Retry it: the next call starts a fresh worker."};
        }
        // Answered and checked before another call broke the channel: the result stands.
    }
    return result;
}

Result<workspace::FileInfo> SessionWorker::stat(workspace::Root root, const std::string& path) {
    return with_worker<workspace::FileInfo>(
        [&](workspace::Workspace& ws, int) { return ws.stat(root, path); });
}

Result<workspace::ReadData> SessionWorker::read(workspace::Root root, const std::string& path,
                                                uint64_t max_bytes) {
    return with_worker<workspace::ReadData>(
        [&](workspace::Workspace& ws, int) { return ws.read(root, path, max_bytes); });
}

Result<workspace::WriteOutcome> SessionWorker::write(const workspace::WriteRequest& request) {
    return with_worker<workspace::WriteOutcome>(
        [&](workspace::Workspace& ws, int) { return ws.write(request); });
}

Status SessionWorker::make_dirs(workspace::Root root, const std::string& path) {
    auto done = with_worker<bool>([&](workspace::Workspace& ws, int) -> Result<bool> {
        RETURN_IF_ERROR(ws.make_dirs(root, path));
        return true;
    });
    if (!done) {
        return std::move(done).error();
    }
    return {};
}

Result<std::vector<workspace::DirEntry>> SessionWorker::list(workspace::Root root,
                                                             const std::string& path,
                                                             size_t max_entries) {
    return with_worker<std::vector<workspace::DirEntry>>(
        [&](workspace::Workspace& ws, int) { return ws.list(root, path, max_entries); });
}

Result<workspace::RgOutcome> SessionWorker::run_rg(const workspace::RgRequest& request) {
    return with_worker<workspace::RgOutcome>(
        [&](workspace::Workspace& ws, int) { return ws.run_rg(request); });
}

Result<workspace::SpawnedProcess> SessionWorker::spawn(const workspace::SpawnRequest& request) {
    // The epoch is the generation of the worker that spawned it (taken with its channel).
    return with_worker<workspace::SpawnedProcess>(
        [&](workspace::Workspace& ws, int generation) -> Result<workspace::SpawnedProcess> {
            ASSIGN_OR_RETURN(workspace::SpawnedProcess spawned, ws.spawn(request));
            spawned.epoch = static_cast<uint64_t>(generation);
            return spawned;
        });
}

Result<bool> SessionWorker::signal_group(workspace::ProcessGroupRef group, int signal) {
    {
        std::lock_guard lock(mutex_);
        if (!remote_ || group.epoch != static_cast<uint64_t>(generation_)) {
            return false;  // that worker and its pid namespace are gone, with every process
        }
    }
    return with_worker<bool>([&](workspace::Workspace& ws, int generation) -> Result<bool> {
        if (group.epoch != static_cast<uint64_t>(generation)) {
            return false;  // replaced since the check above: the group went with the old one
        }
        return ws.signal_group(group, signal);
    });
}

Result<std::vector<std::string>> SessionWorker::path_commands() {
    return with_worker<std::vector<std::string>>(
        [&](workspace::Workspace& ws, int) { return ws.path_commands(); });
}

Result<workspace::RealPath> SessionWorker::real_path(workspace::Root root,
                                                     const std::string& path) {
    return with_worker<workspace::RealPath>(
        [&](workspace::Workspace& ws, int) { return ws.real_path(root, path); });
}

Result<workspace::ProcessCensus> SessionWorker::census() {
    return with_worker<workspace::ProcessCensus>(
        [](workspace::Workspace& ws, int) { return ws.census(); });
}

Result<workspace::Snapshot> SessionWorker::snapshot(const workspace::SnapshotRequest& request) {
    return with_worker<workspace::Snapshot>(
        [&](workspace::Workspace& ws, int) { return ws.snapshot(request); });
}

Result<workspace::RestoreOutcome> SessionWorker::restore(const workspace::RestoreRequest& request) {
    return with_worker<workspace::RestoreOutcome>(
        [&](workspace::Workspace& ws, int) { return ws.restore(request); });
}

}  // namespace stockade::runner
