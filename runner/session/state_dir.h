// The state directory (DESIGN.md §6): $STOCKADE_STATE_DIR, else $XDG_STATE_HOME/stockade, else
// ~/.local/state/stockade. Per session: events.jsonl, tool-output/, process-logs/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::runner {

// The state directory from the environment (not created).
std::string default_state_dir();

// A session's place in the state directory: the paths, for messages, and descriptors of the
// two directories, through which the supervisor opens every file there (and which the sandbox's
// read-only bind of the spill directory is made from).
struct SessionPaths {
    std::string id{};
    std::string dir{};          // <state>/sessions/<id>, absolute and without symlinks
    std::string events{};       // <dir>/events.jsonl
    std::string tool_output{};  // <dir>/tool-output (mounted read-only in the sandbox)
    UniqueFd dir_fd{};          // of `dir`
    HostDir tool_output_dir{};  // of `tool_output`
};

// A new session id: "s-" + 12 random hex digits.
std::string new_session_id();
// Checks an id given by the user (--resume): [A-Za-z0-9_-]{1,64}.
bool valid_session_id(const std::string& id);

// The state directory, created (0700) when missing and opened: the trusted root everything in
// it is opened beneath. A relative `state_dir` is taken from the current directory.
Result<HostDir> resolve_state_dir(const std::string& state_dir);

// A directory beneath the state directory (`components`: "tenants", "NAME"), created (0700)
// when missing, opened without following any symlink (open_dir_beneath): a tenant's state.
Result<HostDir> open_state_subdir(const HostDir& state, const std::vector<std::string>& components);

// Refuses a state directory that overlaps the workspace or a path bound into the sandbox, in
// either direction: a command there could then rewrite what the supervisor writes and replays.
// All paths absolute and real (resolve_state_dir, realpath).
Status check_state_dir_apart(const std::string& state_dir, const std::string& workspace,
                             const std::vector<std::string>& binds);

// Creates and opens the session's directories beneath `state` (resolve_state_dir's): each
// component is opened with O_NOFOLLOW, so a symlink anywhere beneath the state directory is an
// error rather than a redirection. sessions/ and <id>/ are 0711 (the sandbox user traverses
// them at isolation levels without a mount namespace), tool-output/ 0755.
// The session directory stays locked (flock on dir_fd) while SessionPaths lives: a session in
// use cannot be resumed a second time (kFailedPrecondition), and no pruning touches it.
// `must_exist`: a session to resume, whose directory and events.jsonl must be there already
// (kNotFound otherwise); nothing is created but its tool-output/.
Result<SessionPaths> open_session_dir(const HostDir& state, const std::string& id,
                                      bool must_exist = false);

struct PruneResult {
    uint64_t kept = 0;   // bytes of tool output left, of every session
    uint64_t freed = 0;  // bytes deleted
};

// Keeps the tool output of all sessions under `cap_bytes`, and frees at least `at_least` bytes,
// deleting the tool-output of the sessions that ended longest ago first (as far as there are
// such sessions). Never a session in use (locked, open_session_dir). Works by descriptor
// beneath `state` and never follows a symlink.
PruneResult prune_tool_outputs(const HostDir& state, uint64_t cap_bytes, uint64_t at_least = 0);

}  // namespace stockade::runner
