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
// Concurrent calls: requests are multiplexed by id, so a long rg does not hold up a read, a
// spawn or a signal (the worker answers rg when it ends and everything else at once, so replies
// may arrive in another order than the requests went). A send lock keeps each request frame
// whole on the stream. Replies are read by one of the waiting callers at a time (the reader),
// which hands each reply to the caller waiting for its id and, once its own reply came, passes
// the reading to another waiting caller: no thread of its own, and an uncontended call reads
// its own reply as a lone exchange would. Every reply is checked by the reader before anything
// after it is read: a reply whose id no call waits for (unknown, forged or answered already)
// breaks the channel like any other invalid reply; a call in flight when it breaks fails too
// ("the sandbox worker died during ..." for a death, kInternal for an invalid reply nobody can
// be sure was not meant for it, "the sandbox worker is gone ..." when another call's deadline
// or reply broke it). Each call keeps its own deadline (call_timeout; rg: its timeout plus
// rg_grace), counted from the call, whoever reads.
//
// Thread-safe. Must not be destroyed while a call is in flight (its owner keeps it alive, e.g.
// SessionWorker through a shared_ptr held by each call).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
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
    Result<Snapshot> snapshot(const SnapshotRequest& request) override;
    Result<RestoreOutcome> restore(const RestoreRequest& request) override;

private:
    // One call in flight, on its caller's stack; registered in pending_ from before its request
    // is sent until its result is filled in. Guarded by mu_.
    struct Slot {
        channel::Op op = channel::Op::kHello;
        const channel::RequestArgs* args = nullptr;  // the caller's, alive while registered
        const WriteRequest* write = nullptr;         // a write's request, whose bytes are sent
        std::chrono::milliseconds timeout{};
        std::optional<Result<channel::ReplyValue>> result{};  // filled: the call is over
        bool waiting = false;                                 // its caller waits for a reply
        std::condition_variable cv{};                         // result filled, or read now
    };
    // How a break reaches the calls in flight (see the header comment).
    enum class Breakage : uint8_t {
        kDied,     // EOF or I/O error: each call "died during" its own op
        kInvalid,  // an invalid frame meant for no call in particular: each gets the error
        kOther,    // meant for one call (`to`); the others are told the worker is gone
    };

    // The hello if there was none, then the exchange. Preconditions: none (takes the locks).
    // `write`: for a write, the request to send from where it is (up to 16 MiB not copied into
    // `args`, which then holds a WriteRequest without bytes).
    Result<channel::ReplyValue> call(const channel::RequestArgs& args,
                                     std::chrono::milliseconds timeout,
                                     const WriteRequest* write = nullptr);
    // Registers, sends, waits (reading while no one else does). Preconditions: none.
    Result<channel::ReplyValue> exchange(const channel::RequestArgs& args,
                                         std::chrono::milliseconds timeout,
                                         const WriteRequest* write = nullptr);
    // The reader's turn: reads one frame and decodes it (mu_ released meanwhile), then hands it
    // to the slot waiting for its id or breaks the channel. `self`: the reader's own slot,
    // whose deadline bounds the read. Preconditions: mu_ held through `lock`, reading_ ours.
    void read_one(std::unique_lock<std::mutex>& lock, uint64_t self_id, Slot& self,
                  std::chrono::steady_clock::time_point deadline);
    // Breaks the channel (the first cause is kept): fills every slot in flight with its error,
    // shuts the socket down (the worker sees EOF, a blocked sender or reader wakes), wakes
    // every waiter. Preconditions: mu_ held.
    void break_locked(const Error& cause, Breakage how, uint64_t to = 0);
    // Gives the reading to a waiting caller whose reply has not come. Preconditions: mu_ held.
    void pass_reading_locked();
    // "the sandbox worker is gone (why)". Preconditions: mu_ held, broken_ set.
    Error gone_locked() const;

    const std::string workspace_root_;
    const std::string spill_root_;
    const Options options_;
    // The socket; closed only by the destructor, so that no thread ever reads or writes a
    // reused descriptor number: a break shuts it down instead.
    const UniqueFd fd_;

    std::mutex hello_mu_;                // held across the first hello exchange
    std::timed_mutex send_mu_;           // held while one request frame is written
    mutable std::mutex mu_;              // guards the fields below
    uint64_t next_id_ = 1;               // guarded by mu_
    bool greeted_ = false;               // guarded by mu_
    bool reading_ = false;               // guarded by mu_: one caller is reading the socket
    std::map<uint64_t, Slot*> pending_;  // guarded by mu_: the calls waiting for a reply
    std::optional<Error> broken_;        // guarded by mu_: why the channel broke
};

}  // namespace stockade::workspace
