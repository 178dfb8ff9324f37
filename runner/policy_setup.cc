#include "runner/policy_setup.h"

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

Result<std::vector<policy::SettingsSource>> policy_sources(const PolicyFlags& flags,
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

    for (const std::string& file : flags.files) {
        ASSIGN_OR_RETURN(auto text, read_optional(file));
        if (!text) {
            return Error{Errc::kNotFound, fmt::format("--policy \"{}\": no such file", file)};
        }
        sources.push_back({.layer = policy::Layer::kCommandLine,
                           .origin = file,
                           .text = std::move(*text),
                           .base_dir = {}});
    }
    if (!flags.allow.empty() || !flags.ask.empty() || !flags.deny.empty()) {
        sources.push_back(policy::command_line_source(flags.allow, flags.ask, flags.deny));
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

    if (!flags.no_user_settings) {
        std::string config = env_or("XDG_CONFIG_HOME", policy_home() + "/.config");
        const std::string user = config + "/stockade/settings.json";
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

Result<policy::Policy> load_policy(const PolicyFlags& flags, const HostDir& workspace,
                                   std::vector<std::string>& warnings) {
    policy::PolicyOptions options{.preset = std::nullopt,
                                  .mode = policy::Mode::kLocal,
                                  .workspace_root = workspace.path(),
                                  .home = policy_home()};
    if (!flags.mode.empty()) {
        auto mode = policy::parse_mode(flags.mode);
        if (!mode) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("--mode \"{}\": use ci, local or hosted", flags.mode)};
        }
        options.mode = *mode;
    }
    if (!flags.preset.empty()) {
        auto preset = policy::parse_preset(flags.preset);
        if (!preset) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("--preset \"{}\": use read-only, workspace-write or "
                                     "danger-full-access",
                                     flags.preset)};
        }
        options.preset = *preset;
    }
    for (const std::string& name : flags.allow_presets) {
        if (!policy::network_preset(name)) {
            std::string known;
            for (std::string_view n : policy::network_preset_names()) {
                known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
            }
            return Error{Errc::kInvalidArgument,
                         fmt::format("--allow-preset \"{}\": no such network preset (known: {})",
                                     name, known)};
        }
        options.allow_presets.push_back(name);
    }
    if (!flags.ask_fallback.empty() && flags.ask_fallback != "deny" &&
        flags.ask_fallback != "allow") {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--ask-fallback \"{}\": use deny or allow", flags.ask_fallback)};
    }
    ASSIGN_OR_RETURN(auto sources, policy_sources(flags, workspace));
    ASSIGN_OR_RETURN(policy::Policy loaded, policy::Policy::load(sources, options));
    warnings = loaded.warnings();
    return loaded;
}

}  // namespace stockade::runner
