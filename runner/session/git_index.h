// The paths a git repository tracks, read from its index file (.git/index) without running
// git: git in a workspace an agent has written to runs what its config says (core.fsmonitor,
// hooks), and the supervisor may be root. For the warning that a Read-denied file is tracked:
// its committed contents stay readable through git, whatever the sandbox masks. The operator
// is told where the policy is checked (session start, policy check and explain, doctor); the
// model, once, after the first result of its session.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "policy/policy.h"

namespace stockade::runner {

// The index's paths (versions 2, 3 and 4, SHA-1 object names), in index order. Malformed or
// truncated input is kInvalidArgument; nothing is read past `bytes`.
Result<std::vector<std::string>> parse_git_index(std::string_view bytes);

// One entry of the index with what git compares to call a file clean (its stat data, 32 bits
// of each as git keeps them) and its object name: checkpoints record a file that matches it by
// that blob id instead of copying it (runner/session/checkpoints.h).
struct GitIndexEntry {
    std::string path{};
    std::string blob{};  // 40 lower-case hex digits
    uint32_t mode = 0;   // 0100644, 0100755, 0120000 (symlink), 0160000 (gitlink)
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    uint64_t ino = 0;
    uint8_t stage = 0;  // 0 unless the path is in a merge conflict

    bool operator==(const GitIndexEntry&) const = default;
};
// parse_git_index with each entry's data, in index order.
Result<std::vector<GitIndexEntry>> parse_git_index_entries(std::string_view bytes);

struct GitIndex {
    std::vector<GitIndexEntry> entries{};
    int64_t mtime_ns = 0;  // of the index file: an entry as new is "racily clean" to git
};
// The index of the repository at `workspace` (its .git/index, beneath the workspace's
// descriptor, never through a symlink). kNotFound when there is none.
Result<GitIndex> read_git_index(const HostDir& workspace);

// A Read deny rule and the files git tracks that it denies: the sandbox masks them, but git
// prints their committed contents from the repository's objects, which no mask of the files
// can hide. Only the index is read (the objects are zlib-compressed, and zlib is no dependency
// of ours): a file committed once and no longer in the index is not found, though it is just
// as readable through git.
struct TrackedDenial {
    std::string rule{};    // its text: Read(./.env)
    std::string origin{};  // where it is written: "command line:1", a settings file and line
    size_t count = 0;      // the tracked files it denies
    std::vector<std::string> first{};  // the first few of them, relative to the workspace
};

// The Read deny rules of `policy` that deny paths of `tracked` (relative to `workspace`, as
// parse_git_index gives them), ordered by rule text and origin. Empty when a deny rule also
// hides the repository's objects (Read(./.git/**)): git cannot read them then. Pure.
std::vector<TrackedDenial> tracked_denials(const policy::Policy& policy,
                                           const std::string& workspace,
                                           const std::vector<std::string>& tracked);

// tracked_denials of the repository at `workspace` (its .git/index, read beneath the
// workspace's descriptor). Empty when there is no index (or it is not a regular file), no such
// file or no such rule. `policy_root`: where the policy sees the workspace (the sandbox's
// view of it); "" for its own path.
std::vector<TrackedDenial> git_tracked_denied(const policy::Policy& policy,
                                              const HostDir& workspace,
                                              const std::string& policy_root = "");

// For the operator (the session's start, policy check and explain, doctor): which rule, where
// it is written, how many files, the first few, and the two ways to make it hold.
std::string tracked_denial_warning(const TrackedDenial& denial);

// One warning (tracked_denial_warning) per rule of git_tracked_denied.
std::vector<std::string> git_tracked_denials(const policy::Policy& policy,
                                             const HostDir& workspace);

// For the model, after the first result of a session: which files git tracks that the policy
// denies it, that their committed contents are off limits all the same, and what the user can
// do to make the rules hold. Workspace-relative paths and rule texts only (never an origin,
// which may be a host path); "" when `denials` is empty.
std::string tracked_denials_note(const std::vector<TrackedDenial>& denials);

}  // namespace stockade::runner
