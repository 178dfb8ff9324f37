#include "runner/session/policy_setup.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "common/syscall.h"
#include "policy/network_preset.h"
#include "workspace/open_beneath.h"

namespace stockade::runner {

namespace {

constexpr size_t kMaxSettingsBytes = size_t{1} << 20;

// NOLINTNEXTLINE(concurrency-mt-unsafe): read at start-up, before any thread.
std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

Result<std::string> read_settings_fd(int fd, const std::string& origin) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return errno_error(fmt::format("stat \"{}\"", origin), errno);
    }
    if (!S_ISREG(st.st_mode)) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("\"{}\" is not a regular file: a settings file must be one", origin)};
    }
    auto text = read_all(fd, kMaxSettingsBytes + 1);
    if (!text) {
        return std::move(text).error().wrap(fmt::format("read \"{}\"", origin));
    }
    if (text->size() > kMaxSettingsBytes) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is larger than {} bytes: not a settings file", origin,
                                 kMaxSettingsBytes)};
    }
    return std::move(text).value();
}

// An optional host file: nullopt when it does not exist.
Result<std::optional<std::string>> read_optional(const std::string& path) {
    int fd = retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            return std::optional<std::string>{};
        }
        return errno_error(fmt::format("open \"{}\"", path), errno);
    }
    UniqueFd owned(fd);
    ASSIGN_OR_RETURN(std::string text, read_settings_fd(fd, path));
    return std::optional<std::string>(std::move(text));
}

}  // namespace

std::string policy_home() {
    std::string home = env_or("HOME", "");
    if (!home.empty()) {
        return home;
    }
    const passwd* pw = ::getpwuid(::getuid());  // NOLINT(concurrency-mt-unsafe): start-up
    return pw != nullptr && pw->pw_dir != nullptr ? std::string(pw->pw_dir) : std::string("/");
}

Result<std::vector<policy::SettingsSource>> policy_sources(const PolicyConfig& config,
                                                           const HostDir& workspace) {
    std::vector<policy::SettingsSource> sources;
    const std::string managed = env_or("STOCKADE_MANAGED_SETTINGS", "/etc/stockade/settings.json");
    ASSIGN_OR_RETURN(auto managed_text, read_optional(managed));
    if (managed_text) {
        sources.push_back({.layer = policy::Layer::kManaged,
                           .origin = managed,
                           .text = std::move(*managed_text),
                           .base_dir = {}});
    }

    for (const std::string& file : config.files) {
        ASSIGN_OR_RETURN(auto text, read_optional(file));
        if (!text) {
            return Error{Errc::kNotFound, fmt::format("--policy \"{}\": no such file", file)};
        }
        sources.push_back({.layer = policy::Layer::kCommandLine,
                           .origin = file,
                           .text = std::move(*text),
                           .base_dir = {}});
    }
    if (!config.allow.empty() || !config.ask.empty() || !config.deny.empty()) {
        sources.push_back(policy::command_line_source(config.allow, config.ask, config.deny));
    }

    // The project's file is the repository's: resolved beneath the workspace so that a
    // symlink cannot make the supervisor read a host file.
    {
        const std::string origin = workspace.path() + "/.stockade/settings.json";
        // O_NONBLOCK: a FIFO planted there must not block the supervisor (it is refused as
        // not a regular file).
        auto fd = workspace::open_beneath(workspace.fd(), ".stockade/settings.json",
                                          O_RDONLY | O_NONBLOCK);
        if (fd) {
            ASSIGN_OR_RETURN(std::string text, read_settings_fd(fd->get(), origin));
            sources.push_back({.layer = policy::Layer::kProject,
                               .origin = origin,
                               .text = std::move(text),
                               .base_dir = {}});
        } else if (fd.error().sys_errno != ENOENT && fd.error().sys_errno != ENOTDIR) {
            return Error{fd.error().code,
                         fmt::format("\"{}\": {} (a project settings file must stay inside the "
                                     "workspace)",
                                     origin, fd.error().message)};
        }
    }

    if (!config.no_user_settings) {
        const std::string config_home = env_or("XDG_CONFIG_HOME", policy_home() + "/.config");
        const std::string user = config_home + "/stockade/settings.json";
        ASSIGN_OR_RETURN(auto user_text, read_optional(user));
        if (user_text) {
            sources.push_back({.layer = policy::Layer::kUser,
                               .origin = user,
                               .text = std::move(*user_text),
                               .base_dir = {}});
        }
    }
    return sources;
}

Result<policy::Policy> load_policy(const PolicyConfig& config, const HostDir& workspace,
                                   std::vector<std::string>& warnings,
                                   const std::string& policy_root) {
    policy::PolicyOptions options{
        .workspace_root = policy_root.empty() ? workspace.path() : policy_root,
        .home = policy_home()};
    options.mode = config.mode.value_or(policy::Mode::kLocal);
    options.preset = config.preset;
    options.allow_presets = config.allow_presets;
    ASSIGN_OR_RETURN(auto sources, policy_sources(config, workspace));
    ASSIGN_OR_RETURN(policy::Policy loaded, policy::Policy::load(sources, options));
    warnings = loaded.warnings();
    return loaded;
}

}  // namespace stockade::runner
