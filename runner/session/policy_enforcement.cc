#include "runner/session/policy_enforcement.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "workspace/open_beneath.h"

namespace stockade::runner {
namespace {

using policy::CapabilityKind;
using policy::CapabilityRequest;
using policy::Decision;

// Names no rule is likely to single out: when both are denied in a directory whose entries
// all are, a new entry would be too, and the directory is protected whole.
constexpr const char* kProbeNames[] = {"stockade-probe", ".stockade-probe.txt"};

// The defaults, in the workspace's .git: an agent must not plant a hook (or a
// core.hooksPath, core.fsmonitor, filter driver...) that runs on the user's next git command.
constexpr const char* kDefaultReadOnly[] = {"hooks", "config"};  // in .git

bool within(const std::string& path, const std::string& root) {
    return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                            (root == "/" || path[root.size()] == '/'));
}

std::string join(const std::string& dir, std::string_view name) {
    return dir == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", dir, name);
}

struct Protection {
    bool read_denied = false;
    bool write_denied = false;
};

class Walker {
public:
    Walker(const policy::Policy& policy, std::string request_root, const HostDir& root,
           size_t max_entries)
        : policy_(policy),
          request_root_(std::move(request_root)),
          real_root_(root.path()),
          root_fd_(root.fd()),
          max_entries_(max_entries) {
        // The rules that can make a file request a deny: deny rules, and ask rules where
        // nobody can approve. Most entries match none of them, which is checked first and
        // cheaply; Policy::evaluate_one then has the last word.
        const bool ask_is_deny = policy::mode_traits(policy.mode()).ask_is_deny;
        for (const policy::Rule& rule : policy.rules()) {
            if (rule.decision() == Decision::kDeny ||
                (rule.decision() == Decision::kAsk && ask_is_deny)) {
                if (rule.covers(CapabilityKind::kFileRead)) {
                    read_rules_.push_back(&rule);
                }
                if (rule.covers(CapabilityKind::kFileWrite)) {
                    write_rules_.push_back(&rule);
                }
            }
        }
    }

    Enforcement run() {
        UniqueFd root(::openat(root_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!root.valid()) {
            out_.notes.push_back(
                fmt::format("workspace \"{}\" cannot be read ({}): no path rule "
                            "is enforced in the sandbox",
                            real_root_, errno_string(errno)));
            return std::move(out_);
        }
        if (!read_rules_.empty() || !write_rules_.empty()) {
            walk(root.get(), request_root_, real_root_, /*under_read_only=*/false,
                 /*through_link=*/false, /*is_root=*/true);
        }
        protect_other_links();
        add_defaults();
        finish();
        return std::move(out_);
    }

private:
    // Decided by a rule, and a deny after the mode: see the header.
    bool denied(CapabilityKind kind, const char* tool, const std::string& path, bool is_dir) const {
        const auto& candidates = kind == CapabilityKind::kFileRead ? read_rules_ : write_rules_;
        const CapabilityRequest request{
            .kind = kind, .tool = tool, .path = path, .directory = is_dir};
        const policy::PathView view(request.path);
        if (std::none_of(candidates.begin(), candidates.end(),
                         [&](const policy::Rule* rule) { return rule->matches(request, &view); })) {
            return false;
        }
        const policy::RequestOutcome outcome = policy_.evaluate_one(request);
        return outcome.decision == Decision::kDeny && outcome.rule.has_value();
    }

    bool read_denied(const std::string& path, bool is_dir) const {
        return denied(CapabilityKind::kFileRead, "read", path, is_dir);
    }
    bool write_denied(const std::string& path, bool is_dir) const {
        return denied(CapabilityKind::kFileWrite, "edit", path, is_dir);
    }

    // Would a new entry of `dir` (a request path) be denied?
    bool new_entries_denied(const std::string& dir, bool read) const {
        return std::all_of(std::begin(kProbeNames), std::end(kProbeNames), [&](const char* name) {
            const std::string probe = join(dir, name);
            return read ? read_denied(probe, false) : write_denied(probe, false);
        });
    }

    struct Counts {
        size_t entries = 0;
        size_t masked = 0;     // entries masked whole (not through a symlink)
        size_t read_only = 0;  // entries made read-only whole
    };

    // Walks directory `fd`, whose request path (what rules see) is `request_dir` and real path
    // (what the sandbox mounts) is `real_dir`.
    Counts walk(int fd, const std::string& request_dir, const std::string& real_dir,
                bool under_read_only, bool through_link, bool is_root) {
        Counts counts;
        int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        DIR* dir = dup >= 0 ? ::fdopendir(dup) : nullptr;
        if (dir == nullptr) {
            if (dup >= 0) {
                ::close(dup);
            }
            out_.notes.push_back(
                fmt::format("\"{}\" cannot be listed ({}): rules about what is "
                            "inside it are not enforced in the sandbox",
                            real_dir, errno_string(errno)));
            return counts;
        }
        const size_t masked_mark = out_.masked_paths.size();
        const size_t read_only_mark = out_.read_only_paths.size();
        while (dirent* entry = ::readdir(dir)) {
            const std::string_view name = entry->d_name;
            if (name == "." || name == "..") {
                continue;
            }
            if (stopped_) {
                break;
            }
            if (++seen_ > max_entries_) {
                stopped_ = true;
                out_.notes.push_back(fmt::format(
                    "the workspace has more than {} entries; the walk stopped at \"{}\": deny "
                    "rules about paths beyond it are not enforced in the sandbox",
                    max_entries_, join(real_dir, name)));
                break;
            }
            ++counts.entries;
            struct stat st {};
            if (::fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                continue;  // gone since readdir
            }
            const std::string request_path = join(request_dir, name);
            const std::string real_path = join(real_dir, name);
            const bool is_dir = S_ISDIR(st.st_mode);
            if (S_ISLNK(st.st_mode)) {
                visit_link(fd, entry->d_name, request_path, real_path, under_read_only,
                           through_link);
                continue;
            }
            if (read_denied(request_path, is_dir)) {
                add(out_.masked_paths, real_path, st);
                if (is_dir) {
                    masked_dirs_.push_back(real_path);
                }
                // Also read-only when writing is denied too: its parents get pinned.
                if (!under_read_only && write_denied(request_path, is_dir)) {
                    add(out_.read_only_paths, real_path, st);
                }
                ++counts.masked;
                continue;  // nothing inside needs looking at
            }
            bool read_only = under_read_only;
            if (!under_read_only && write_denied(request_path, is_dir)) {
                add(out_.read_only_paths, real_path, st);
                ++counts.read_only;
                read_only = true;
            }
            if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
                inodes_[{st.st_dev, st.st_ino}].push_back(real_path);
            }
            if (is_dir) {
                // Still walked when read-only: reading may be denied further down.
                UniqueFd sub(
                    ::openat(fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (!sub.valid()) {
                    out_.notes.push_back(fmt::format(
                        "\"{}\" cannot be opened ({}): rules about what is inside it are not "
                        "enforced in the sandbox",
                        real_path, errno_string(errno)));
                    continue;
                }
                walk(sub.get(), request_path, real_path, read_only, through_link, false);
            }
        }
        ::closedir(dir);
        if (is_root || stopped_ || counts.entries == 0) {
            return counts;
        }
        // Every entry protected, and a new one would be: protect the directory instead (fewer
        // mounts; nothing can be added to it either).
        if (counts.masked == counts.entries && new_entries_denied(request_dir, true)) {
            out_.masked_paths.resize(masked_mark);
            out_.masked_paths.push_back(real_dir);
            masked_dirs_.push_back(real_dir);
            if (!under_read_only && new_entries_denied(request_dir, false)) {
                out_.read_only_paths.resize(read_only_mark);
                out_.read_only_paths.push_back(real_dir);
            }
        } else if (!under_read_only && counts.read_only == counts.entries &&
                   new_entries_denied(request_dir, false)) {
            out_.read_only_paths.resize(read_only_mark);
            out_.read_only_paths.push_back(real_dir);
        }
        return counts;
    }

    // A symlink (`name` in directory `dir_fd`): what it points to is what a command reaches
    // through it. It is resolved beneath the workspace's descriptor, never through a host path,
    // so a link that leaves the workspace is never followed.
    void visit_link(int dir_fd, const char* name, const std::string& request_path,
                    const std::string& real_path, bool under_read_only, bool through_link) {
        const std::string relative = real_path.substr(real_root_.size() + 1);
        auto target_fd = workspace::open_beneath(root_fd_, relative, O_PATH);
        const int err = target_fd ? 0 : target_fd.error().sys_errno;
        const bool dangling = err == ENOENT || err == ENOTDIR;
        const bool inside = target_fd.has_value();
        std::string target;
        struct stat st {};
        if (inside) {
            auto real = path_of_fd(target_fd->get());
            target = real ? *real : std::string();
        }
        const bool target_is_dir =
            inside && !target.empty() && ::fstat(target_fd->get(), &st) == 0 && S_ISDIR(st.st_mode);
        const bool read = read_denied(request_path, target_is_dir);
        const bool write = !read && !under_read_only && write_denied(request_path, target_is_dir);
        if (read || write) {
            if (dangling || (inside && target.empty())) {
                return;  // dangling: nothing to protect
            }
            if (!inside) {
                char text[PATH_MAX];
                const ssize_t n = ::readlinkat(dir_fd, name, text, sizeof text - 1);
                out_.notes.push_back(fmt::format(
                    "\"{}\" is a symlink to \"{}\", outside the workspace: not {} (the sandbox "
                    "shows that path only if it is bound in)",
                    real_path, n > 0 ? std::string(text, static_cast<size_t>(n)) : "?",
                    read ? "masked" : "made read-only"));
                return;
            }
            link_targets_.push_back(LinkTarget{target, read, target_is_dir});
            return;
        }
        // A directory inside the workspace, reached under another name: rules about paths
        // through the link must reach the real files. Once: links inside are not followed.
        if (target_is_dir && !through_link && !stopped_) {
            UniqueFd sub(::openat(target_fd->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            if (sub.valid()) {
                walk(sub.get(), request_path, target, under_read_only, true, false);
            }
        }
    }

    void add(std::vector<std::string>& list, const std::string& real_path, const struct stat& st) {
        list.push_back(real_path);
        out_.from_rules = true;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            linked_.push_back(Linked{{st.st_dev, st.st_ino}, &list == &out_.masked_paths});
        }
    }

    // Hard links: the same file under a name no rule matched.
    void protect_other_links() {
        for (const Linked& link : linked_) {
            auto it = inodes_.find(link.inode);
            if (it == inodes_.end()) {
                continue;
            }
            auto& list = link.masked ? out_.masked_paths : out_.read_only_paths;
            list.insert(list.end(), it->second.begin(), it->second.end());
        }
        for (const LinkTarget& link : link_targets_) {
            (link.masked ? out_.masked_paths : out_.read_only_paths).push_back(link.path);
            if (link.masked && link.is_dir) {
                masked_dirs_.push_back(link.path);
            }
            out_.from_rules = true;
        }
    }

    void add_defaults() {
        for (std::string& path : git_metadata_paths(root_fd_, real_root_, out_.notes)) {
            out_.read_only_paths.push_back(std::move(path));
        }
    }

    // Sorted, unique; nothing beneath a masked directory.
    void finish() {
        auto tidy = [](std::vector<std::string>& list) {
            std::sort(list.begin(), list.end());
            list.erase(std::unique(list.begin(), list.end()), list.end());
        };
        tidy(masked_dirs_);
        // Beneath a masked directory (or that directory itself, unless `allow_self`).
        auto hidden = [&](const std::string& path, bool allow_self) {
            auto is_masked_dir = [&](const std::string& dir) {
                return std::binary_search(masked_dirs_.begin(), masked_dirs_.end(), dir);
            };
            if (!allow_self && is_masked_dir(path)) {
                return true;
            }
            for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
                 slash = path.rfind('/', slash - 1)) {
                if (is_masked_dir(path.substr(0, slash))) {
                    return true;
                }
            }
            return false;
        };
        tidy(out_.masked_paths);
        std::erase_if(out_.masked_paths,
                      [&](const std::string& path) { return hidden(path, true); });
        tidy(out_.read_only_paths);
        std::erase_if(out_.read_only_paths,
                      [&](const std::string& path) { return hidden(path, true); });
    }

    struct Linked {
        std::pair<dev_t, ino_t> inode;
        bool masked = false;
    };
    struct LinkTarget {
        std::string path;
        bool masked = false;
        bool is_dir = false;
    };

    const policy::Policy& policy_;
    std::vector<const policy::Rule*> read_rules_;
    std::vector<const policy::Rule*> write_rules_;
    const std::string request_root_;
    const std::string real_root_;
    const int root_fd_;  // the workspace's (borrowed)
    const size_t max_entries_;
    size_t seen_ = 0;
    bool stopped_ = false;
    Enforcement out_;
    std::vector<std::string> masked_dirs_;
    std::map<std::pair<dev_t, ino_t>, std::vector<std::string>> inodes_;
    std::vector<Linked> linked_;
    std::vector<LinkTarget> link_targets_;
};

}  // namespace

Enforcement enforcement_for(const policy::Policy& policy, const HostDir& workspace,
                            size_t max_entries, const std::string& policy_root) {
    const std::string& root = policy_root.empty() ? workspace.path() : policy_root;
    return Walker(policy, policy::normalise_path(root, "/"), workspace, max_entries).run();
}

void apply_enforcement(const Enforcement& enforcement, SandboxConfig& config) {
    const bool nothing_required = (config.masked_paths.empty() && config.read_only_paths.empty()) ||
                                  config.path_rules_best_effort;
    config.masked_paths.insert(config.masked_paths.end(), enforcement.masked_paths.begin(),
                               enforcement.masked_paths.end());
    config.read_only_paths.insert(config.read_only_paths.end(), enforcement.read_only_paths.begin(),
                                  enforcement.read_only_paths.end());
    config.path_rules_best_effort = nothing_required && !enforcement.from_rules;
}

Result<std::vector<std::string>> apply_sandbox_settings(const policy::SandboxSettings& settings,
                                                        const std::vector<std::string>& environ,
                                                        SandboxConfig& config) {
    std::vector<std::string> notes;
    auto mount = [&](const std::vector<policy::SandboxEntry>& entries,
                     std::vector<std::string>& into) {
        for (const policy::SandboxEntry& e : entries) {
            char real[PATH_MAX];
            if (::realpath(e.value.c_str(), real) == nullptr) {
                notes.push_back(
                    fmt::format("{}: \"{}\" does not exist; not mounted", e.origin, e.value));
                continue;
            }
            into.emplace_back(real);
        }
    };
    mount(settings.allow_read, config.ro);
    mount(settings.allow_write, config.rw);
    for (const policy::SandboxEntry& e : settings.env) {
        const size_t eq = e.value.find('=');
        if (eq != std::string::npos) {
            config.env.push_back(e.value);
        } else if (auto value = lookup_env(environ, e.value)) {
            config.env.push_back(fmt::format("{}={}", e.value, *value));
        } else {
            notes.push_back(fmt::format("{}: env {}: not set here; not passed", e.origin, e.value));
        }
    }
    std::vector<std::string> visible = {config.workspace.path()};
    visible.insert(visible.end(), config.ro.begin(), config.ro.end());
    visible.insert(visible.end(), config.rw.begin(), config.rw.end());
    std::vector<std::string> mounted = visible;
    for (const sandbox::Bind& bind : config.image.binds) {
        mounted.push_back(bind.target);
    }
    auto protect = [&](const std::vector<policy::SandboxEntry>& entries, std::string_view what,
                       std::vector<std::string>& into) -> Status {
        for (const policy::SandboxEntry& e : entries) {
            // The policy names paths as the sandbox shows them; the checks are on the host.
            const std::string value = config.outside(e.value);
            const bool seen = std::any_of(visible.begin(), visible.end(),
                                          [&](const auto& v) { return within(value, v); });
            if (!seen) {
                notes.push_back(fmt::format(
                    "{}: \"{}\" is not mounted in the sandbox, which cannot see it anyway",
                    e.origin, e.value));
                continue;
            }
            if (!protected_path_exists(std::filesystem::path(value).lexically_normal().string(),
                                       config.workspace)) {
                continue;
            }
            ASSIGN_OR_RETURN(
                std::string checked,
                check_protected_path(fmt::format("{}: {}", e.origin, what), value,
                                     config.workspace.path(), mounted, config.workspace));
            into.push_back(std::move(checked));
        }
        return {};
    };
    RETURN_IF_ERROR(
        protect(settings.deny_read, "sandbox.filesystem.denyRead", config.masked_paths));
    RETURN_IF_ERROR(
        protect(settings.deny_write, "sandbox.filesystem.denyWrite", config.read_only_paths));
    return notes;
}

std::vector<std::string> git_metadata_paths(const HostDir& workspace,
                                            std::vector<std::string>& notes) {
    return git_metadata_paths(workspace.fd(), workspace.path(), notes);
}

std::vector<std::string> git_metadata_paths(int workspace_fd, const std::string& workspace_root,
                                            std::vector<std::string>& notes) {
    std::vector<std::string> out;
    // .git itself a symlink (or a file: a worktree's) holds nothing of these here.
    auto git = open_dir_beneath(workspace_fd, {".git"});
    if (!git) {
        if (git.error().sys_errno == ELOOP) {
            notes.push_back(fmt::format(
                "\"{}\" is a symlink: .git/hooks and .git/config are not made read-only (the "
                "link itself could be replaced)",
                join(workspace_root, ".git")));
        }
        return out;
    }
    for (const char* name : kDefaultReadOnly) {
        const std::string path = fmt::format("{}/{}", join(workspace_root, ".git"), name);
        struct stat st {};
        if (::fstatat(git->get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            notes.push_back(fmt::format(
                "\"{}\" is a symlink: it is not made read-only (the link itself could be "
                "replaced)",
                path));
            continue;
        }
        out.push_back(path);
    }
    return out;
}

sandbox::NetworkMode session_network(const policy::Policy& policy, sandbox::NetworkMode requested) {
    const policy::RequestOutcome network = policy.evaluate_one(
        policy::CapabilityRequest{.kind = policy::CapabilityKind::kNetworkAccess, .tool = "bash"});
    if (requested == sandbox::NetworkMode::kNone && network.decision == policy::Decision::kAllow) {
        return sandbox::NetworkMode::kHost;
    }
    return requested;
}

policy::RequestContext session_request_context(const std::string& workspace_root,
                                               sandbox::NetworkMode network) {
    return policy::RequestContext{.workspace_root = workspace_root,
                                  .cwd = "",
                                  .home = "/tmp",
                                  .private_loopback = network != sandbox::NetworkMode::kHost};
}

}  // namespace stockade::runner
