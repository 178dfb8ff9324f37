// The sandbox flags of run, serve and call (--workspace, --ro, --network, --memory, ...) as the
// command line gives them, and the one place they become a typed SandboxConfig.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "runner/session/policy_setup.h"
#include "runner/session/sandbox_config.h"

namespace stockade::runner {

// The policy flags of serve, call, run --network allowlist, doctor and policy, as given.
struct PolicyFlags {
    std::vector<std::string> files{};  // --policy
    std::vector<std::string> allow{};  // --allow RULE
    std::vector<std::string> ask{};
    std::vector<std::string> deny{};
    std::string mode{};    // --mode ci|local|hosted; empty: local
    std::string preset{};  // --preset read-only|workspace-write|danger-full-access
    // --allow-preset NAME (repeatable): a network preset's allow rules (policy/network_preset.h)
    std::vector<std::string> allow_presets{};
    bool no_user_settings = false;  // --no-user-settings: ignore the user layer (tests, CI)
    // --ask-fallback: what an ask becomes when the client cannot put it to the user (local
    // mode; ci and hosted already turn every ask into a deny). "deny" (default) or "allow".
    std::string ask_fallback{};
};

// The policy flags as a PolicyConfig. Errors (kInvalidArgument) name the flag and the values
// it takes.
Result<PolicyConfig> parse_policy_flags(const PolicyFlags& flags);

// The sandbox flags of run, serve and call as typed; parse_run_flags and parse_sandbox_flags
// turn them into a SandboxConfig, so that errors are ours.
struct RunOptions {
    std::string workspace;
    // serve/call: checkpoints for `stockade rewind` (--checkpoints on|off, --checkpoint-quota
    // SIZE, --checkpoint-file-cap SIZE); parsed by session_config_from_flags.
    std::string checkpoints = "on";
    std::string checkpoint_quota{};
    std::string checkpoint_file_cap{};
    // serve --http: each session's workspace is its tenant's, set by the host; `workspace` is
    // not opened, and --mask/--read-only are checked against each session's workspace then.
    bool workspace_per_session = false;
    std::vector<std::string> ro;
    std::vector<std::string> rw;
    std::vector<std::string> env;
    std::string git_identity;  // serve/call: --git-identity "Name <email>"
    std::string network = "none";
    std::vector<std::string> resolve;  // --resolve NAME[:PORT]=ADDRESS[:PORT]
    std::string network_connections;   // --network-connections N
    std::string network_rate;          // --network-rate SIZE (bytes per second)
    // `stockade run --network allowlist`: the rules that decide its connections (--policy,
    // --allow, --deny, --allow-preset and the settings files, as for serve; in mode ci).
    PolicyFlags network_policy{};
    std::string memory;
    std::string pids;
    std::string cpu;
    std::string tmp_size;
    std::string timeout;
    std::string isolation = "auto";
    std::string image = "host";  // "host", or NAME[@sha256:…] / sha256:… of the image store
    std::string image_store;     // --image-store; empty: image_store_dir's default
    std::string cwd;
    std::optional<uint32_t> host_uid;
    std::optional<uint32_t> host_gid;
    // serve/call as root: the range each session's own host uid is leased from, "FIRST-LAST"
    // (--host-uid-range); empty: 1879048193 and the 65,535 ids above it.
    std::string host_uid_range{};
    // Paths to hide (--mask) and to make read-only (--read-only) inside the sandbox: absolute,
    // or relative to the caller's working directory; each must lie in the workspace or another
    // bind (--ro, --rw, the image) and must not go through a symlink. Missing paths are
    // skipped at launch. They need a mount namespace: at levels landlock and none the launch
    // fails (exit 77).
    std::vector<std::string> masked_paths;
    std::vector<std::string> read_only_paths;
    // `stockade run --writable-git`: leave .git/config and .git/hooks writable (they are
    // read-only by default, as in every session of serve).
    bool writable_git = false;
    // --package-config: the caller's npm, pip and cargo configuration, without credentials
    // (runner/session/package_config.h).
    bool package_config = false;
    std::vector<std::string> command;
};

// A SandboxConfig made from flags, and one line for each flag that was left out (an --env NAME
// that is not set here), for the caller to print or log.
struct ParsedFlags {
    SandboxConfig config;
    std::vector<std::string> warnings;
};

// The flags of serve and call: the workspace and every bind resolved to real paths that must
// exist, --mask/--read-only checked (check_protected_path), the values parsed. The process is
// left to the session worker. Errors are usage errors (kInvalidArgument, kNotFound), each one
// line naming the fix.
Result<ParsedFlags> parse_sandbox_flags(const RunOptions& flags, const CallerContext& caller);

// `stockade run`'s flags: parse_sandbox_flags, and the command with --cwd and --timeout.
Result<ParsedFlags> parse_run_flags(const RunOptions& flags, const CallerContext& caller);

}  // namespace stockade::runner
