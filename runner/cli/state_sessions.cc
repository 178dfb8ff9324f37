#include "runner/cli/state_sessions.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <tuple>

#include <fmt/format.h>

#include "runner/cli/log_timeline.h"
#include "runner/session/event_log.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {

namespace {

using nlohmann::json;

constexpr std::size_t kMinPrefix = 4;

std::string string_at(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "2026-12-04T16:58:05.445Z" -> "2026-12-04 16:58:05".
std::string table_time(const std::string& ts) {
    if (ts.size() < 19 || ts[10] != 'T') {
        return ts.empty() ? "-" : terminal_text(ts, 24);
    }
    std::string out = terminal_text(ts.substr(0, 19), 19);
    out[10] = ' ';
    return out;
}

std::string state_of(const SessionSummary& s) {
    if (!s.problem.empty()) {
        return "unreadable";
    }
    if (s.running) {
        return "running";
    }
    return s.resumable ? "resumable" : "ended";
}

json or_null(const std::string& text) {
    return text.empty() ? json(nullptr) : json(text);
}

}  // namespace

void summarize_events(const std::vector<json>& events, SessionSummary& summary) {
    for (const json& event : events) {
        const std::string type = string_at(event, "type");
        if (summary.started.empty()) {
            summary.started = string_at(event, "ts");
        }
        if (type == "SessionStarted") {
            if (summary.workspace.empty()) {
                summary.workspace = string_at(event, "workspace");
            }
            if (summary.mcp_session.empty()) {
                summary.mcp_session = string_at(event, "mcp_session");
            }
        } else if (type == "ToolRequested") {
            ++summary.calls;
        }
    }
    if (!events.empty()) {
        summary.last_activity = string_at(events.back(), "ts");
        summary.ended = string_at(events.back(), "type") == "SessionEnded";
    }
}

bool valid_tenant_name(std::string_view name) {
    if (name.empty() || name.size() > 63) {
        return false;
    }
    auto lower_or_digit = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    if (!lower_or_digit(name.front())) {
        return false;
    }
    return std::all_of(name.begin(), name.end(),
                       [&](char c) { return lower_or_digit(c) || c == '_' || c == '-'; });
}

std::string format_session_table(std::vector<SessionSummary> sessions) {
    if (sessions.empty()) {
        return "";
    }
    std::stable_sort(
        sessions.begin(), sessions.end(), [](const SessionSummary& a, const SessionSummary& b) {
            return std::tie(a.started, a.tenant, a.id) < std::tie(b.started, b.tenant, b.id);
        });
    constexpr std::size_t kColumns = 8;
    std::vector<std::array<std::string, kColumns>> cells;
    cells.push_back({"ID", "TENANT", "MCP-SESSION", "WORKSPACE", "STARTED (UTC)", "LAST ACTIVITY",
                     "CALLS", "STATE"});
    for (const SessionSummary& s : sessions) {
        cells.push_back(
            {terminal_text(s.id, 64), s.tenant.empty() ? "-" : terminal_text(s.tenant, 63),
             s.mcp_session.empty() ? "-" : terminal_text(s.mcp_session.substr(0, 12), 12),
             s.workspace.empty() ? "-" : terminal_text(s.workspace, 80), table_time(s.started),
             table_time(s.last_activity), std::to_string(s.calls), state_of(s)});
    }
    std::array<std::size_t, kColumns> width{};
    for (const auto& row : cells) {
        for (std::size_t c = 0; c < kColumns; ++c) {
            width.at(c) = std::max(width.at(c), row.at(c).size());
        }
    }
    std::string out;
    for (const auto& row : cells) {
        for (std::size_t c = 0; c + 1 < kColumns; ++c) {
            out += row.at(c);
            out.append(width.at(c) - row.at(c).size() + 2, ' ');
        }
        out += row.back();
        out += '\n';
    }
    return out;
}

json session_list_json(const std::vector<SessionSummary>& sessions) {
    json out = json::array();
    for (const SessionSummary& s : sessions) {
        out.push_back({{"id", s.id},
                       {"tenant", or_null(s.tenant)},
                       {"mcp_session", or_null(s.mcp_session)},
                       {"workspace", or_null(s.workspace)},
                       {"started", or_null(s.started)},
                       {"last_activity", or_null(s.last_activity)},
                       {"calls", s.calls},
                       {"running", s.running},
                       {"resumable", s.resumable},
                       {"skipped_lines", s.skipped},
                       {"problem", or_null(s.problem)}});
    }
    return out;
}

bool session_running(int dir_fd) {
    if (::flock(dir_fd, LOCK_SH | LOCK_NB) != 0) {
        return errno == EWOULDBLOCK;
    }
    (void)::flock(dir_fd, LOCK_UN);
    return false;
}

Result<StateSessions> StateSessions::open(const std::string& path) {
    // The operator's path: the last time it is looked up by name.
    auto state = HostDir::open(path);
    if (!state && state.error().sys_errno == ENOENT) {
        return Error{Errc::kNotFound,
                     fmt::format("there is no state directory \"{}\" yet: sessions are kept there "
                                 "once `stockade serve` or `stockade call` runs with it. Give "
                                 "the one serve used with --state-dir (serve's default: "
                                 "$STOCKADE_STATE_DIR, $XDG_STATE_HOME/stockade or "
                                 "~/.local/state/stockade)",
                                 path),
                     ENOENT};
    }
    if (!state) {
        return std::move(state).error();
    }
    return StateSessions(std::move(state).value());
}

std::vector<StateSessions::Place> StateSessions::places(std::size_t* not_sessions) const {
    std::vector<Place> out;
    std::size_t skipped = 0;
    auto add_sessions = [&](int sessions_fd, const std::string& tenant) {
        for (const DirEntry& entry : list_entries(sessions_fd)) {
            if (S_ISDIR(entry.st.st_mode) && valid_session_id(entry.name)) {
                out.push_back(Place{tenant, entry.name});
            } else {
                ++skipped;
            }
        }
    };
    if (auto local = open_dir_beneath(state_.fd(), {"sessions"})) {
        add_sessions(local->get(), "");
    }
    if (auto tenants = open_dir_beneath(state_.fd(), {"tenants"})) {
        for (const DirEntry& entry : list_entries(tenants->get())) {
            if (!S_ISDIR(entry.st.st_mode) || !valid_tenant_name(entry.name)) {
                ++skipped;
                continue;
            }
            if (auto sessions = open_dir_beneath(tenants->get(), {entry.name, "sessions"})) {
                add_sessions(sessions->get(), entry.name);
            }
        }
    }
    if (not_sessions != nullptr) {
        *not_sessions = skipped;
    }
    return out;
}

Result<FoundSession> StateSessions::open_place(const Place& place) const {
    std::vector<std::string> components = {"sessions", place.id};
    std::string dir = fmt::format("{}/sessions/{}", state_.path(), place.id);
    if (!place.tenant.empty()) {
        components = {"tenants", place.tenant, "sessions", place.id};
        dir = fmt::format("{}/tenants/{}/sessions/{}", state_.path(), place.tenant, place.id);
    }
    auto fd = open_dir_beneath(state_.fd(), components);
    if (!fd) {
        return std::move(fd).error().wrap(fmt::format("open \"{}\"", dir));
    }
    return FoundSession{.id = place.id,
                        .tenant = place.tenant,
                        .dir = std::move(dir),
                        .dir_fd = std::move(fd).value()};
}

SessionSummary StateSessions::summarize(const Place& place) const {
    SessionSummary summary{.id = place.id, .tenant = place.tenant};
    auto found = open_place(place);
    if (!found) {
        summary.problem = found.error().message;
        return summary;
    }
    auto replay = EventLog::read_supervisor_log(found->dir_fd.get(), "events.jsonl",
                                                found->dir + "/events.jsonl");
    summary.running = session_running(found->dir_fd.get());
    if (!replay) {
        summary.problem = replay.error().message;
        return summary;
    }
    summary.skipped = replay->skipped;
    summarize_events(replay->events, summary);
    // serve --resume opens sessions/<id> of the state directory it is given: a tenant's
    // session is not there.
    summary.resumable = place.tenant.empty() && !summary.running && !replay->events.empty();
    return summary;
}

std::vector<SessionSummary> StateSessions::list(std::size_t* not_sessions) const {
    std::vector<SessionSummary> out;
    for (const Place& place : places(not_sessions)) {
        out.push_back(summarize(place));
    }
    std::stable_sort(out.begin(), out.end(), [](const SessionSummary& a, const SessionSummary& b) {
        return std::tie(a.started, a.tenant, a.id) < std::tie(b.started, b.tenant, b.id);
    });
    return out;
}

Result<FoundSession> StateSessions::find(std::string_view key) const {
    const std::string wanted(key);
    if (!valid_session_id(wanted)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is not a session id: give the s-… id or the MCP session "
                                 "id that `stockade log` lists (letters, digits, - and _)",
                                 terminal_text(key, 80))};
    }
    const std::vector<Place> all = places(nullptr);
    auto name_of = [](const Place& p) {
        return p.tenant.empty() ? p.id : fmt::format("{} (tenant {})", p.id, p.tenant);
    };
    auto one_of = [&](const std::vector<Place>& matches,
                      std::string_view what) -> std::optional<Result<FoundSession>> {
        if (matches.empty()) {
            return std::nullopt;
        }
        if (matches.size() == 1) {
            return open_place(matches.front());
        }
        std::vector<std::string> names;
        for (const Place& p : matches) {
            names.push_back(name_of(p));
        }
        return Result<FoundSession>(
            Error{Errc::kFailedPrecondition,
                  fmt::format("\"{}\" {} {} sessions: {}. Give more of the id", wanted, what,
                              matches.size(), fmt::join(names, ", "))});
    };
    std::vector<Place> exact;
    for (const Place& p : all) {
        if (p.id == wanted) {
            exact.push_back(p);
        }
    }
    if (auto found = one_of(exact, "is the id of")) {
        return std::move(*found);
    }
    // By the MCP session id, or a prefix of either id: the logs say which session is which.
    std::vector<SessionSummary> summaries;
    for (const Place& p : all) {
        summaries.push_back(summarize(p));
    }
    std::vector<Place> by_mcp;
    std::vector<Place> by_prefix;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const SessionSummary& s = summaries[i];
        if (!s.mcp_session.empty() && s.mcp_session == wanted) {
            by_mcp.push_back(all[i]);
        } else if (wanted.size() >= kMinPrefix &&
                   (s.id.starts_with(wanted) ||
                    (!s.mcp_session.empty() && s.mcp_session.starts_with(wanted)))) {
            by_prefix.push_back(all[i]);
        }
    }
    if (auto found = one_of(by_mcp, "is the MCP session id of")) {
        return std::move(*found);
    }
    if (auto found = one_of(by_prefix, "begins the ids of")) {
        return std::move(*found);
    }
    std::stable_sort(
        summaries.begin(), summaries.end(),
        [](const SessionSummary& a, const SessionSummary& b) { return a.started > b.started; });
    if (summaries.empty()) {
        return Error{Errc::kNotFound,
                     fmt::format("no session \"{}\": \"{}\" holds no sessions. Is it the state "
                                 "directory serve used? Give that one with --state-dir",
                                 wanted, state_.path())};
    }
    std::vector<std::string> recent;
    for (std::size_t i = 0; i < summaries.size() && i < 5; ++i) {
        recent.push_back(summaries[i].tenant.empty()
                             ? summaries[i].id
                             : fmt::format("{} (tenant {})", summaries[i].id, summaries[i].tenant));
    }
    return Error{Errc::kNotFound,
                 fmt::format("no session \"{}\" in \"{}\"; the most recent there: {}{}. Run "
                             "`stockade log` to list them all",
                             wanted, state_.path(), fmt::join(recent, ", "),
                             summaries.size() > recent.size()
                                 ? fmt::format(" ({} more)", summaries.size() - recent.size())
                                 : std::string())};
}

}  // namespace stockade::runner
