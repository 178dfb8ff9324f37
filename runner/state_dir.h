// The state directory (DESIGN.md §6): $STOCKADE_STATE_DIR, else $XDG_STATE_HOME/stockade, else
// ~/.local/state/stockade. Per session: events.jsonl, tool-output/, process-logs/.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace stockade::runner {

// The state directory from the environment (not created).
std::string default_state_dir();

struct SessionPaths {
    std::string id{};
    std::string dir{};          // <state>/sessions/<id>
    std::string events{};       // <dir>/events.jsonl
    std::string tool_output{};  // <dir>/tool-output (mounted read-only in the sandbox)
};

// A new session id: "s-" + 12 random hex digits.
std::string new_session_id();
// Checks an id given by the user (--resume): [A-Za-z0-9_-]{1,64}.
bool valid_session_id(const std::string& id);

// Creates the session's directories (0700).
Result<SessionPaths> open_session_dir(const std::string& state_dir, const std::string& id);

// Keeps the spilled outputs of all sessions under `cap_bytes`, deleting the tool-output of the
// oldest sessions first (never `keep`'s).
void prune_tool_outputs(const std::string& state_dir, const std::string& keep, uint64_t cap_bytes);

}  // namespace stockade::runner
