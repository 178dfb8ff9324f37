#include "runner/cli/log_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/log_timeline.h"
#include "runner/cli/state_sessions.h"
#include "runner/session/event_log.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {

namespace {

using nlohmann::json;
using std::chrono::system_clock;

constexpr std::string_view kWho = "stockade log";
// A line longer than this is not one the supervisor writes (an event is at most a few MiB).
constexpr std::size_t kMaxLine = std::size_t{64} << 20;
// --follow: how many polls without news pass between two looks at whether the session runs.
constexpr int kPollsPerLivenessCheck = 5;

// The session's events.jsonl, opened once beneath its directory, read as it grows. Refuses what
// EventLog::read_supervisor_log refuses: a symlink, anything but a regular file, a file of
// another user or that others may write.
class LogFile {
public:
    static Result<LogFile> open(int dir_fd, const std::string& shown) {
        auto owned = EventLog::open_supervisor_log(dir_fd, "events.jsonl", shown, "read");
        if (!owned) {
            Error error = std::move(owned).error();
            if (error.code == Errc::kNotFound) {
                error.message = fmt::format(
                    "the session has no event log \"{}\" (it never started, or its directory "
                    "was emptied)",
                    shown);
            } else if (error.code == Errc::kPermissionDenied && error.sys_errno == 0) {
                error.message += "; run stockade log as the user serve runs as";
            }
            return error;
        }
        return LogFile(std::move(*owned), shown);
    }

    // Everything appended since the last call (up to its end now).
    Result<std::string> read_more() {
        std::string out;
        char buf[1 << 16];
        for (;;) {
            const ssize_t n = retry_eintr([&] { return ::read(fd_.get(), buf, sizeof buf); });
            if (n < 0) {
                return errno_error(fmt::format("read \"{}\"", shown_), errno);
            }
            if (n == 0) {
                return out;
            }
            out.append(buf, static_cast<std::size_t>(n));
        }
    }

private:
    LogFile(UniqueFd fd, std::string shown) : fd_(std::move(fd)), shown_(std::move(shown)) {}
    UniqueFd fd_;
    std::string shown_;
};

int exit_for(const Error& error) {
    return error.code == Errc::kInvalidArgument ? kExitUsage : 1;
}

// Prints one session's log, and with --follow what is appended to it, until it ends.
int show_session(const LogOptions& options, const FoundSession& session,
                 std::optional<system_clock::time_point> since) {
    const std::string shown = session.dir + "/events.jsonl";
    auto log = LogFile::open(session.dir_fd.get(), shown);
    if (!log) {
        fmt::print(stderr, "{}: {}\n", kWho, log.error().message);
        return 1;
    }
    EventLineSplitter lines;
    Timeline timeline(since);
    bool ended = false;
    auto print_events = [&](const std::vector<json>& events) {
        std::string out;
        for (const json& event : events) {
            ended = event.value("type", "") == "SessionEnded";
            if (!options.json) {
                out += timeline.add(event);
                continue;
            }
            if (since) {
                const auto ts = event.contains("ts") && event["ts"].is_string()
                                    ? parse_rfc3339(event["ts"].get<std::string>())
                                    : std::nullopt;
                if (!ts || *ts < *since) {
                    continue;
                }
            }
            out += event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        }
        if (!out.empty()) {
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fflush(stdout);
        }
    };
    auto read_and_print = [&]() -> Status {
        ASSIGN_OR_RETURN(std::string bytes, log->read_more());
        print_events(lines.feed(bytes));
        return {};
    };

    bool running = session_running(session.dir_fd.get());
    if (Status read = read_and_print(); !read) {
        fmt::print(stderr, "{}: {}\n", kWho, read.error().message);
        return 1;
    }
    if (options.follow && !running) {
        fmt::print(stderr,
                   "{}: session {} is not running, so nothing more will be appended: the log "
                   "above is all of it\n",
                   kWho, session.id);
    }
    int quiet_polls = 0;
    while (options.follow && running && !ended) {
        std::this_thread::sleep_for(options.poll);
        auto bytes = log->read_more();
        if (!bytes) {
            fmt::print(stderr, "{}: {}\n", kWho, bytes.error().message);
            return 1;
        }
        if (!bytes->empty()) {
            quiet_polls = 0;
            print_events(lines.feed(*bytes));
            continue;
        }
        if (++quiet_polls % kPollsPerLivenessCheck == 0) {
            // Gone without a SessionEnded (killed): what it wrote last is read once more.
            running = session_running(session.dir_fd.get());
            if (!running) {
                if (Status read = read_and_print(); !read) {
                    fmt::print(stderr, "{}: {}\n", kWho, read.error().message);
                    return 1;
                }
            }
        }
    }
    lines.finish();
    if (!options.json) {
        const std::string open_calls = timeline.finish();
        std::fwrite(open_calls.data(), 1, open_calls.size(), stdout);
        std::string state;
        if (running && !ended) {
            state = fmt::format("running (stockade log --follow {} prints what it does next)",
                                session.id);
        } else {
            state = ended ? "ended" : "not running (it stopped without recording its end)";
            if (session.tenant.empty()) {
                state += fmt::format(
                    "; stockade serve --resume {} continues it (with the "
                    "--workspace it had)",
                    session.id);
            }
        }
        fmt::print("-- {}{}: {} call{}, {}\n", session.id,
                   session.tenant.empty() ? std::string() : " (tenant " + session.tenant + ")",
                   timeline.calls(), timeline.calls() == 1 ? "" : "s", state);
    }
    if (lines.skipped() > 0) {
        fmt::print(stderr,
                   "{}: skipped {} line{} of \"{}\" that {} not an event (a line torn by a crash "
                   "mid-append, or of another schema version)\n",
                   kWho, lines.skipped(), lines.skipped() == 1 ? "" : "s", shown,
                   lines.skipped() == 1 ? "is" : "are");
    }
    return 0;
}

int list_sessions(const LogOptions& options, const StateSessions& state) {
    std::size_t not_sessions = 0;
    const std::vector<SessionSummary> sessions = state.list(&not_sessions);
    if (not_sessions > 0) {
        fmt::print(stderr,
                   "{}: skipped {} entr{} of \"{}\" that {} not a session's directory (a file, a "
                   "symlink or a name that is not an id)\n",
                   kWho, not_sessions, not_sessions == 1 ? "y" : "ies", state.path(),
                   not_sessions == 1 ? "is" : "are");
    }
    for (const SessionSummary& s : sessions) {
        if (!s.problem.empty()) {
            fmt::print(stderr, "{}: session {}: {}\n", kWho, s.id, s.problem);
        } else if (s.skipped > 0) {
            fmt::print(stderr, "{}: session {}: {} unreadable line{} skipped\n", kWho, s.id,
                       s.skipped, s.skipped == 1 ? "" : "s");
        }
    }
    if (options.json) {
        fmt::print("{}\n", session_list_json(sessions).dump(2));
        return 0;
    }
    if (sessions.empty()) {
        fmt::print(stderr,
                   "no sessions in \"{}\" yet: `stockade serve` and `stockade call` keep theirs "
                   "there when run with this state directory\n",
                   state.path());
        return 0;
    }
    fmt::print("{}", format_session_table(sessions));
    fmt::print(stderr,
               "Read one: stockade log ID (or its MCP session id). Continue a resumable one: "
               "stockade serve --resume ID --workspace DIR\n");
    return 0;
}

}  // namespace

std::vector<json> EventLineSplitter::feed(std::string_view bytes) {
    std::vector<json> events;
    while (!bytes.empty()) {
        const auto newline = bytes.find('\n');
        if (newline == std::string_view::npos) {
            if (partial_.size() + bytes.size() > kMaxLine) {
                ++skipped_;  // counted once; the rest of it up to its newline is dropped
                partial_.assign(kMaxLine + 1, '\0');
            } else if (partial_.size() <= kMaxLine) {
                partial_.append(bytes);
            }
            break;
        }
        std::string_view line = bytes.substr(0, newline);
        bytes.remove_prefix(newline + 1);
        std::string joined;
        if (!partial_.empty()) {
            if (partial_.size() > kMaxLine) {
                partial_.clear();
                continue;
            }
            joined = std::move(partial_) + std::string(line);
            partial_.clear();
            line = joined;
        }
        if (line.empty()) {
            continue;
        }
        // What EventLog's replay accepts (runner/session/event_log.cc).
        json event = json::parse(line, nullptr, false);
        if (event.is_discarded() || !event.is_object() || !event.contains("type") ||
            !event["type"].is_string() || event.value("v", 0) != kEventSchemaVersion) {
            ++skipped_;
            continue;
        }
        events.push_back(std::move(event));
    }
    return events;
}

void EventLineSplitter::finish() {
    if (!partial_.empty()) {
        if (partial_.size() <= kMaxLine) {
            ++skipped_;
        }
        partial_.clear();
    }
}

int log_command(const LogOptions& options) {
    std::optional<system_clock::time_point> since;
    if (!options.since.empty()) {
        auto parsed = parse_since(options.since, system_clock::now());
        if (!parsed) {
            fmt::print(stderr, "{}: {}\n", kWho, parsed.error().message);
            return kExitUsage;
        }
        since = *parsed;
    }
    if (options.session.empty() && (options.follow || !options.since.empty())) {
        fmt::print(stderr,
                   "{}: --follow and --since are for one session's log: stockade log SESSION "
                   "--follow. Run stockade log alone to list the sessions\n",
                   kWho);
        return kExitUsage;
    }
    const std::string path = options.state_dir.empty() ? default_state_dir() : options.state_dir;
    auto state = StateSessions::open(path);
    if (!state) {
        fmt::print(stderr, "{}: {}\n", kWho, state.error().message);
        return 1;
    }
    if (options.session.empty()) {
        return list_sessions(options, *state);
    }
    auto session = state->find(options.session);
    if (!session) {
        fmt::print(stderr, "{}: {}\n", kWho, session.error().message);
        return exit_for(session.error());
    }
    return show_session(options, *session, since);
}

}  // namespace stockade::runner
