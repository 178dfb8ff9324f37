#include "runner/state_dir.h"

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
    RETURN_IF_ERROR(make_dirs(paths.tool_output, 0700));
    // The sandbox user reads spilled output through a read-only bind: let it traverse.
    for (const std::string& dir :
         {state_dir, state_dir + "/sessions", paths.dir, paths.tool_output}) {
        (void)::chmod(dir.c_str(), 0711);
    }
    (void)::chmod(paths.tool_output.c_str(), 0755);
    return paths;
}

void prune_tool_outputs(const std::string& state_dir, const std::string& keep, uint64_t cap_bytes) {
    struct SessionUse {
        fs::path dir;
        fs::file_time_type mtime;
        uint64_t bytes = 0;
    };
    std::error_code ec;
    std::vector<SessionUse> sessions;
    uint64_t total = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(state_dir) / "sessions", ec)) {
        fs::path out = entry.path() / "tool-output";
        if (!fs::is_directory(out, ec)) {
            continue;
        }
        SessionUse use{out, fs::last_write_time(out, ec), 0};
        for (const auto& file : fs::recursive_directory_iterator(out, ec)) {
            if (file.is_regular_file(ec)) {
                use.bytes += file.file_size(ec);
            }
        }
        total += use.bytes;
        if (entry.path().filename() != keep) {
            sessions.push_back(use);
        }
    }
    std::sort(sessions.begin(), sessions.end(),
              [](const SessionUse& a, const SessionUse& b) { return a.mtime < b.mtime; });
    for (const auto& session : sessions) {
        if (total <= cap_bytes) {
            break;
        }
        for (const auto& file : fs::directory_iterator(session.dir, ec)) {
            fs::remove_all(file.path(), ec);
        }
        total -= std::min(total, session.bytes);
    }
}

}  // namespace stockade::runner
