// One sandbox's configuration as a typed value, and make_sandbox_spec(): the pure function that
// turns it into the SandboxSpec the launcher starts. `stockade run` gets its SandboxConfig from
// its flags (parse_run_flags, runner/cli/run_command.h); a session from serve's flags and its
// policy (Session::open); each session worker from the session's. Whoever makes a config checks
// its paths then (they exist, are real, are not symlinks); nothing here stats a path, reads the
// environment or prints.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "images/image.h"
#include "network/address.h"
#include "runner/session/host_ids.h"
#include "sandbox/spec.h"

namespace stockade::runner {

// The dedicated host ids a privileged caller's sandbox user maps to (files it creates outside
// idmapped binds, e.g. in /tmp, are owned by them).
inline constexpr uid_t kDefaultHostUid = 1879048192;  // 0x70000000
inline constexpr gid_t kDefaultHostGid = 1879048192;
// What a stored image's uid and gid 0 map to for a privileged caller (sandbox::Identity::
// image_root_host_id), just below those: root inside, a host id nothing runs as.
inline constexpr uid_t kImageRootHostId = 1879048191;  // 0x6FFFFFFF

// The limits a sandbox has when the caller names none: a share of the host's memory (where a
// memory cgroup applies: an address-space rlimit would break runtimes that reserve far more
// than they use, such as V8 and the JVM), a pids limit, and a 1 GiB /tmp (Limits::tmp_bytes).
inline constexpr uint64_t kDefaultPids = 4096;
uint64_t default_memory_bytes(uint64_t host_memory_bytes);  // half of it, at least 512 MiB

// What make_sandbox_spec reads of the calling process, gathered once by current_caller(), or
// literals in tests.
struct CallerContext {
    std::string cwd;  // a real path (getcwd)
    uid_t euid = 0;
    gid_t egid = 0;
    // Root with CAP_SYS_ADMIN (privileged_caller): its sandbox user maps to a host id of its own
    // and writable binds are idmapped. Every other caller, root without CAP_SYS_ADMIN included,
    // maps its own uid.
    bool privileged = false;
    // The ids a privileged caller hands its sandboxes when its user namespace maps only some
    // (ids_inside_own_map: a container's); nullopt: every id, and the constants above hold.
    // current_caller() counts a caller whose map spares none as unprivileged.
    std::optional<HostIdRange> own_map_ids;
    std::vector<std::string> environ;  // "NAME=VALUE"
    std::array<bool, 3> tty_fds{};
    uint64_t memory_bytes = 0;  // the host's RAM (sysinfo), for the default memory limit
};

CallerContext current_caller();

// The host ids a privileged caller's sandboxes map to: `stockade run`'s sandbox user, a stored
// image's root, and the range sessions lease from. The constants above, or within own_map_ids:
// its last id, the one below, and the rest.
uid_t run_host_id(const CallerContext& caller);
uid_t image_root_host_id(const CallerContext& caller);
HostIdRange session_host_ids(const CallerContext& caller);

// --memory, --pids, --cpu, --tmp-size as values; nullopt: the default.
struct SandboxLimits {
    std::optional<uint64_t> memory_bytes{};  // default: default_memory_bytes, a memory cgroup only
    std::optional<uint64_t> pids{};          // default: kDefaultPids
    std::optional<double> cpu{};             // default: no CPU limit
    std::optional<uint64_t> tmp_bytes{};     // default: sandbox::Limits::tmp_bytes (1 GiB)
    std::string group{};                     // sandbox::Limits::group (serve --http's tenant)
    std::optional<uint64_t> group_cpu_weight{};
};

// Each limit as an operator writes it (--memory 2G on the command line, "memory": "2G" in a
// tenants file), parsed and bounded the same way wherever it comes from, so that a value one
// place accepts starts a sandbox. Errors (kInvalidArgument) say what is wrong; the caller
// names the flag or key.
Result<uint64_t> parse_memory_limit(std::string_view text);  // a size (parse_size), at least 4M
Result<uint64_t> parse_pids_limit(std::string_view text);    // 2 to 4194304
Result<double> parse_cpu_limit(std::string_view text);       // CPUs, parse_cpu_fraction
Result<uint64_t> parse_tmp_limit(std::string_view text);     // a size, more than 0

// `--mode hosted` ("quotas on"): tighter limits for what is left unset — memory 2G, pids 512,
// cpu 1, /tmp 512M.
void apply_hosted_quotas(SandboxLimits& limits);

// "memory 11.8G (half of this host's, ...), pids 4096, cpu all, /tmp 1G": the limits a sandbox
// with `limits` gets, for the banner and doctor.
std::string describe_limits(const SandboxLimits& limits, const CallerContext& caller);

// What runs in the sandbox.
// `stockade run`'s command, under stockade-init (pid 1, which reaps and forwards signals).
struct CommandProcess {
    std::vector<std::string> argv{};  // argv[0] is searched on the sandbox's PATH
    // Inside the sandbox; empty: the caller's directory when it lies in the workspace, else the
    // workspace.
    std::string cwd{};
    std::optional<std::chrono::milliseconds> timeout{};
};

// A session's worker: the stockade binary, pid 1 itself, serving the channel on its fd 3.
// The descriptors are the caller's and must stay open until the launch has returned.
struct WorkerProcess {
    std::vector<std::string> argv{};
    int exec_fd = -1;     // the binary, executed from this descriptor (execveat)
    int channel_fd = -1;  // becomes the worker's fd 3
    int null_fd = -1;     // /dev/null: the worker's stdin and stdout (stdout is the protocol's)
    // A ripgrep carried in by descriptor (rg_bundle.h): the worker's fds 4, 5, …; argv says
    // how many. Empty: the worker runs the rg on the image's PATH.
    std::vector<int> rg_fds{};
};

struct SandboxConfig {
    // Host paths are absolute and real (no symlink on the way) when the config is made.
    // The workspace: a directory held open (never "/"), mounted read-write at the path it had
    // when it was opened. What is bound is the descriptor, whatever the path leads to by then.
    HostDir workspace{};
    uid_t workspace_uid = 0;  // its owner: a privileged caller at level landlock runs as it
    gid_t workspace_gid = 0;
    // A session's spill directory (tool-output/), mounted read-only at its path, by descriptor
    // as the workspace is. Not valid: none (stockade run).
    HostDir spill{};
    // Where the workspace and the spill directory appear inside the sandbox when not at their
    // own paths: serve --http gives a tenant's sessions /workspace and /stockade/tool-output,
    // so that nothing its model reads shows the server's layout. Empty: at their own paths.
    // Needs a mount namespace. Every other path here stays a host path; what the model and the
    // policy see goes through inside().
    std::string workspace_view{};
    std::string spill_view{};
    // The workspace's and the spill directory's paths inside the sandbox.
    [[nodiscard]] const std::string& workspace_inside() const;
    [[nodiscard]] const std::string& spill_inside() const;
    // A host path at or beneath the workspace or the spill directory as the sandbox sees it;
    // any other path as it is.
    [[nodiscard]] std::string inside(const std::string& host_path) const;
    // The reverse: a path as the sandbox sees it, on the host.
    [[nodiscard]] std::string outside(const std::string& inside_path) const;
    images::Image image{};          // the read-only root
    std::vector<std::string> ro{};  // mounted read-only at the same path
    std::vector<std::string> rw{};  // mounted read-write at the same path
    // Paths hidden and made read-only (SandboxSpec::masked_paths / read_only_paths): absolute,
    // normalised, inside the workspace, a bind or the image.
    std::vector<std::string> masked_paths{};
    std::vector<std::string> read_only_paths{};
    bool path_rules_best_effort = false;
    // What crosses into the sandbox's environment besides the baseline (PATH, HOME, USER,
    // LOGNAME, SHELL, LANG, and TERM with a terminal): "NAME=VALUE", a later one winning.
    std::vector<std::string> env{};
    // Files generated in the sandbox's root besides the image's (--package-config's copies,
    // package_config.h); they need a mount namespace.
    std::vector<sandbox::GeneratedFile> files{};
    sandbox::NetworkMode network = sandbox::NetworkMode::kNone;
    // --resolve NAME[:PORT]=ADDRESS[:PORT] (network allowlist): names the proxy connects to
    // where the operator says, private and loopback addresses included.
    std::vector<::stockade::network::ResolvePin> network_pins{};
    size_t network_max_connections = 256;   // --network-connections: open at once
    uint64_t network_bytes_per_second = 0;  // --network-rate: all connections together; 0 none
    sandbox::Isolation isolation = sandbox::Isolation::kAuto;  // as asked for
    SandboxLimits limits{};
    // Privileged callers: the host ids the sandbox user maps to (default kDefaultHostUid/Gid).
    std::optional<uid_t> host_uid{};
    std::optional<gid_t> host_gid{};
    // `stockade image build`'s steps: the sandbox user is root (uid and gid 0) inside its user
    // namespace, still mapped to the host ids above (never host root), so that a step can
    // write the image's root-owned files.
    bool sandbox_root = false;
    std::variant<CommandProcess, WorkerProcess> process{};
};

// The spec of a sandbox for `config` at `level` (resolved: never kAuto), started by `caller`.
// Pure. The level decides what Landlock reads at level landlock, and whom a privileged caller
// runs as there (the workspace's owner: no idmapped mount without a mount namespace). Errors
// (kInvalidArgument) are configurations no launch may get: a privileged caller's sandbox user
// mapped to host root, a masked or read-only path outside every bind.
Result<sandbox::SandboxSpec> make_sandbox_spec(const SandboxConfig& config,
                                               const CallerContext& caller,
                                               sandbox::Isolation level);

// Sets NAME=VALUE in an environment list, replacing an entry of that name.
void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value);
// The value of NAME in an environment list.
std::optional<std::string> lookup_env(const std::vector<std::string>& env, std::string_view name);

// `path` is `dir` or lies beneath it (both absolute and normalised).
bool is_within(const std::string& path, const std::string& dir);

// A path to hide or make read-only, as an operator or a settings file gave it (`what`:
// "--mask", a settings entry): absolute and normalised (a relative one is taken from `cwd`),
// inside one of the `mounted` host paths (the workspace, the binds, the image), and not through
// a symlink at this moment (the sandbox would refuse it at launch). Inside `workspace` (when
// valid), where a sandbox writes, that is looked at beneath the workspace's descriptor, one
// component at a time and never following a link; elsewhere (an operator's bind, the image)
// by path. Errors are kInvalidArgument and say where a link leads.
Result<std::string> check_protected_path(std::string_view what, const std::string& path,
                                         const std::string& cwd,
                                         const std::vector<std::string>& mounted,
                                         const HostDir& workspace = {});

// check_protected_path for every masked and read-only path of `config` (absolute already),
// against what it mounts: its workspace, binds and image.
Status check_protected_paths(const SandboxConfig& config);

// Whether something is at `path` (absolute, normalised), a symbolic link on the way counting
// as something: beneath `workspace`'s descriptor when the path lies inside it, as
// check_protected_path looks.
bool protected_path_exists(const std::string& path, const HostDir& workspace);

}  // namespace stockade::runner
