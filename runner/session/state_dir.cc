#include "runner/session/state_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/syscall.h"

namespace stockade::runner {

namespace fs = std::filesystem;

std::string default_state_dir() {
    if (const char* dir = std::getenv("STOCKADE_STATE_DIR");
        dir != nullptr && *dir != '\0') {  // NOLINT(concurrency-mt-unsafe): read once at start-up
        return dir;
    }
    if (const char* xdg = std::getenv("XDG_STATE_HOME");
        xdg != nullptr && *xdg == '/') {  // NOLINT(concurrency-mt-unsafe)
        return fmt::format("{}/stockade", xdg);
    }
    const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    return fmt::format("{}/.local/state/stockade", home != nullptr && *home == '/' ? home : "/tmp");
}

std::string new_session_id() {
    unsigned char bytes[6] = {};
    if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
        auto now = static_cast<uint64_t>(::getpid()) ^ static_cast<uint64_t>(::time(nullptr));
        std::memcpy(bytes, &now, sizeof bytes);
    }
    std::string id = "s-";
    for (unsigned char b : bytes) {
        id += fmt::format("{:02x}", b);
    }
    return id;
}

bool valid_session_id(const std::string& id) {
    if (id.empty() || id.size() > 64) {
        return false;
    }
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    });
}

Result<HostDir> resolve_state_dir(const std::string& state_dir) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(state_dir, ec);
    if (ec) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("state directory \"{}\": {}", state_dir, ec.message())};
    }
    // The operator's path: the last time it is looked up by name.
    RETURN_IF_ERROR(make_dirs(absolute.string(), 0700));
    auto opened = HostDir::open(absolute.string());
    if (!opened) {
        return std::move(opened).error().wrap("open the state directory");
    }
    return opened;
}

Status check_state_dir_apart(const std::string& state_dir, const std::string& workspace,
                             const std::vector<std::string>& binds) {
    auto within = [](const std::string& path, const std::string& dir) {
        return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                               (dir == "/" || path[dir.size()] == '/'));
    };
    std::vector<std::pair<std::string, std::string>> places = {{"the workspace", workspace}};
    for (const std::string& bind : binds) {
        places.emplace_back("the bind", bind);
    }
    for (const auto& [what, path] : places) {
        if (within(state_dir, path) || within(path, state_dir)) {
            return Error{
                Errc::kInvalidArgument,
                fmt::format("the state directory \"{}\" {} {} \"{}\": a command in the "
                            "sandbox could then change the session's records, which the "
                            "supervisor writes and replays. Pass --state-dir (or set "
                            "STOCKADE_STATE_DIR) to a directory outside it",
                            state_dir, within(state_dir, path) ? "lies inside" : "contains", what,
                            path)};
        }
    }
    return {};
}

namespace {

// Opens (creating with `mode` when missing) directory `name` beneath `parent`, never through a
// symlink; the mode is set whatever the umask.
Result<UniqueFd> open_state_child(int parent, const std::string& name, mode_t mode,
                                  const std::string& shown, bool create = true) {
    auto fd = open_dir_beneath(parent, {name},
                               create ? std::optional(DirCreation{.mode = mode}) : std::nullopt);
    if (!fd) {
        const int err = fd.error().sys_errno;
        if (err == ELOOP || err == ENOTDIR || err == EXDEV) {
            return Error{Errc::kPermissionDenied,
                         fmt::format("\"{}\" is not a directory of the state directory (a "
                                     "symlink, a mount point or a file there is never followed): "
                                     "remove it",
                                     shown),
                         err};
        }
        return std::move(fd).error().wrap(fmt::format("open \"{}\"", shown));
    }
    (void)::fchmod(fd->get(), mode);
    return fd;
}

// A subdirectory of `fd`, never through a symlink or a mount point (invalid when there is
// none).
UniqueFd open_subdir(int fd, const std::string& name) {
    auto dir = open_dir_beneath(fd, {name});
    return dir ? std::move(dir).value() : UniqueFd();
}

}  // namespace

Result<HostDir> open_state_subdir(const HostDir& state,
                                  const std::vector<std::string>& components) {
    auto fd = open_dir_beneath(state.fd(), components, DirCreation{.mode = 0700});
    if (!fd) {
        return std::move(fd).error().wrap(fmt::format("open the state directory \"{}\"'s {}",
                                                      state.path(), fmt::join(components, "/")));
    }
    return HostDir::adopt(std::move(fd).value());
}

Result<SessionPaths> open_session_dir(const HostDir& state, const std::string& id,
                                      bool must_exist) {
    if (!valid_session_id(id)) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("session id \"{}\" is not valid: use letters, digits, - and _", id)};
    }
    SessionPaths paths;
    paths.id = id;
    paths.dir = fmt::format("{}/sessions/{}", state.path(), id);
    paths.events = paths.dir + "/events.jsonl";
    paths.tool_output = paths.dir + "/tool-output";
    // The sandbox user reads spilled output through a read-only bind; at isolation levels
    // without a mount namespace it reaches it by the host path, so it must traverse.
    (void)::fchmod(state.fd(), 0711);
    auto no_session = [&] {
        return Error{Errc::kNotFound,
                     fmt::format("no session \"{}\" in \"{}\": check the id or the --state-dir", id,
                                 state.path())};
    };
    auto sessions =
        open_state_child(state.fd(), "sessions", 0711, state.path() + "/sessions", !must_exist);
    if (!sessions) {
        return must_exist && sessions.error().sys_errno == ENOENT ? no_session()
                                                                  : std::move(sessions).error();
    }
    auto dir = open_state_child(sessions->get(), id, 0711, paths.dir, !must_exist);
    if (!dir) {
        return must_exist && dir.error().sys_errno == ENOENT ? no_session()
                                                             : std::move(dir).error();
    }
    paths.dir_fd = std::move(dir).value();
    if (must_exist) {
        struct stat st {};
        if (::fstatat(paths.dir_fd.get(), "events.jsonl", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
            return no_session();
        }
    }
    if (::flock(paths.dir_fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("session \"{}\" is in use by another stockade process (a "
                                     "serve still running): end that one first, or start a new "
                                     "session",
                                     id)};
        }
        return errno_error(fmt::format("lock \"{}\"", paths.dir), errno);
    }
    ASSIGN_OR_RETURN(UniqueFd tool_output,
                     open_state_child(paths.dir_fd.get(), "tool-output", 0755, paths.tool_output));
    ASSIGN_OR_RETURN(paths.tool_output_dir, HostDir::adopt(std::move(tool_output)));
    return paths;
}

PruneResult prune_tool_outputs(const HostDir& state, uint64_t cap_bytes, uint64_t at_least) {
    struct SessionUse {
        std::string id;
        timespec mtime{};  // of its tool-output/
        uint64_t bytes = 0;
    };
    std::vector<SessionUse> sessions;
    PruneResult result;
    const UniqueFd all = open_subdir(state.fd(), "sessions");
    if (!all) {
        return result;
    }
    for (const DirEntry& entry : list_entries(all.get())) {
        if (!S_ISDIR(entry.st.st_mode) || !valid_session_id(entry.name)) {
            continue;
        }
        const UniqueFd dir = open_subdir(all.get(), entry.name);
        const UniqueFd out = dir ? open_subdir(dir.get(), "tool-output") : UniqueFd();
        struct stat out_st {};
        if (!out || ::fstat(out.get(), &out_st) != 0) {
            continue;
        }
        SessionUse use{entry.name, out_st.st_mtim, tree_bytes(out.get())};
        result.kept += use.bytes;
        sessions.push_back(std::move(use));
    }
    std::sort(sessions.begin(), sessions.end(), [](const SessionUse& a, const SessionUse& b) {
        return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) <
               std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
    });
    for (const auto& session : sessions) {
        if (result.kept <= cap_bytes && result.freed >= at_least) {
            break;
        }
        // Only a session that has ended: its lock is free (open_session_dir holds it for the
        // session's life), and holding it here keeps the session from resuming meanwhile.
        const UniqueFd lock = open_subdir(all.get(), session.id);
        if (!lock || ::flock(lock.get(), LOCK_SH | LOCK_NB) != 0) {
            continue;
        }
        if (const UniqueFd out = open_subdir(lock.get(), "tool-output"); out) {
            remove_tree_contents(out.get());
        }
        result.kept -= std::min(result.kept, session.bytes);
        result.freed += session.bytes;
    }
    return result;
}

}  // namespace stockade::runner
