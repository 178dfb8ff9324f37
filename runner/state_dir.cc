#include "runner/state_dir.h"

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

Result<std::string> resolve_state_dir(const std::string& state_dir) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(state_dir, ec);
    if (ec) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("state directory \"{}\": {}", state_dir, ec.message())};
    }
    RETURN_IF_ERROR(make_dirs(absolute.string(), 0700));
    char real[PATH_MAX];
    if (::realpath(absolute.c_str(), real) == nullptr) {
        return errno_error(fmt::format("resolve the state directory \"{}\"", absolute.string()),
                           errno);
    }
    return std::string(real);
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
Result<UniqueFd> open_state_subdir(int parent, const std::string& name, mode_t mode,
                                   const std::string& shown) {
    if (::mkdirat(parent, name.c_str(), mode) != 0 && errno != EEXIST) {
        return errno_error(fmt::format("create \"{}\"", shown), errno);
    }
    const int fd = retry_eintr([&] {
        return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    });
    if (fd < 0) {
        const int err = errno;
        if (err == ELOOP || err == ENOTDIR) {
            return Error{Errc::kPermissionDenied,
                         fmt::format("\"{}\" is not a directory of the state directory (a "
                                     "symlink or a file there is never followed): remove it",
                                     shown),
                         err};
        }
        return errno_error(fmt::format("open \"{}\"", shown), err);
    }
    UniqueFd owned(fd);
    (void)::fchmod(fd, mode);
    return owned;
}

}  // namespace

Result<SessionPaths> open_session_dir(const std::string& state_dir, const std::string& id) {
    if (!valid_session_id(id)) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("session id \"{}\" is not valid: use letters, digits, - and _", id)};
    }
    SessionPaths paths;
    paths.id = id;
    paths.dir = fmt::format("{}/sessions/{}", state_dir, id);
    paths.events = paths.dir + "/events.jsonl";
    paths.tool_output = paths.dir + "/tool-output";
    ASSIGN_OR_RETURN(UniqueFd root, open_path(state_dir, O_RDONLY | O_DIRECTORY));
    // The sandbox user reads spilled output through a read-only bind; at isolation levels
    // without a mount namespace it reaches it by the host path, so it must traverse.
    (void)::fchmod(root.get(), 0711);
    ASSIGN_OR_RETURN(UniqueFd sessions,
                     open_state_subdir(root.get(), "sessions", 0711, state_dir + "/sessions"));
    ASSIGN_OR_RETURN(paths.dir_fd, open_state_subdir(sessions.get(), id, 0711, paths.dir));
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
    ASSIGN_OR_RETURN(paths.tool_output_fd,
                     open_state_subdir(paths.dir_fd.get(), "tool-output", 0755, paths.tool_output));
    return paths;
}

PruneResult prune_tool_outputs(const std::string& state_dir, uint64_t cap_bytes,
                               uint64_t at_least) {
    struct SessionUse {
        fs::path dir;  // the session's directory
        fs::file_time_type mtime;
        uint64_t bytes = 0;
    };
    std::error_code ec;
    std::vector<SessionUse> sessions;
    PruneResult result;
    for (const auto& entry : fs::directory_iterator(fs::path(state_dir) / "sessions", ec)) {
        const fs::path out = entry.path() / "tool-output";
        if (!fs::is_directory(out, ec)) {
            continue;
        }
        SessionUse use{entry.path(), fs::last_write_time(out, ec), 0};
        for (const auto& file : fs::recursive_directory_iterator(out, ec)) {
            if (file.is_regular_file(ec)) {
                use.bytes += file.file_size(ec);
            }
        }
        result.kept += use.bytes;
        sessions.push_back(std::move(use));
    }
    std::sort(sessions.begin(), sessions.end(),
              [](const SessionUse& a, const SessionUse& b) { return a.mtime < b.mtime; });
    for (const auto& session : sessions) {
        if (result.kept <= cap_bytes && result.freed >= at_least) {
            break;
        }
        // Only a session that has ended: its lock is free (open_session_dir holds it for the
        // session's life), and holding it here keeps the session from resuming meanwhile.
        UniqueFd lock(::open(session.dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!lock || ::flock(lock.get(), LOCK_SH | LOCK_NB) != 0) {
            continue;
        }
        for (const auto& file : fs::directory_iterator(session.dir / "tool-output", ec)) {
            fs::remove_all(file.path(), ec);
        }
        result.kept -= std::min(result.kept, session.bytes);
        result.freed += session.bytes;
    }
    return result;
}

}  // namespace stockade::runner
