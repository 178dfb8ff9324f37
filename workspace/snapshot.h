// Checkpoints, the worker's half (docs/rewind.md): the walk of the workspace that says what
// changed since the last walk, and the restore that puts files back.
//
// The walk runs in the worker, inside the sandbox's own view, from the workspace root's
// descriptor: every directory is opened relative to its parent's descriptor with O_NOFOLLOW |
// O_DIRECTORY, every file with O_NOFOLLOW | O_NONBLOCK and checked (fstat) to be the regular
// file the walk stat'ed. A symlink is recorded as a symlink with its target's text and never
// followed; a directory swapped for a symlink while the walk runs fails to open (ELOOP or
// ENOTDIR) and is skipped, so nothing outside the workspace is ever read.
//
// The scope: everything beneath the root but any `.git` and what the `.gitignore` and
// `.stockadeignore` files exclude (IgnoreRules: a subset of gitignore's syntax).
//
// The worker keeps a stat index like git's (path → type, mode, size, mtime, ctime, inode): an
// entry whose stat data did not change costs one fstatat and is not reported. A reset drops
// the index and seeds it with stat data the supervisor read from git's index, so that a file
// git would call clean is not shipped either (the supervisor records it by its blob id).
//
// No hashing happens here (the worker carries no crypto): the supervisor hashes what arrives.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "workspace/workspace.h"

namespace stockade::workspace {

inline constexpr size_t kMaxSnapshotEntries = 50'000;        // changed + removed, per reply
inline constexpr size_t kMaxSnapshotSeed = 400'000;          // seed entries, per reset
inline constexpr size_t kMaxRestoreActions = 50'000;         // per restore request
inline constexpr uint64_t kMaxSnapshotReplyBytes = 8 << 20;  // contents in one reply
inline constexpr size_t kMaxIgnoreFileBytes = 1 << 20;       // a larger ignore file is not read

// What git's index says of one path (git_index.h), for SnapshotRequest::seed.
struct SnapshotSeed {
    std::string path{};
    FileType type = FileType::kFile;  // kFile or kSymlink
    uint32_t mode = 0;                // permission bits as git records them: 0644 or 0755
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    uint64_t ino = 0;

    bool operator==(const SnapshotSeed&) const = default;
};

struct SnapshotRequest {
    // Drop the worker's index and seed it with `seed`: everything in scope that does not match
    // a seed entry is reported, and every seed entry the walk does not meet is removed.
    bool reset = false;
    std::vector<SnapshotSeed> seed{};
    uint64_t max_file_bytes = 8 << 20;  // a larger file is reported without its bytes
    uint64_t max_reply_bytes = kMaxSnapshotReplyBytes;
    uint64_t max_entries = kMaxSnapshotEntries;

    bool operator==(const SnapshotRequest&) const = default;
};

struct SnapshotEntry {
    std::string path{};
    FileType type = FileType::kFile;  // kFile, kDirectory or kSymlink
    uint32_t mode = 0;                // permission bits (07777)
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    uint64_t ino = 0;
    std::string target{};    // kSymlink: the link's text
    bool too_large = false;  // kFile above max_file_bytes: `bytes` is empty
    std::string bytes{};     // kFile: the whole contents (size == bytes.size())

    bool operator==(const SnapshotEntry&) const = default;
};

struct Snapshot {
    std::vector<SnapshotEntry> changed{};  // added or changed since the last walk, by path
    std::vector<std::string> removed{};    // gone (or now out of scope), by path
    // Not everything that changed fit in this reply (max_entries, max_reply_bytes): what was
    // left out stays as it was in the index, and the next walk reports it.
    bool more = false;
    uint64_t scanned = 0;  // entries in scope the walk looked at
    uint64_t skipped = 0;  // names it could not record: not UTF-8, sockets, FIFOs, devices

    bool operator==(const Snapshot&) const = default;
};

enum class RestoreKind : uint8_t { kRemove, kFile, kSymlink, kDirectory };

struct RestoreAction {
    RestoreKind kind = RestoreKind::kFile;
    std::string path{};
    uint32_t mode = 0;   // kFile, kDirectory
    std::string data{};  // kFile: the contents; kSymlink: the target

    bool operator==(const RestoreAction&) const = default;
};

// Applied in order, each on its own: a failure is reported and the next action runs. A file or
// a symlink is written to a temporary name in its directory and renamed over the path (which
// replaces a symlink there, never writes through it); kRemove unlinks (rmdir for a directory:
// only an empty one); kDirectory makes it or sets its mode. Every directory on the way is
// opened with O_NOFOLLOW: a symlink there fails the action (ELOOP), so nothing is ever written
// outside the workspace. Nothing is synced (as `git checkout` syncs nothing).
struct RestoreRequest {
    std::vector<RestoreAction> actions{};

    bool operator==(const RestoreRequest&) const = default;
};

struct RestoreOutcome {
    struct Failure {
        uint64_t index = 0;  // of the action
        std::string message{};
        bool operator==(const Failure&) const = default;
    };
    uint64_t applied = 0;
    std::vector<Failure> failed{};  // by index

    bool operator==(const RestoreOutcome&) const = default;
};

// ---- Ignore rules (pure) --------------------------------------------------------------------

// The subset of gitignore's syntax the walk honours, in `.gitignore` and `.stockadeignore` of
// any directory (patterns relative to it): blank lines and `#` comments; `!` negation; a
// trailing `/` for directories only; a leading or inner `/` anchors the pattern to the file's
// directory, otherwise it matches a name at any depth; `*`, `?`, `[...]` (`[!...]`), `\x`, and
// `**` as a whole component (`**/x`, `a/**/b`, `a/**`). The last matching pattern decides,
// deeper files before shallower ones. Not supported: `.git/info/exclude`, core.excludesFile,
// trailing-space escapes.
class IgnoreRules {
public:
    // The rules of one ignore file in directory `base` ("" for the root).
    void add(std::string_view base, std::string_view text);
    [[nodiscard]] bool empty() const noexcept { return rules_.empty(); }
    // How many rules it holds, and dropping those added after a count (a walk leaving the
    // directory whose ignore files added them).
    [[nodiscard]] size_t size() const noexcept { return rules_.size(); }
    void truncate(size_t count) { rules_.resize(std::min(count, rules_.size())); }
    // nullopt: no rule matches; true: ignored; false: a negation re-included it. `path` is
    // relative to the root.
    [[nodiscard]] std::optional<bool> match(std::string_view path, bool is_directory) const;

private:
    struct Rule {
        std::string base{};     // "" or "a/b"
        std::string pattern{};  // without `!`, the trailing `/` and a leading `/`
        bool negate = false;
        bool directory_only = false;
        bool anchored = false;  // matched against the path beneath base, not the name
        bool literal = false;   // no glob characters: compared as a string
    };
    std::vector<Rule> rules_;
};

// gitignore's glob over a whole relative path ('/' separated): `*` and `?` never match '/',
// `**` as a component matches any number of components.
bool ignore_glob_match(std::string_view pattern, std::string_view text);

// ---- Wire (pure), used by workspace/channel.cc ----------------------------------------------

void encode_snapshot_request(const SnapshotRequest& request, nlohmann::json& header,
                             std::string& payload);
Result<SnapshotRequest> decode_snapshot_request(const nlohmann::json& header,
                                                std::string_view payload);
Status validate_snapshot_request(const SnapshotRequest& request);
void encode_snapshot(const Snapshot& snapshot, nlohmann::json& header, std::string& payload);
// Checks every path (check_relative_path, no `.git` component), type, mode and length.
Result<Snapshot> decode_snapshot(const nlohmann::json& header, std::string payload);

void encode_restore_request(const RestoreRequest& request, nlohmann::json& header,
                            std::string& payload);
Result<RestoreRequest> decode_restore_request(const nlohmann::json& header,
                                              std::string_view payload);
Status validate_restore_request(const RestoreRequest& request);
void encode_restore_outcome(const RestoreOutcome& outcome, nlohmann::json& header);
Result<RestoreOutcome> decode_restore_outcome(const nlohmann::json& header);

// ---- The walk and the restore (the worker's syscalls) ---------------------------------------

// The worker's stat index and its walk. Thread: the worker's one.
class SnapshotIndex {
public:
    // `root_fd`: the workspace root (O_PATH is enough). A walk without a reset on an index that
    // was never reset fails with kFailedPrecondition: the supervisor then resets it.
    Result<Snapshot> walk(int root_fd, const SnapshotRequest& request);

    struct Entry {
        FileType type = FileType::kFile;
        uint32_t mode = 0;
        uint64_t size = 0;
        int64_t mtime_ns = 0;
        int64_t ctime_ns = 0;
        uint64_t ino = 0;
        std::string target{};
        bool seeded = false;  // from git's index: only the file's type and exec bit compared
        bool racy = false;    // changed too close to the walk that recorded it: report again
        uint64_t seen = 0;    // the walk that last met it
    };

private:
    bool ready_ = false;
    uint64_t walks_ = 0;
    std::unordered_map<std::string, Entry> entries_;
};

// Applies `request` beneath `root_fd` (see RestoreRequest).
RestoreOutcome restore_beneath(int root_fd, const RestoreRequest& request);

}  // namespace stockade::workspace
