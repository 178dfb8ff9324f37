// Checkpoints and rewind (docs/rewind.md): after each call that may change the workspace the
// worker walks it (workspace/snapshot.h) and ships what changed; this side keeps the contents
// content-addressed in the session's state directory and records a `Checkpoint` event. A
// rewind puts every file in scope back as it was just before a call.
//
// On disk, beneath the session's directory (opened by descriptor, never through a symlink):
//   checkpoints/objects/<sha256>   a file's bytes, once however many checkpoints hold them
//   checkpoints/log.jsonl          one record per checkpoint: {"seq","call","kind","changes"}
//                                  — the first is a base (the whole tree), each later one what
//                                  changed (a path's new state, or null when it went away)
// A file that matches git's index (the stat data git compares) is recorded by its blob id and
// not copied; a rewind gets its bytes back with `git cat-file --batch` run in the sandbox. A
// file above the size cap is recorded by its stat data and cannot be rewound.
//
// Disk: the objects and the log count against cap_bytes (and the tenant's DiskPool): when a
// checkpoint would pass it, the oldest checkpoints are merged into the base, first one first,
// their objects deleted, and a `CheckpointDropped` event says which.
//
// Thread-safe: one checkpoint or rewind at a time (a mutex held across the walk).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_sink.h"
#include "common/host_dir.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "runner/session/output_budget.h"
#include "workspace/snapshot.h"
#include "workspace/workspace.h"

namespace stockade::runner {

struct CheckpointOptions {
    bool enabled = true;                          // --checkpoints on|off
    uint64_t max_file_bytes = uint64_t{8} << 20;  // larger files: recorded, not rewindable
    uint64_t cap_bytes = uint64_t{512} << 20;     // objects + log of one session
    std::shared_ptr<DiskPool> pool{};             // the tenant's disk, or null
};

// One path's state in a checkpoint.
struct CheckpointFile {
    workspace::FileType type = workspace::FileType::kFile;
    uint32_t mode = 0;
    uint64_t size = 0;
    std::string blob{};      // git's blob id of the bytes (a symlink: of its target)
    std::string sha256{};    // the stored object; empty: recorded by blob id only
    std::string target{};    // symlinks shipped by the walk (a seeded one has its blob only)
    bool too_large = false;  // above the cap (or past the quota): stat data only
    int64_t mtime_ns = 0;    // too_large: with size and ino, what tells its versions apart
    uint64_t ino = 0;
    bool seeded = false;  // from git's index: its mode is git's (only the exec bit counts)

    bool operator==(const CheckpointFile&) const = default;
};
using CheckpointTree = std::map<std::string, CheckpointFile>;
using CheckpointChanges = std::map<std::string, std::optional<CheckpointFile>>;

// The same contents, kind and mode (as far as both sides know it).
bool same_file(const CheckpointFile& a, const CheckpointFile& b);
// What changed from `before` to `after`.
CheckpointChanges diff_trees(const CheckpointTree& before, const CheckpointTree& after);
void apply_changes(CheckpointTree& tree, const CheckpointChanges& changes);

// git's blob id of `bytes`: SHA-1 of "blob <size>\0" and the bytes, lower-case hex.
std::string git_blob_id(std::string_view bytes);

enum class CheckpointKind : uint8_t { kBaseline, kCall, kRewind };

struct CheckpointRecord {
    uint64_t seq = 0;
    std::string call{};  // the call it follows (a baseline: the call it precedes)
    CheckpointKind kind = CheckpointKind::kCall;
    std::string ts{};
    CheckpointChanges changes{};
    // A base only: the calls whose "just before" went when older records were merged into it.
    std::vector<std::string> dropped{};
};
nlohmann::json record_to_json(const CheckpointRecord& record);
// Refuses what the supervisor cannot have written (paths outside the scope, bad ids).
Result<CheckpointRecord> record_from_json(const nlohmann::json& j);

// ---- Rewind (pure planning) -----------------------------------------------------------------

struct RewindPlan {
    struct Put {
        std::string path{};
        CheckpointFile file{};
    };
    std::vector<std::string> remove{};        // deepest first
    std::vector<Put> put{};                   // shallowest first
    std::vector<std::string> conflicts{};     // changed outside the session; left alone
    std::vector<std::string> unrewindable{};  // recorded without their bytes
};

// What turns `current` into `target`. A path whose current state differs from `last` (what
// the session last recorded) was changed by someone else: without `force` it is listed in
// conflicts and left alone.
RewindPlan plan_rewind(const CheckpointTree& target, const CheckpointTree& last,
                       const CheckpointTree& current, bool force);

struct RewindRequest {
    // A call id: the workspace as it was just before it; or "@N": as checkpoint N recorded
    // it (for a call id a resumed session reused).
    std::string to{};
    bool dry_run = false;
    bool force = false;
};

struct RewindReport {
    std::string to{};
    uint64_t checkpoint = 0;  // the seq of the checkpoint restored
    bool dry_run = false;
    std::vector<std::string> restored{};  // written (or to be, for a dry run)
    std::vector<std::string> removed{};
    std::vector<std::string> conflicts{};
    std::vector<std::string> unrewindable{};
    std::vector<std::string> failed{};  // "path: why"

    [[nodiscard]] nlohmann::json to_json() const;
};
// For the CLI and the admin endpoint: what was done and what was left, with what to do next.
std::string rewind_report_text(const RewindReport& report);

// A checkpoint's summary, for `stockade log` and the admin endpoint.
struct CheckpointSummary {
    uint64_t seq = 0;
    std::string call{};
    CheckpointKind kind = CheckpointKind::kCall;
    size_t added = 0;
    size_t changed = 0;
    size_t removed = 0;
};

class Checkpoints {
public:
    // Opens (creating) checkpoints/ beneath `session_dir_fd` and loads what an earlier run of
    // the session recorded. `workspace`: for git's index (read beneath its descriptor).
    // `events` outlives this.
    static Result<std::unique_ptr<Checkpoints>> open(int session_dir_fd, HostDir workspace,
                                                     CheckpointOptions options, EventSink* events);
    Checkpoints(const Checkpoints&) = delete;
    Checkpoints& operator=(const Checkpoints&) = delete;
    ~Checkpoints();

    [[nodiscard]] bool enabled() const noexcept { return options_.enabled; }

    // Before a call that may change the workspace: the baseline, when there is none yet.
    void before_call(workspace::Workspace& ws, const std::string& call);
    // After it: a checkpoint of what it changed (a Checkpoint event, even when nothing did).
    void after_call(workspace::Workspace& ws, const std::string& call);
    // after_call on the checkpoints' own thread, so that the call's result does not wait for
    // the walk. before_call, rewind and drain wait for what is queued: a call that may change
    // the workspace never starts before the previous one's checkpoint is taken.
    void after_call_async(workspace::Workspace& ws, const std::string& call);
    // Waits until every queued checkpoint is taken (the session drains before its worker stops).
    void drain();

    // Restores the workspace as it was just before `request.to` (see RewindPlan). Errors: no
    // such checkpointed call, or one dropped by the quota (kNotFound, naming what exists); a
    // worker that cannot walk or write. `on_restored` gets each path written or removed (the
    // session forgets its file stamp).
    Result<RewindReport> rewind(workspace::Workspace& ws, const RewindRequest& request,
                                const std::function<void(const std::string&)>& on_restored = {});

    [[nodiscard]] std::vector<CheckpointSummary> list() const;
    // Bytes the store holds (objects and log).
    [[nodiscard]] uint64_t used_bytes() const;

private:
    Checkpoints(UniqueFd dir, UniqueFd objects, HostDir workspace, CheckpointOptions options,
                EventSink* events);
    Status load();
    [[nodiscard]] uint64_t used_locked() const;  // Preconditions: mu_ held.
    // Walks until the worker has nothing more to say; synced_ then holds the workspace.
    // Preconditions: mu_ held.
    Status walk_locked(workspace::Workspace& ws);
    Status apply_snapshot_locked(const workspace::Snapshot& snap);
    // Appends a record of synced_ against tree_ (and the event). Preconditions: mu_ held.
    void record_locked(const std::string& call, CheckpointKind kind, double walk_ms = 0);
    Result<CheckpointFile> store_locked(const workspace::SnapshotEntry& entry);
    // Merges the oldest two records; deletes what no record or synced_ holds.
    bool drop_oldest_locked();
    // Some stored object is held by older records only, not by the workspace as it is now.
    [[nodiscard]] bool held_by_history_alone_locked() const;
    void collect_garbage_locked();
    void remember_git_blobs_locked(const CheckpointTree& tree);
    Status rewrite_log_locked();
    Result<std::string> read_object_locked(const std::string& sha256) const;
    workspace::SnapshotRequest reset_request_locked(CheckpointTree& seeded) const;

    void run_queue(std::stop_token stop);

    std::mutex queue_mu_;
    std::condition_variable_any queue_cv_;
    std::deque<std::pair<workspace::Workspace*, std::string>> queue_;  // guarded by queue_mu_
    bool busy_ = false;    // guarded by queue_mu_: the thread is taking one
    std::jthread thread_;  // started with the first after_call_async; joined by the destructor

    const UniqueFd dir_;      // checkpoints/
    const UniqueFd objects_;  // checkpoints/objects/
    const HostDir workspace_;
    const CheckpointOptions options_;
    EventSink* const events_;

    mutable std::mutex mu_;
    std::vector<CheckpointRecord> records_;         // guarded by mu_
    CheckpointTree tree_;                           // guarded by mu_: all records applied
    CheckpointTree synced_;                         // guarded by mu_: what the worker's index holds
    bool in_sync_ = false;                          // guarded by mu_: the worker's index is synced_
    std::map<std::string, uint64_t> object_sizes_;  // guarded by mu_
    // Blob ids recorded without an object (from git's index): bytes git can give back.
    std::set<std::string> git_blobs_;  // guarded by mu_
    uint64_t log_bytes_ = 0;           // guarded by mu_
    uint64_t next_seq_ = 1;            // guarded by mu_
    uint64_t pool_held_ = 0;           // guarded by mu_: taken from the pool
};

}  // namespace stockade::runner
