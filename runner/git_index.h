// The paths a git repository tracks, read from its index file (.git/index) without running
// git: git in a workspace an agent has written to runs what its config says (core.fsmonitor,
// hooks), and the supervisor may be root. For the warning that a Read-denied file is tracked:
// its committed contents stay readable through git, whatever the sandbox masks.
#pragma once

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

// One warning per Read deny rule that denies tracked files of the repository at `workspace`
// (its .git/index, read beneath the workspace's descriptor): which rule, how many files, the
// first few. Empty when there is no index (or it is not a regular file), no such file or no
// such rule.
std::vector<std::string> git_tracked_denials(const policy::Policy& policy,
                                             const HostDir& workspace);

}  // namespace stockade::runner
