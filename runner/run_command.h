// `stockade run [options] -- CMD [ARGS...]`: one command in a sandbox, bwrap-style.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "runner/policy_setup.h"
#include "runner/sandbox_config.h"
#include "sandbox/spec.h"

namespace stockade::runner {

// Exit codes of `stockade run` besides the command's own status.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 77;   // the isolation level asked for is not available
inline constexpr int kExitTimeout = 124;      // --timeout expired; the sandbox was killed
inline constexpr int kExitSetupFailed = 125;  // stockade itself could not build the sandbox
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// The sandbox flags of run, serve and call as typed; parse_run_flags and parse_sandbox_flags
// turn them into a SandboxConfig, so that errors are ours.
struct RunOptions {
    std::string workspace;
    // The workspace already opened (serve --http: a tenant's, resolved beneath its root); when
    // valid, `workspace` is not looked at.
    HostDir workspace_dir{};
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
    std::string image = "host";
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

// A path to hide or make read-only, as an operator gave it (`what`: "--mask", a settings
// entry): absolute and normalised (a relative one is taken from `cwd`), inside one of the
// `mounted` host paths (the workspace, the binds, the image), and not through a symlink at
// this moment (the sandbox would refuse it at launch). Errors are kInvalidArgument.
Result<std::string> check_protected_path(std::string_view what, const std::string& path,
                                         const std::string& cwd,
                                         const std::vector<std::string>& mounted);

// Runs the command; returns the process exit code.
int run_command(const RunOptions& options);

}  // namespace stockade::runner
