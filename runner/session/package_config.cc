#include "runner/session/package_config.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "runner/session/sandbox_config.h"

namespace stockade::runner {

namespace {

constexpr size_t kMaxConfigBytes = 64 << 10;
constexpr std::string_view kNpmrc = "/.stockade/npmrc";
constexpr std::string_view kPipConf = "/.stockade/pip.conf";
constexpr std::string_view kCargoConfig = "/.cargo/config.toml";

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
        s.remove_suffix(1);
    }
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// The key of a "key = value" line (INI, npmrc, TOML), lower case; "" for none.
std::string key_of(std::string_view line) {
    const size_t eq = line.find('=');
    return eq == std::string_view::npos ? std::string() : lower(trim(line.substr(0, eq)));
}

// Each line of `text` through `keep` (false: dropped and counted), newline-terminated.
template <class Keep>
std::string filter_lines(std::string_view text, size_t* dropped, Keep keep) {
    std::string out;
    size_t count = 0;
    while (!text.empty()) {
        const size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        std::string kept = std::string(line);
        if (keep(kept)) {
            out += kept;
            out += '\n';
        } else {
            ++count;
        }
    }
    if (dropped != nullptr) {
        *dropped = count;
    }
    return out;
}

// "https://user:secret@host/x" -> "https://host/x", every occurrence; true when one was cut.
bool strip_userinfo(std::string& s) {
    bool cut = false;
    size_t at = 0;
    while ((at = s.find("://", at)) != std::string::npos) {
        const size_t start = at + 3;
        const size_t end = s.find_first_of("/ \t\"'", start);
        const size_t user_end = s.rfind('@', end == std::string::npos ? s.size() : end);
        if (user_end != std::string::npos && user_end >= start) {
            s.erase(start, user_end + 1 - start);
            cut = true;
        }
        at = start;
    }
    return cut;
}

std::optional<std::string> env_of(const std::vector<std::string>& environ, std::string_view name) {
    auto value = lookup_env(environ, name);
    if (value && !value->empty()) {
        return *value;
    }
    return std::nullopt;
}

// The file at absolute `path` when it is a regular file `uid` owns, of at most 64 KiB, reached
// without a symlink; nullopt when it does not exist; an error saying why it is not taken.
Result<std::optional<std::string>> read_config(const std::string& path, uid_t uid) {
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            return std::optional<std::string>();
        }
        if (errno == ELOOP) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{} is (or goes through) a symlink, which --package-config "
                                     "does not follow: pass the file with --ro and --env",
                                     path)};
        }
        return errno_error(fmt::format("open {}", path), errno);
    }
    const UniqueFd file(static_cast<int>(fd));
    struct stat st {};
    if (::fstat(file.get(), &st) != 0) {
        return errno_error(fmt::format("stat {}", path), errno);
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != uid) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} is not a regular file of yours: not taken", path)};
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
        return Error{Errc::kInvalidArgument, fmt::format("{} is over 64 KiB: not taken", path)};
    }
    ASSIGN_OR_RETURN(std::string text, read_all(file.get(), kMaxConfigBytes));
    return std::optional<std::string>(std::move(text));
}

}  // namespace

std::string npmrc_without_credentials(std::string_view text, size_t* dropped) {
    static constexpr std::array<std::string_view, 9> kSecret = {
        "_auth", "_authtoken", "_password", "password", "username",
        "email", "certfile",   "keyfile",   "otp"};
    return filter_lines(text, dropped, [](std::string& line) {
        const std::string key = key_of(line);
        if (key.empty()) {
            return true;
        }
        // "//registry.example/:_authToken=…": settings for one registry are its credentials.
        if (key.starts_with("//")) {
            return false;
        }
        return std::find(kSecret.begin(), kSecret.end(), key) == kSecret.end();
    });
}

std::string pip_conf_without_credentials(std::string_view text, size_t* dropped) {
    size_t cut = 0;
    std::string out = filter_lines(text, dropped, [&](std::string& line) {
        const std::string key = key_of(line);
        if (key == "client-cert" || key == "client_cert") {
            return false;
        }
        cut += strip_userinfo(line) ? size_t{1} : size_t{0};
        return true;
    });
    if (dropped != nullptr) {
        *dropped += cut;
    }
    return out;
}

std::string cargo_config_without_credentials(std::string_view text, size_t* dropped) {
    return filter_lines(text, dropped, [](std::string& line) {
        const std::string key = key_of(line);
        return key != "token" && key != "credential-provider" &&
               key != "global-credential-providers";
    });
}

PackageConfig load_package_config(const std::vector<std::string>& environ, uid_t uid) {
    PackageConfig out;
    const std::string home = env_of(environ, "HOME").value_or("");
    const std::string config_home =
        env_of(environ, "XDG_CONFIG_HOME").value_or(home.empty() ? "" : home + "/.config");
    struct Tool {
        std::string_view name;
        std::vector<std::string> candidates;
        std::string_view target;
        std::string_view env;  // the variable that names the copy; "" for cargo
        std::string (*filter)(std::string_view, size_t*);
    };
    auto absolute = [](std::vector<std::string> paths) {
        std::erase_if(paths, [](const std::string& p) { return p.empty() || p.front() != '/'; });
        return paths;
    };
    const std::string cargo_home =
        env_of(environ, "CARGO_HOME").value_or(home.empty() ? "" : home + "/.cargo");
    const std::vector<Tool> tools = {
        {"npm", absolute({env_of(environ, "NPM_CONFIG_USERCONFIG").value_or(home + "/.npmrc")}),
         kNpmrc, "NPM_CONFIG_USERCONFIG", npmrc_without_credentials},
        {"pip",
         absolute({env_of(environ, "PIP_CONFIG_FILE").value_or(""), config_home + "/pip/pip.conf",
                   home + "/.pip/pip.conf"}),
         kPipConf, "PIP_CONFIG_FILE", pip_conf_without_credentials},
        {"cargo", absolute({cargo_home + "/config.toml"}), kCargoConfig, "",
         cargo_config_without_credentials},
    };
    for (const Tool& tool : tools) {
        for (const std::string& path : tool.candidates) {
            auto text = read_config(path, uid);
            if (!text) {
                out.warnings.push_back(fmt::format("--package-config: {}", text.error().message));
                break;
            }
            if (!*text) {
                continue;
            }
            size_t dropped = 0;
            std::string content = tool.filter(**text, &dropped);
            content.insert(0, fmt::format("# {} for the sandbox (stockade --package-config): {} "
                                          "credential line(s) left out\n",
                                          path, dropped));
            out.files.push_back(sandbox::GeneratedFile{
                .target = std::string(tool.target), .content = std::move(content), .mode = 0644});
            if (!tool.env.empty()) {
                out.env.push_back(fmt::format("{}={}", tool.env, tool.target));
            }
            out.sources.push_back(path);
            break;
        }
    }
    return out;
}

}  // namespace stockade::runner
