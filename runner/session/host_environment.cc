#include "runner/session/host_environment.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/path.h"
#include "policy/capability.h"

namespace stockade::runner {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

// A git config value: outer double quotes removed, \" \\ \t \n unescaped, and an unquoted
// trailing comment (# or ;) dropped.
std::string config_value(std::string_view raw) {
    std::string out;
    bool quoted = false;
    for (size_t i = 0; i < raw.size(); ++i) {
        const char c = raw[i];
        if (c == '"') {
            quoted = !quoted;
        } else if (c == '\\' && i + 1 < raw.size()) {
            const char n = raw[++i];
            out += n == 't' ? '\t' : n == 'n' ? '\n' : n;
        } else if ((c == '#' || c == ';') && !quoted) {
            break;
        } else {
            out += c;
        }
    }
    return std::string(trim(out));
}

std::optional<std::string> env_value(const std::vector<std::string>& environ,
                                     std::string_view name) {
    for (const auto& entry : environ) {
        if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
            entry[name.size()] == '=') {
            return entry.substr(name.size() + 1);
        }
    }
    return std::nullopt;
}

std::optional<std::string> read_small_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string s = std::move(text).str();
    if (s.size() > (1U << 20)) {
        return std::nullopt;  // not a config file anyone writes by hand
    }
    return s;
}

bool executable_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

}  // namespace

GitIdentity fallback_git_identity() {
    return GitIdentity{.name = "Stockade agent", .email = "agent@stockade.invalid"};
}

Result<GitIdentity> parse_git_identity(std::string_view text) {
    const size_t open = text.rfind('<');
    const size_t close = text.rfind('>');
    const auto bad = [&] {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--git-identity \"{}\": expected \"Name <email>\", e.g. "
                                 "\"Ada Lovelace <ada@example.com>\"",
                                 text)};
    };
    if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
        !trim(text.substr(close + 1)).empty()) {
        return bad();
    }
    GitIdentity id{.name = std::string(trim(text.substr(0, open))),
                   .email = std::string(trim(text.substr(open + 1, close - open - 1)))};
    if (!id.complete() || id.email.find_first_of("<> \t") != std::string::npos) {
        return bad();
    }
    return id;
}

void apply_git_config(std::string_view text, GitIdentity& identity) {
    bool in_user = false;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = trim(text.substr(start, end - start));
        start = end + 1;
        if (line.empty() || line.front() == '#' || line.front() == ';') {
            continue;
        }
        if (line.front() == '[') {
            const size_t close = line.find(']');
            // Section names are case-insensitive; [user "x"] would be a subsection.
            in_user =
                close != std::string_view::npos && lower(trim(line.substr(1, close - 1))) == "user";
            line =
                close == std::string_view::npos ? std::string_view() : trim(line.substr(close + 1));
            if (line.empty()) {
                continue;
            }
        }
        if (!in_user) {
            continue;
        }
        const size_t eq = line.find('=');
        if (eq == std::string_view::npos) {
            continue;
        }
        const std::string key = lower(trim(line.substr(0, eq)));
        if (key == "name") {
            identity.name = config_value(line.substr(eq + 1));
        } else if (key == "email") {
            identity.email = config_value(line.substr(eq + 1));
        }
    }
}

std::optional<GitIdentity> operator_git_identity(const std::vector<std::string>& environ) {
    std::vector<std::string> files = {"/etc/gitconfig"};
    const std::optional<std::string> home = env_value(environ, "HOME");
    if (auto xdg = env_value(environ, "XDG_CONFIG_HOME"); xdg && !xdg->empty()) {
        files.push_back(*xdg + "/git/config");
    } else if (home) {
        files.push_back(*home + "/.config/git/config");
    }
    if (home) {
        files.push_back(*home + "/.gitconfig");
    }
    GitIdentity identity;
    for (const auto& file : files) {
        if (auto text = read_small_file(file)) {
            apply_git_config(*text, identity);
        }
    }
    if (!identity.complete()) {
        return std::nullopt;
    }
    return identity;
}

std::vector<std::string> git_identity_env(const GitIdentity& identity) {
    return {"GIT_AUTHOR_NAME=" + identity.name, "GIT_AUTHOR_EMAIL=" + identity.email,
            "GIT_COMMITTER_NAME=" + identity.name, "GIT_COMMITTER_EMAIL=" + identity.email};
}

std::vector<HiddenToolDir> hidden_path_dirs(std::string_view path,
                                            const std::vector<std::string>& visible,
                                            size_t max_programs) {
    std::vector<HiddenToolDir> out;
    for (const std::string& entry : split_path_list(path)) {
        if (entry.empty() || entry.front() != '/') {
            continue;  // "." and relative entries mean nothing inside the sandbox
        }
        char real[PATH_MAX];
        const std::string dir = ::realpath(entry.c_str(), real) != nullptr ? real : entry;
        const auto seen = [&](const std::string& root) {
            return policy::path_within(dir, root) || policy::path_within(entry, root);
        };
        if (std::any_of(visible.begin(), visible.end(), seen) ||
            std::any_of(out.begin(), out.end(),
                        [&](const HiddenToolDir& d) { return d.dir == entry; })) {
            continue;
        }
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr) {
            continue;
        }
        HiddenToolDir hidden{.dir = entry, .programs = {}};
        size_t count = 0;
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name.front() == '.' || !executable_file(dir + "/" + name)) {
                continue;
            }
            ++count;
            hidden.programs.push_back(name);
        }
        ::closedir(d);
        if (count == 0) {
            continue;
        }
        std::sort(hidden.programs.begin(), hidden.programs.end());
        if (hidden.programs.size() > max_programs) {
            hidden.programs.resize(max_programs);
        }
        out.push_back(std::move(hidden));
    }
    return out;
}

std::string hidden_path_dirs_hint(const std::vector<HiddenToolDir>& dirs) {
    if (dirs.empty()) {
        return "";
    }
    std::string text = "Programs on your PATH that the sandbox cannot see:\n";
    for (const auto& d : dirs) {
        text += fmt::format("  {} ({}{})\n", d.dir, fmt::join(d.programs, ", "),
                            d.programs.size() >= 4 ? ", ..." : "");
    }
    text += "  Mount the toolchain read-only to use it, e.g. --ro " + dirs.front().dir +
            " (or its installation root), or \"sandbox\": {\"filesystem\": {\"allowRead\": [...]}} "
            "in a settings file; a mounted directory that is on your PATH joins the sandbox's "
            "PATH.\n";
    return text;
}

}  // namespace stockade::runner
