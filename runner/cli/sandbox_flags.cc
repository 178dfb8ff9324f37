#include "runner/cli/sandbox_flags.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/syscall.h"
#include "images/image.h"
#include "policy/network_preset.h"
#include "runner/cli/image_command.h"
#include "runner/session/package_config.h"

namespace stockade::runner {
namespace {

using sandbox::Isolation;
using sandbox::NetworkMode;

Error usage(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

Result<std::string> existing_path(const std::string& flag, const std::string& path) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR) {
            return Error{
                Errc::kNotFound,
                fmt::format("{} \"{}\" does not exist: create it or fix the path", flag, path)};
        }
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} \"{}\" cannot be used: {}", flag, path, errno_string(err))};
    }
    return std::string(resolved);
}

Result<Isolation> parse_isolation(const std::string& text) {
    if (text == "auto")
        return Isolation::kAuto;
    if (text == "full")
        return Isolation::kFull;
    if (text == "namespaces")
        return Isolation::kNamespaces;
    if (text == "landlock")
        return Isolation::kLandlock;
    if (text == "none")
        return Isolation::kNone;
    return usage(fmt::format(
        "--isolation \"{}\" is not a level: use auto, full, namespaces, landlock or none", text));
}

bool valid_env_name(std::string_view name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    for (char c : name) {
        bool ok =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

// --image: the host image, or one of the store (held for as long as the config lives).
Result<images::Image> load_flagged_image(const RunOptions& flags) {
    if (flags.image.empty() || flags.image == "host") {
        return images::load_image("host");
    }
    const std::string dir = image_store_dir(flags.image_store);
    auto store = images::ImageStore::open(dir, false);
    if (!store && store.error().code == Errc::kNotFound) {
        return Error{Errc::kNotFound,
                     fmt::format("no image \"{}\": there is no image store at {} yet, so only "
                                 "the host image is known; `stockade image import` adds images",
                                 flags.image, dir)};
    }
    if (!store) {
        return std::move(store).error();
    }
    return images::load_stored_image(*store, flags.image);
}

}  // namespace

Result<PolicyConfig> parse_policy_flags(const PolicyFlags& flags) {
    PolicyConfig config{.files = flags.files,
                        .allow = flags.allow,
                        .ask = flags.ask,
                        .deny = flags.deny,
                        .no_user_settings = flags.no_user_settings};
    if (!flags.mode.empty()) {
        auto mode = policy::parse_mode(flags.mode);
        if (!mode) {
            return usage(fmt::format("--mode \"{}\": use ci, local or hosted", flags.mode));
        }
        config.mode = *mode;
    }
    if (!flags.preset.empty()) {
        auto preset = policy::parse_preset(flags.preset);
        if (!preset) {
            return usage(
                fmt::format("--preset \"{}\": use read-only, workspace-write or "
                            "danger-full-access",
                            flags.preset));
        }
        config.preset = *preset;
    }
    for (const std::string& name : flags.allow_presets) {
        if (!policy::network_preset(name)) {
            std::string known;
            for (std::string_view n : policy::network_preset_names()) {
                known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
            }
            return usage(fmt::format("--allow-preset \"{}\": no such network preset (known: {})",
                                     name, known));
        }
        config.allow_presets.push_back(name);
    }
    if (flags.ask_fallback == "allow") {
        config.ask_fallback = AskFallback::kAllow;
    } else if (!flags.ask_fallback.empty() && flags.ask_fallback != "deny") {
        return usage(fmt::format("--ask-fallback \"{}\": use deny or allow", flags.ask_fallback));
    }
    return config;
}

Result<ParsedFlags> parse_sandbox_flags(const RunOptions& flags, const CallerContext& caller) {
    ParsedFlags parsed;
    SandboxConfig& config = parsed.config;

    // The workspace and the binds: every path must exist; they appear at the same path inside.
    // The workspace is opened here, once: everything later works through this descriptor.
    if (!flags.workspace_per_session) {
        const std::string& path = flags.workspace.empty() ? caller.cwd : flags.workspace;
        auto opened = HostDir::open(path);
        if (!opened) {
            const int err = opened.error().sys_errno;
            if (err == ENOENT) {
                return Error{Errc::kNotFound,
                             fmt::format("workspace \"{}\" does not exist: create it or fix the "
                                         "path",
                                         path)};
            }
            return usage(
                err == ENOTDIR
                    ? fmt::format("workspace \"{}\" is not a directory: pass a directory with "
                                  "--workspace",
                                  path)
                    : fmt::format("workspace \"{}\" cannot be used: {}", path, errno_string(err)));
        }
        config.workspace = std::move(opened).value();
    }
    if (config.workspace.valid()) {
        struct stat st {};
        if (::fstat(config.workspace.fd(), &st) != 0) {
            return errno_error(fmt::format("stat the workspace \"{}\"", config.workspace.path()),
                               errno);
        }
        if (config.workspace.path() == "/") {
            return usage(
                "refusing to use / as the workspace: pass a project directory with --workspace");
        }
        config.workspace_uid = st.st_uid;
        config.workspace_gid = st.st_gid;
    }
    ASSIGN_OR_RETURN(config.isolation, parse_isolation(flags.isolation));
    if (flags.network == "none") {
        config.network = NetworkMode::kNone;
    } else if (flags.network == "host") {
        config.network = NetworkMode::kHost;
    } else if (flags.network == "allowlist") {
        config.network = NetworkMode::kAllowlist;
    } else {
        return usage(fmt::format("--network \"{}\" is not a mode: use none, allowlist or host",
                                 flags.network));
    }
    for (const auto& text : flags.resolve) {
        auto pin = network::parse_resolve_pin(text);
        if (!pin) {
            return usage(fmt::format("--resolve \"{}\": {}", text, pin.error().message));
        }
        config.network_pins.push_back(std::move(pin).value());
    }
    if (!config.network_pins.empty() && config.network != NetworkMode::kAllowlist) {
        return usage("--resolve pins names for the proxy of --network allowlist; add that flag");
    }
    if (!flags.network_connections.empty()) {
        auto n = parse_uint(flags.network_connections, 1, 65536);
        if (!n) {
            return usage(fmt::format("--network-connections: {}", n.error().message));
        }
        config.network_max_connections = static_cast<size_t>(*n);
    }
    if (!flags.network_rate.empty()) {
        auto rate = parse_size(flags.network_rate);
        if (!rate || *rate == 0) {
            return usage(fmt::format("--network-rate: {}",
                                     rate ? "must be more than 0" : rate.error().message));
        }
        config.network_bytes_per_second = *rate;
    }
    if ((!flags.network_connections.empty() || !flags.network_rate.empty()) &&
        config.network != NetworkMode::kAllowlist) {
        return usage(
            "--network-connections and --network-rate bound the proxy of --network allowlist; "
            "add that flag");
    }
    auto checked = [](const std::string& flag, auto result) -> decltype(result) {
        if (!result) {
            return usage(fmt::format("{}: {}", flag, result.error().message));
        }
        return result;
    };
    if (!flags.memory.empty()) {
        ASSIGN_OR_RETURN(config.limits.memory_bytes,
                         checked("--memory", parse_memory_limit(flags.memory)));
    }
    if (!flags.pids.empty()) {
        ASSIGN_OR_RETURN(config.limits.pids, checked("--pids", parse_pids_limit(flags.pids)));
    }
    if (!flags.cpu.empty()) {
        ASSIGN_OR_RETURN(config.limits.cpu, checked("--cpu", parse_cpu_limit(flags.cpu)));
    }
    if (!flags.tmp_size.empty()) {
        ASSIGN_OR_RETURN(config.limits.tmp_bytes,
                         checked("--tmp-size", parse_tmp_limit(flags.tmp_size)));
    }
    if (caller.privileged &&
        ((flags.host_uid && *flags.host_uid == 0) || (flags.host_gid && *flags.host_gid == 0))) {
        return usage(
            "--host-uid/--host-gid 0 would make the sandbox user host root: pick another id");
    }
    config.host_uid = flags.host_uid;
    config.host_gid = flags.host_gid;
    auto image = load_flagged_image(flags);
    if (!image) {
        return usage(fmt::format("--image: {}", image.error().message));
    }
    config.image = std::move(image).value();
    // Where protected paths may lie; a session's workspace that is not known yet stands for
    // anything here, and its host checks them again (check_protected_paths).
    std::vector<std::string> mounted = {config.workspace.valid() ? config.workspace.path() : "/"};
    for (const sandbox::Bind& bind : config.image.binds) {
        mounted.push_back(bind.target);
    }
    for (const auto& path : flags.ro) {
        ASSIGN_OR_RETURN(std::string resolved, existing_path("--ro path", path));
        mounted.push_back(resolved);
        config.ro.push_back(std::move(resolved));
    }
    for (const auto& path : flags.rw) {
        ASSIGN_OR_RETURN(std::string resolved, existing_path("--rw path", path));
        mounted.push_back(resolved);
        config.rw.push_back(std::move(resolved));
    }
    for (const auto& path : flags.masked_paths) {
        ASSIGN_OR_RETURN(std::string real, check_protected_path("--mask", path, caller.cwd, mounted,
                                                                config.workspace));
        config.masked_paths.push_back(std::move(real));
    }
    for (const auto& path : flags.read_only_paths) {
        ASSIGN_OR_RETURN(std::string real, check_protected_path("--read-only", path, caller.cwd,
                                                                mounted, config.workspace));
        config.read_only_paths.push_back(std::move(real));
    }

    // Environment: exactly what --env allows, with NAME alone taken from here.
    for (const auto& entry : flags.env) {
        size_t eq = entry.find('=');
        std::string name = entry.substr(0, eq);
        if (!valid_env_name(name)) {
            return usage(fmt::format("--env \"{}\": \"{}\" is not a variable name", entry, name));
        }
        if (eq != std::string::npos) {
            config.env.push_back(entry);
        } else if (auto value = lookup_env(caller.environ, name)) {
            config.env.push_back(fmt::format("{}={}", name, *value));
        } else {
            parsed.warnings.push_back(fmt::format("--env {}: not set here; not passed", name));
        }
    }
    if (flags.package_config) {
        if (flags.workspace_per_session) {
            return usage(
                "--package-config gives the sandbox the configuration of the user "
                "running stockade, which is not a tenant's: it is not for serve --http");
        }
        PackageConfig package = load_package_config(caller.environ, caller.euid);
        config.files = std::move(package.files);
        config.env.insert(config.env.end(), package.env.begin(), package.env.end());
        parsed.warnings.insert(parsed.warnings.end(), package.warnings.begin(),
                               package.warnings.end());
        if (package.sources.empty() && package.warnings.empty()) {
            parsed.warnings.push_back(
                "--package-config: no npm, pip or cargo configuration of yours was found");
        }
    }
    return parsed;
}

Result<ParsedFlags> parse_run_flags(const RunOptions& flags, const CallerContext& caller) {
    if (flags.command.empty()) {
        return usage("no command given: put it after --, e.g. stockade run -- bash");
    }
    ASSIGN_OR_RETURN(ParsedFlags parsed, parse_sandbox_flags(flags, caller));
    CommandProcess command{.argv = flags.command, .cwd = flags.cwd};
    if (!flags.timeout.empty()) {
        auto timeout = parse_duration(flags.timeout);
        if (!timeout) {
            return usage(fmt::format("--timeout: {}", timeout.error().message));
        }
        command.timeout = *timeout;
    }
    parsed.config.process = std::move(command);
    return parsed;
}

}  // namespace stockade::runner
