// `stockade run [options] -- CMD [ARGS...]`: one command in a sandbox, bwrap-style.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/cgroup.h"
#include "sandbox/spec.h"

namespace stockade::runner {

// Exit codes of `stockade run` besides the command's own status.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 77;   // the isolation level asked for is not available
inline constexpr int kExitTimeout = 124;      // --timeout expired; the sandbox was killed
inline constexpr int kExitSetupFailed = 125;  // stockade itself could not build the sandbox
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// The dedicated host ids a root caller's sandbox user maps to (files it creates outside
// idmapped binds, e.g. in /tmp, are owned by them).
inline constexpr uid_t kDefaultHostUid = 1879048192;  // 0x70000000
inline constexpr gid_t kDefaultHostGid = 1879048192;

// The flags as typed; values are parsed by build_run_spec so that errors are ours.
struct RunOptions {
    std::string workspace;
    std::vector<std::string> ro;
    std::vector<std::string> rw;
    std::vector<std::string> env;
    std::string git_identity;  // serve/call: --git-identity "Name <email>"
    std::string network = "none";
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
    // fails (exit 77), unless path_rules_best_effort (hardening defaults only; not a flag).
    // runner/policy_enforcement.h turns deny rules into these lists.
    std::vector<std::string> masked_paths;
    std::vector<std::string> read_only_paths;
    bool path_rules_best_effort = false;
    // `stockade run --writable-git`: leave .git/config and .git/hooks writable (they are
    // read-only by default, as in every session of serve).
    bool writable_git = false;
    std::vector<std::string> command;
};

// What build_run_spec reads of the calling process, so tests can give literals.
struct CallerContext {
    std::string cwd;
    uid_t euid = 0;
    gid_t egid = 0;
    std::vector<std::string> environ;  // "NAME=VALUE"
    std::array<bool, 3> tty_fds{};
    uint64_t memory_bytes = 0;  // the host's RAM (sysinfo), for the default memory limit
};

// The limits a sandbox has when the caller names none: a share of the host's memory (where a
// memory cgroup applies: an address-space rlimit would break runtimes that reserve far more
// than they use, such as V8 and the JVM), a pids limit, and a 1 GiB /tmp (Limits::tmp_bytes).
inline constexpr uint64_t kDefaultPids = 4096;
uint64_t default_memory_bytes(uint64_t host_memory_bytes);  // half of it, at least 512 MiB

// `--mode hosted` ("quotas on"): tighter limits for what the options leave unset — memory
// 2G, pids 512, cpu 1, /tmp 512M.
void apply_hosted_quotas(RunOptions& options);

// "memory 11.8G (half of this host's; a memory cgroup only), pids 4096, /tmp 1G" — the limits a
// sandbox made from `options` gets, for the banner and doctor.
std::string describe_limits(const RunOptions& options, const CallerContext& caller);

// Turns the options into a spec (isolation left as requested; kAuto resolved at launch).
// Errors are usage errors (kInvalidArgument, kNotFound), each one line naming the fix.
Result<sandbox::SandboxSpec> build_run_spec(const RunOptions& options, const CallerContext& caller);

CallerContext current_caller();

// Sets NAME=VALUE in an environment list, replacing an entry of that name.
void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value);

// Resolves `auto` and checks that an explicit level can be given (exit 77 material). Only the
// cheap probes: namespaces are assumed, and clone reports if they are missing. The cgroup
// probe's result is kept for the launch.
struct Resolved {
    sandbox::Isolation level = sandbox::Isolation::kNone;
    sandbox::CgroupSupport cgroups{};
};
Result<Resolved> resolve_isolation(sandbox::Isolation requested);

// Runs the command; returns the process exit code.
int run_command(const RunOptions& options);

}  // namespace stockade::runner
