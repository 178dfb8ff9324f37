// RemoteWorkspace: the supervisor's Workspace. Every call is one request/reply exchange with
// the sandbox worker over the channel (channel.h); the worker runs serve_channel.
//
// The worker shares its sandbox with untrusted commands, so every reply is treated as data
// from an adversary: the id must match, every field must have its type, and sizes must be
// within what was asked (read <= max_bytes, list <= max_entries and sorted, rg output <=
// max_output_bytes, a written file's size = the bytes sent, a spawn's descriptors as many as
// announced and of the kinds asked for: a pipe or PTY master to read, a pipe to write). A violation
// fails the call with kInternal "worker sent an invalid reply: ..." and breaks the channel: from
// then on every call fails at once with kUnavailable "the sandbox worker is gone ...". A worker
// that dies or stops answering mid-call (EOF, EPIPE, the call's deadline) gives kUnavailable "the
// sandbox worker died ..." and breaks the channel too; the supervisor then starts a fresh worker.
// Errors the worker reports for the operation itself (kNotFound, ...) pass through unchanged
// and leave the channel usable.
//
// Thread-safe: one exchange at a time (a mutex around each request/reply pair).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "workspace/channel.h"
#include "workspace/workspace.h"

namespace stockade::workspace {

class RemoteWorkspace final : public Workspace {
public:
    struct Options {
        // How long any call but rg may wait for its reply.
        std::chrono::milliseconds call_timeout{60'000};
        // rg may take its own timeout plus this before the worker counts as hung.
        std::chrono::milliseconds rg_grace{10'000};
    };

    // `channel`: the supervisor's end of the socketpair (SOCK_STREAM). The root paths are what
    // root_path() reports (the workspace is mounted at its host path).
    RemoteWorkspace(UniqueFd channel, std::string workspace_root, std::string spill_root);
    RemoteWorkspace(UniqueFd channel, std::string workspace_root, std::string spill_root,
                    Options options);

    // The hello exchange (version check). The first call does it if this was not called;
    // calling it right after the launch reports a broken worker early.
    Status handshake();
    // True once the channel is broken; every call then fails with kUnavailable.
    [[nodiscard]] bool broken() const;

    [[nodiscard]] std::string root_path(Root root) const override;
    Result<FileInfo> stat(Root root, const std::string& path) override;
    Result<RealPath> real_path(Root root, const std::string& path) override;
    Result<ReadData> read(Root root, const std::string& path, uint64_t max_bytes) override;
    Result<WriteOutcome> write(const WriteRequest& request) override;
    Status make_dirs(Root root, const std::string& path) override;
    Result<std::vector<DirEntry>> list(Root root, const std::string& path,
                                       size_t max_entries) override;
    Result<RgOutcome> run_rg(const RgRequest& request) override;
    // SpawnedProcess::epoch is left 0: the owner of the worker sets it (SessionWorker).
    Result<SpawnedProcess> spawn(const SpawnRequest& request) override;
    // The group's epoch is not sent: the worker has one epoch, and the owner checks it.
    Result<bool> signal_group(ProcessGroupRef group, int signal) override;
    Result<std::vector<std::string>> path_commands() override;
    Result<ProcessCensus> census() override;

private:
    // One exchange, after the hello if there was none. Preconditions: none (takes mu_).
    Result<channel::ReplyValue> call(const channel::RequestArgs& args,
                                     std::chrono::milliseconds timeout);
    // Preconditions: mu_ held, channel not broken.
    Result<channel::ReplyValue> exchange_locked(const channel::RequestArgs& args,
                                                std::chrono::milliseconds timeout);
    // Preconditions: mu_ held. Records why the channel broke and returns `error`.
    Error break_locked(Error error);

    const std::string workspace_root_;
    const std::string spill_root_;
    const Options options_;

    mutable std::mutex mu_;
    UniqueFd fd_;                  // guarded by mu_
    uint64_t next_id_ = 1;         // guarded by mu_
    bool greeted_ = false;         // guarded by mu_
    std::optional<Error> broken_;  // guarded by mu_: why the channel broke
};

}  // namespace stockade::workspace
