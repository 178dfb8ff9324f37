// Policy enforcement in the sandbox (DESIGN.md §5): the analysis of a bash command is advisory,
// so deny rules on paths must also hold for whatever a command does. enforcement_for() walks
// the workspace and turns every deny rule for reading into masks and every deny rule for
// writing into read-only paths, for SandboxConfig::masked_paths / read_only_paths (and so for
// SandboxSpec, sandbox/spec.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "runner/session/sandbox_config.h"

namespace stockade::runner {

struct Enforcement {
    // Real paths in the workspace, sorted, nothing beneath a masked directory.
    std::vector<std::string> masked_paths;     // reading denied (Read rules): hidden
    std::vector<std::string> read_only_paths;  // writing denied (Edit/Write rules; a path in
                                               // both lists is masked and its parents pinned),
                                               // and the defaults .git/hooks and .git/config
    // What could not be enforced or was left out, one sentence each, for the session's log.
    std::vector<std::string> notes;
    // True when a deny rule matched something: the sandbox must apply the lists (a level with
    // a mount namespace). False when they hold only the defaults (hardening, best effort).
    bool from_rules = false;
};

// Walks `workspace` (the root the policy was loaded with) by descriptor, without following
// symlinks, except that a symlink to a directory inside the workspace (resolved beneath the
// workspace's descriptor) is walked once under its own name, so that rules about paths through
// it reach the real files. A path is masked
// when reading it is denied by a rule (Policy::evaluate_one on a file.read request of the read
// tool: denied, and by a rule rather than by the preset's default; in ci and hosted modes an
// ask rule counts, as nobody can approve); read-only when writing it is (file.write, edit
// tool). A directory is masked (or made read-only) whole when it matches itself, or when
// every entry in it does and so would a new one; else its entries are, one by one. Masked
// directories are not walked. A matching symlink protects its target when that lies in the
// workspace (else a note). Other names (hard links) of a protected file found in the walk are
// protected too. Stops after `max_entries` entries with a note: what lies beyond is not
// protected. `policy_root` is where the policy sees the workspace (its workspace_root: the
// sandbox's view of it); "" for the workspace's own path. The paths returned are host paths.
inline constexpr size_t kMaxEnforcementEntries = 200000;
Enforcement enforcement_for(const policy::Policy& policy, const HostDir& workspace,
                            size_t max_entries = kMaxEnforcementEntries,
                            const std::string& policy_root = "");

// Adds the lists to `config` (masked_paths, read_only_paths), best effort when they hold
// only the defaults. The paths are real paths in the workspace (enforcement_for made them so);
// one that becomes a symlink before a launch fails that launch.
void apply_enforcement(const Enforcement& enforcement, SandboxConfig& config);

// The git metadata that is read-only by default in every sandbox (serve and run), under the
// workspace: .git/hooks and .git/config, where they exist and neither they nor .git are
// symlinks (a note says so for a symlink), looked up by descriptor. A hook or a core.hooksPath,
// core.fsmonitor or filter setting planted there would run with the user's next git command,
// outside any sandbox.
std::vector<std::string> git_metadata_paths(const HostDir& workspace,
                                            std::vector<std::string>& notes);
// The same beneath `workspace_fd`, whose real path is `workspace_root`.
std::vector<std::string> git_metadata_paths(int workspace_fd, const std::string& workspace_root,
                                            std::vector<std::string>& notes);

// Adds the policy's "sandbox" block to `config`: allowRead → ro, allowWrite → rw (as real
// paths), env → env ("NAME" alone taken from `environ`), and denyRead/denyWrite →
// masked/read-only paths (those inside the workspace or a mount; the sandbox cannot see the
// others anyway). A mount whose path does not exist, or an env NAME not set, is left out.
// Returns one note per entry left out, for the session's log; a deny path through a symlink is
// an error (kInvalidArgument, check_protected_path), as the sandbox could not protect it.
Result<std::vector<std::string>> apply_sandbox_settings(const policy::SandboxSettings& settings,
                                                        const std::vector<std::string>& environ,
                                                        SandboxConfig& config);

// The network of a session's sandbox: `requested` (--network), except that none becomes
// host when the policy allows network.access outright (a rule naming no host).
sandbox::NetworkMode session_network(const policy::Policy& policy, sandbox::NetworkMode requested);

// How a session's calls are analysed: paths resolve as inside the sandbox (HOME is /tmp), and
// its loopback is its own unless the sandbox has the host's network (`network`).
policy::RequestContext session_request_context(const std::string& workspace_root,
                                               sandbox::NetworkMode network);

}  // namespace stockade::runner
