#include "runner/session/sandbox_config.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/path.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "runner/session/terminal.h"

extern char** environ;  // NOLINT: POSIX

namespace stockade::runner {
namespace {

Error usage(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

using sandbox::Isolation;
using sandbox::SandboxSpec;

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

// The sandbox's PATH: the directories of the caller's PATH that a bind brings in (a toolchain
// mounted with --ro, a virtualenv in the workspace), in the caller's order, then the default.
std::string sandbox_path(const CallerContext& caller, const std::vector<std::string>& mounted) {
    std::vector<std::string> dirs;
    if (auto path = lookup_env(caller.environ, "PATH")) {
        for (std::string& dir : split_path_list(*path)) {
            const bool inside = std::any_of(mounted.begin(), mounted.end(),
                                            [&](const auto& m) { return is_within(dir, m); });
            if (!dir.empty() && dir.front() == '/' && inside &&
                std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) {
                dirs.push_back(std::move(dir));
            }
        }
    }
    dirs.emplace_back(kDefaultPath);
    return fmt::format("{}", fmt::join(dirs, ":"));
}

// A masked or read-only path must be absolute, normalised and inside something mounted: the
// launcher resolves it beneath the new root.
Status check_policy_path(std::string_view what, const std::string& path, const SandboxSpec& spec) {
    const bool normal = !path.empty() && path.front() == '/' &&
                        std::filesystem::path(path).lexically_normal().string() == path &&
                        (path == "/" || path.back() != '/');
    const bool inside =
        std::any_of(spec.binds.begin(), spec.binds.end(),
                    [&](const sandbox::Bind& b) { return is_within(path, b.target); });
    if (normal && inside) {
        return {};
    }
    return Error{Errc::kInvalidArgument,
                 fmt::format("{} path \"{}\" is not an absolute, normalised path inside the "
                             "workspace or a bind, so it cannot be protected",
                             what, path)};
}

}  // namespace

uint64_t default_memory_bytes(uint64_t host_memory_bytes) {
    return std::max<uint64_t>(host_memory_bytes / 2, uint64_t{512} << 20);
}

CallerContext current_caller() {
    CallerContext caller;
    struct sysinfo info {};
    if (::sysinfo(&info) == 0) {
        caller.memory_bytes = static_cast<uint64_t>(info.totalram) * info.mem_unit;
    }
    std::error_code ec;
    caller.cwd = std::filesystem::current_path(ec).string();
    caller.euid = ::geteuid();
    caller.egid = ::getegid();
    caller.privileged = privileged_caller();  // root with CAP_SYS_ADMIN
    if (caller.privileged) {
        caller.own_map_ids = ids_inside_own_map();
        // Root of a namespace that maps no id to spare runs its sandboxes as itself.
        caller.privileged = !caller.own_map_ids || caller.own_map_ids->count > 0;
    }
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        caller.environ.emplace_back(*e);
    }
    caller.tty_fds = terminal_fds();
    return caller;
}

uid_t run_host_id(const CallerContext& caller) {
    return caller.own_map_ids ? caller.own_map_ids->last() : kDefaultHostUid;
}

uid_t image_root_host_id(const CallerContext& caller) {
    return caller.own_map_ids ? caller.own_map_ids->last() - 1 : kImageRootHostId;
}

HostIdRange session_host_ids(const CallerContext& caller) {
    if (!caller.own_map_ids) {
        return HostIdRange{};
    }
    return HostIdRange{.first = caller.own_map_ids->first, .count = caller.own_map_ids->count - 2};
}

void apply_hosted_quotas(SandboxLimits& limits) {
    limits.memory_bytes = limits.memory_bytes.value_or(uint64_t{2} << 30);
    limits.pids = limits.pids.value_or(512);
    limits.cpu = limits.cpu.value_or(1.0);
    limits.tmp_bytes = limits.tmp_bytes.value_or(uint64_t{512} << 20);
}

Result<uint64_t> parse_memory_limit(std::string_view text) {
    ASSIGN_OR_RETURN(const uint64_t bytes, parse_size(text));
    if (bytes < (4ULL << 20)) {
        return usage("at least 4M is needed to start a process");
    }
    return bytes;
}

Result<uint64_t> parse_pids_limit(std::string_view text) {
    return parse_uint(text, 2, 4'194'304);
}

Result<double> parse_cpu_limit(std::string_view text) {
    return parse_cpu_fraction(text);
}

Result<uint64_t> parse_tmp_limit(std::string_view text) {
    ASSIGN_OR_RETURN(const uint64_t bytes, parse_size(text));
    if (bytes == 0) {
        return usage("must be more than 0 (tmpfs reads 0 as unlimited)");
    }
    return bytes;
}

std::string describe_limits(const SandboxLimits& limits, const CallerContext& caller) {
    const auto gib = [](uint64_t bytes) {
        return fmt::format("{:.1f}G", static_cast<double>(bytes) / static_cast<double>(1ULL << 30));
    };
    std::string memory =
        limits.memory_bytes ? size_text(*limits.memory_bytes)
        : caller.memory_bytes > 0
            ? fmt::format("{} (half of this host's, where a memory cgroup applies)",
                          gib(default_memory_bytes(caller.memory_bytes)))
            : std::string("none");
    return fmt::format("memory {}, pids {}, cpu {}, /tmp {}", memory,
                       limits.pids.value_or(kDefaultPids),
                       limits.cpu ? fmt::format("{}", *limits.cpu) : std::string("all"),
                       size_text(limits.tmp_bytes.value_or(sandbox::Limits{}.tmp_bytes)));
}

void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value) {
    std::string prefix = fmt::format("{}=", name);
    for (auto& entry : env) {
        if (entry.rfind(prefix, 0) == 0) {
            entry = prefix + std::string(value);
            return;
        }
    }
    env.push_back(prefix + std::string(value));
}

std::optional<std::string> lookup_env(const std::vector<std::string>& env, std::string_view name) {
    std::string prefix = fmt::format("{}=", name);
    for (const auto& entry : env) {
        if (entry.rfind(prefix, 0) == 0) {
            return entry.substr(prefix.size());
        }
    }
    return std::nullopt;
}

bool is_within(const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           (dir == "/" || path[dir.size()] == '/'));
}

namespace {

// A network namespace of the sandbox's own: its resolver is the supervisor's refuser on the
// sandbox's loopback (network/dns_refuser.h), never the host's, which it could not reach.
void use_refusing_resolver(SandboxSpec& spec) {
    constexpr const char* kResolvConf = "/etc/resolv.conf";
    std::erase_if(spec.binds, [](const sandbox::Bind& bind) { return bind.target == kResolvConf; });
    spec.files.push_back(sandbox::GeneratedFile{
        .target = kResolvConf,
        .content = "# Stockade: names are not resolved in this sandbox. Without a network every\n"
                   "# lookup is refused at once; with the allowlist, connections go through the\n"
                   "# proxy in $HTTPS_PROXY, which resolves names outside.\n"
                   "nameserver 127.0.0.1\n"
                   "options attempts:1\n",
        .mode = 0644});
    spec.dns_socket = true;
}

}  // namespace

const std::string& SandboxConfig::workspace_inside() const {
    return workspace_view.empty() ? workspace.path() : workspace_view;
}

const std::string& SandboxConfig::spill_inside() const {
    return spill_view.empty() ? spill.path() : spill_view;
}

namespace {

// `path` with the directory `from` at its start replaced by `to`; unchanged when it is not
// within `from`.
std::string rebase(const std::string& path, const std::string& from, const std::string& to) {
    if (from.empty() || from == to || !is_within(path, from)) {
        return path;
    }
    return to + path.substr(from.size());
}

}  // namespace

std::string SandboxConfig::inside(const std::string& host_path) const {
    if (workspace.valid() && is_within(host_path, workspace.path())) {
        return rebase(host_path, workspace.path(), workspace_inside());
    }
    return spill.valid() ? rebase(host_path, spill.path(), spill_inside()) : host_path;
}

std::string SandboxConfig::outside(const std::string& inside_path) const {
    if (workspace.valid() && is_within(inside_path, workspace_inside())) {
        return rebase(inside_path, workspace_inside(), workspace.path());
    }
    return spill.valid() ? rebase(inside_path, spill_inside(), spill.path()) : inside_path;
}

Result<SandboxSpec> make_sandbox_spec(const SandboxConfig& config, const CallerContext& caller,
                                      Isolation level) {
    SandboxSpec spec;
    spec.isolation = level;
    spec.network = config.network;

    // Limits: what the config names, else the defaults.
    if (config.limits.memory_bytes) {
        spec.limits.memory_bytes = config.limits.memory_bytes;
    } else if (caller.memory_bytes > 0) {
        spec.limits.memory_bytes = default_memory_bytes(caller.memory_bytes);
        spec.limits.memory_is_default = true;
    }
    spec.limits.pids = config.limits.pids.value_or(kDefaultPids);
    spec.limits.cpu = config.limits.cpu;
    spec.limits.group = config.limits.group;
    spec.limits.group_cpu_weight = config.limits.group_cpu_weight;
    spec.limits.tmp_bytes = config.limits.tmp_bytes.value_or(spec.limits.tmp_bytes);

    // Identity: never host root. Privileged callers map the sandbox user to a dedicated host id
    // and see writable binds through idmapped mounts; others map their own uid.
    const bool privileged = caller.privileged;
    spec.identity.host_uid =
        privileged ? config.host_uid.value_or(run_host_id(caller)) : caller.euid;
    spec.identity.host_gid =
        privileged ? config.host_gid.value_or(run_host_id(caller)) : caller.egid;
    if (privileged && (spec.identity.host_uid == 0 || spec.identity.host_gid == 0)) {
        return Error{
            Errc::kInvalidArgument,
            "--host-uid/--host-gid 0 would make the sandbox user host root: pick another id"};
    }
    spec.idmap_writable_binds = privileged;
    if (config.sandbox_root) {
        spec.identity.sandbox_uid = 0;
        spec.identity.sandbox_gid = 0;
        spec.identity.user_name = "root";
    }
    if (privileged && config.image.stored() && !config.image.build_root && !config.sandbox_root) {
        // The image's root-owned files are root's inside, through an id no process runs as.
        spec.identity.image_root_host_id = image_root_host_id(caller);
    }
    // No idmapped mount: without a mount namespace, or inside a container's user namespace,
    // where the kernel idmaps no file system the container did not mount itself. The sandbox
    // user is then the workspace's owner, so that what it writes there is that owner's.
    const bool no_idmap = level == Isolation::kLandlock || caller.own_map_ids.has_value();
    if (privileged && no_idmap && config.workspace_uid != 0) {
        spec.identity.host_uid = config.workspace_uid;
        spec.identity.host_gid = config.workspace_gid;
    }
    if (privileged && caller.own_map_ids) {
        spec.idmap_writable_binds = false;
    }

    // The root: the workspace and the binds at their own paths, then the image around them.
    if (!config.workspace.valid()) {
        return Error{Errc::kInvalidArgument, "no workspace directory was opened for the sandbox"};
    }
    const bool mount_ns = level == Isolation::kFull || level == Isolation::kNamespaces;
    if ((!config.workspace_view.empty() || !config.spill_view.empty()) && !mount_ns) {
        return Error{Errc::kUnavailable,
                     fmt::format("the workspace is shown at {} inside the sandbox, which needs a "
                                 "mount namespace, and isolation level {} has none: use "
                                 "--isolation full or namespaces (`stockade doctor` shows which "
                                 "levels this host gives)",
                                 config.workspace_inside(), sandbox::isolation_name(level))};
    }
    const std::string& workspace = config.workspace_inside();
    spec.writable_paths = {workspace, "/tmp", "/dev/shm"};
    spec.binds.push_back(sandbox::Bind{.source = config.workspace.path(),
                                       .target = workspace,
                                       .writable = true,
                                       .source_fd = config.workspace.fd()});
    std::vector<std::string> readable = config.image.readable_paths;
    readable.insert(readable.end(), {workspace, "/tmp", "/dev", "/proc"});
    std::vector<std::string> mounted = {workspace};  // what the caller's PATH may point into
    for (const std::string& path : config.ro) {
        spec.binds.push_back(sandbox::Bind{.source = path, .target = path});
        readable.push_back(path);
        mounted.push_back(path);
    }
    for (const std::string& path : config.rw) {
        spec.binds.push_back(sandbox::Bind{.source = path, .target = path, .writable = true});
        spec.writable_paths.push_back(path);
        readable.push_back(path);
        mounted.push_back(path);
    }
    if (config.spill.valid()) {
        const std::string& spill = config.spill_inside();
        spec.binds.push_back(sandbox::Bind{
            .source = config.spill.path(), .target = spill, .source_fd = config.spill.fd()});
        readable.push_back(spill);
        mounted.push_back(spill);
    }
    // The image goes ahead of those binds, made around their mount points (add_image).
    images::add_image(config.image, spec);
    if (spec.network != sandbox::NetworkMode::kHost && mount_ns) {
        use_refusing_resolver(spec);
    }
    spec.files.insert(spec.files.end(), config.files.begin(), config.files.end());
    if (level == Isolation::kLandlock) {
        spec.readable_paths = std::move(readable);
    }
    for (const std::string& path : config.masked_paths) {
        spec.masked_paths.push_back(config.inside(path));
        RETURN_IF_ERROR(check_policy_path("masked", spec.masked_paths.back(), spec));
    }
    for (const std::string& path : config.read_only_paths) {
        spec.read_only_paths.push_back(config.inside(path));
        RETURN_IF_ERROR(check_policy_path("read-only", spec.read_only_paths.back(), spec));
    }
    spec.path_rules_best_effort = config.path_rules_best_effort;

    // What runs: a command under stockade-init with the caller's terminal, or the worker.
    if (const auto* command = std::get_if<CommandProcess>(&config.process)) {
        spec.argv = command->argv;
        spec.cwd = !command->cwd.empty()                            ? command->cwd
                   : is_within(caller.cwd, config.workspace.path()) ? config.inside(caller.cwd)
                                                                    : workspace;
        spec.tty_fds = caller.tty_fds;
        spec.timeout = command->timeout;
    } else {
        const auto& worker = std::get<WorkerProcess>(config.process);
        spec.argv = worker.argv;
        spec.cwd = workspace;
        spec.init = false;            // the worker is pid 1 and reaps
        spec.commands_cgroup = true;  // an OOM kill the commands cause falls on them, not on it
        spec.exec_fd = worker.exec_fd;
        spec.pass_fds = {worker.channel_fd};
        spec.pass_fds.insert(spec.pass_fds.end(), worker.rg_fds.begin(), worker.rg_fds.end());
        spec.stdio = {worker.null_fd, worker.null_fd, -1};
    }

    // Environment: a small baseline, plus exactly what the config allows. Nothing else crosses.
    const bool any_tty = spec.tty_fds[0] || spec.tty_fds[1] || spec.tty_fds[2];
    set_env(spec.env, "PATH", sandbox_path(caller, mounted));
    set_env(spec.env, "HOME", "/tmp");
    set_env(spec.env, "USER", spec.identity.user_name);
    set_env(spec.env, "LOGNAME", spec.identity.user_name);
    set_env(spec.env, "SHELL", "/bin/bash");
    set_env(spec.env, "LANG", "C.UTF-8");
    if (any_tty) {
        set_env(spec.env, "TERM", lookup_env(caller.environ, "TERM").value_or("xterm-256color"));
    }
    for (const std::string& entry : config.env) {
        const size_t eq = entry.find('=');
        if (eq != std::string::npos) {
            set_env(spec.env, entry.substr(0, eq), entry.substr(eq + 1));
        }
    }
    return spec;
}

namespace {

// The components of `path` below `root` (`path` is `root` or beneath it, both normalised):
// "a", "b" of "<root>/a/b"; nothing of `root` itself.
std::vector<std::string> components_beneath(const std::string& path, const std::string& root) {
    const std::string_view relative =
        path.size() > root.size() ? std::string_view(path).substr(root.size() + 1) : "";
    std::vector<std::string> out;
    size_t start = 0;
    while (start < relative.size()) {
        const size_t slash = std::min(relative.find('/', start), relative.size());
        if (slash > start) {
            out.emplace_back(relative.substr(start, slash - start));
        }
        start = slash + 1;
    }
    return out;
}

// How far `components` lead beneath directory `root`, opened one at a time (O_PATH |
// O_NOFOLLOW, each a single name: a symlink is opened as itself, never followed): how many
// exist, and whether the last of those is a symbolic link (then `target` is its text).
struct Walked {
    size_t existing = 0;
    bool link = false;
    std::string target;
};

Walked walk_beneath(int root, const std::vector<std::string>& components) {
    Walked out;
    UniqueFd held;
    int at = root;
    for (const std::string& name : components) {
        UniqueFd next(retry_eintr(
            [&] { return ::openat(at, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC); }));
        if (!next.valid()) {
            return out;  // missing (or unreachable): nothing there to follow
        }
        ++out.existing;
        struct stat st {};
        if (::fstat(next.get(), &st) == 0 && S_ISLNK(st.st_mode)) {
            char text[PATH_MAX];
            const ssize_t n = ::readlinkat(next.get(), "", text, sizeof text);
            out.link = true;
            out.target = n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
            return out;
        }
        held = std::move(next);
        at = held.get();
    }
    return out;
}

std::string joined_components(const std::string& base, const std::vector<std::string>& parts,
                              size_t count) {
    std::string out = base;
    for (size_t i = 0; i < count; ++i) {
        out += (out.ends_with("/") ? "" : "/") + parts[i];
    }
    return out;
}

// `normal` (absolute, normalised, inside `workspace`) resolved beneath the workspace's
// descriptor: a symbolic link on the way is an error that says where it leads, worked out
// lexically and looked up beneath the same descriptor, never on the host's paths.
Status check_beneath_workspace(std::string_view what, const std::string& path,
                               const std::string& normal, const HostDir& workspace) {
    const std::string& root = workspace.path();
    const std::vector<std::string> parts = components_beneath(normal, root);
    const Walked walked = walk_beneath(workspace.fd(), parts);
    if (!walked.link) {
        return ok_status();
    }
    const std::string link = joined_components(root, parts, walked.existing);
    const std::filesystem::path parent = std::filesystem::path(link).parent_path();
    std::string leads = (walked.target.starts_with("/") ? std::filesystem::path(walked.target)
                                                        : parent / walked.target)
                            .lexically_normal()
                            .string();
    while (leads.size() > 1 && leads.ends_with("/")) {
        leads.pop_back();
    }
    std::string where;
    if (!is_within(leads, root)) {
        where = fmt::format("it leads out of the workspace, to \"{}\"", leads);
    } else {
        const std::vector<std::string> target_parts = components_beneath(leads, root);
        const Walked target = walk_beneath(workspace.fd(), target_parts);
        where = target.existing == target_parts.size() || target.link
                    ? fmt::format("\"{}\"", leads)
                    : std::string("it points nowhere");
    }
    return usage(fmt::format(
        "{} \"{}\": \"{}\" is a symbolic link, which the sandbox cannot protect; name the "
        "real path ({})",
        what, path, link, where));
}

}  // namespace

Result<std::string> check_protected_path(std::string_view what, const std::string& path,
                                         const std::string& cwd,
                                         const std::vector<std::string>& mounted,
                                         const HostDir& workspace) {
    if (path.empty()) {
        return usage(fmt::format("{}: an empty path", what));
    }
    std::filesystem::path joined =
        path.front() == '/' ? std::filesystem::path(path) : std::filesystem::path(cwd) / path;
    std::string normal = joined.lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/') {
        normal.pop_back();
    }
    if (normal.empty() || normal.front() != '/') {
        return usage(fmt::format("{} \"{}\": not an absolute path", what, path));
    }
    const bool inside = std::any_of(mounted.begin(), mounted.end(),
                                    [&](const std::string& m) { return is_within(normal, m); });
    if (!inside) {
        return usage(fmt::format(
            "{} \"{}\": not inside the workspace or a --ro/--rw path, so there is nothing "
            "there to protect; name a path inside them",
            what, path));
    }
    if (workspace.valid() && is_within(normal, workspace.path())) {
        RETURN_IF_ERROR(check_beneath_workspace(what, path, normal, workspace));
        return normal;
    }
    // An operator's bind or the image: host paths no sandbox writes. The deepest part of the
    // path that exists must be its own real path.
    std::string existing = normal;
    struct stat st {};
    while (existing != "/" && ::lstat(existing.c_str(), &st) != 0) {
        existing = std::filesystem::path(existing).parent_path().string();
    }
    char resolved[PATH_MAX];
    const bool resolves = ::realpath(existing.c_str(), resolved) != nullptr;
    if (S_ISLNK(st.st_mode) || (resolves && existing != resolved)) {
        return usage(fmt::format(
            "{} \"{}\": \"{}\" is a symbolic link, which the sandbox cannot protect; name "
            "the real path ({})",
            what, path, existing,
            resolves ? fmt::format("\"{}\"", resolved) : std::string("it points nowhere")));
    }
    return normal;
}

bool protected_path_exists(const std::string& path, const HostDir& workspace) {
    if (workspace.valid() && is_within(path, workspace.path())) {
        const std::vector<std::string> parts = components_beneath(path, workspace.path());
        const Walked walked = walk_beneath(workspace.fd(), parts);
        return walked.link || walked.existing == parts.size();
    }
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

Status check_protected_paths(const SandboxConfig& config) {
    std::vector<std::string> mounted = {config.workspace.path()};
    for (const sandbox::Bind& bind : config.image.binds) {
        mounted.push_back(bind.target);
    }
    mounted.insert(mounted.end(), config.ro.begin(), config.ro.end());
    mounted.insert(mounted.end(), config.rw.begin(), config.rw.end());
    for (const auto& [what, paths] : {std::pair{"--mask", &config.masked_paths},
                                      std::pair{"--read-only", &config.read_only_paths}}) {
        for (const std::string& path : *paths) {
            RETURN_IF_ERROR(check_protected_path(what, path, "/", mounted, config.workspace));
        }
    }
    return ok_status();
}

}  // namespace stockade::runner
