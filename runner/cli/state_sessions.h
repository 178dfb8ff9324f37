// The sessions a state directory holds (DESIGN.md §6), for `stockade log`: the local ones in
// sessions/<id>/, and each tenant's of serve --http in tenants/<tenant>/sessions/<id>/. The state
// directory is opened once, by the path the operator gave; everything beneath it is opened by
// descriptor, one component at a time, never through a symlink or a mount point
// (open_dir_beneath), and a directory name that is not a session id or a tenant name is skipped:
// a tenant's session cannot lead `stockade log` anywhere else. The summary and the table are
// pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/host_dir.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::runner {

// What `stockade log` lists of one session.
struct SessionSummary {
    std::string id{};             // the state directory's id, s-…
    std::string tenant{};         // serve --http's tenant, or "" for a local session
    std::string mcp_session{};    // serve --http's Mcp-Session-Id, or ""
    std::string workspace{};      // of its first SessionStarted
    std::string started{};        // "ts" of its first event
    std::string last_activity{};  // "ts" of its last event
    std::uint64_t calls = 0;      // ToolRequested events
    bool ended = false;           // its last event is SessionEnded
    bool running = false;         // a stockade process holds it (open_session_dir's lock)
    bool resumable = false;       // serve --resume ID can continue it
    std::size_t skipped = 0;      // lines of its log that are not events
    std::string problem{};        // why its log could not be read, or ""
};

// Fills the parts of `summary` the events say (mcp_session, workspace, started,
// last_activity, calls, ended).
void summarize_events(const std::vector<nlohmann::json>& events, SessionSummary& summary);

// Whether `name` may be a tenant's directory: a tenant name, [a-z0-9][a-z0-9_-]{0,62}.
bool valid_tenant_name(std::string_view name);

// The table `stockade log` prints: ID TENANT MCP-SESSION WORKSPACE STARTED LAST-ACTIVITY CALLS
// STATE, sorted by start (the newest last), columns two spaces apart. TENANT is "-" for a local
// session, MCP-SESSION its first 12 characters; times are UTC, to the second; STATE is running,
// resumable (ended: serve --resume continues it), ended (a tenant's: serve --http does not
// resume), or unreadable. Terminal-safe. Empty for no sessions.
std::string format_session_table(std::vector<SessionSummary> sessions);
// `stockade log --json`: an array of {id, tenant, mcp_session, workspace, started,
// last_activity, calls, running, resumable, skipped_lines, problem}, null for what is unknown.
nlohmann::json session_list_json(const std::vector<SessionSummary>& sessions);

// A session found in the state directory, its directory open.
struct FoundSession {
    std::string id{};
    std::string tenant{};
    std::string dir{};  // its path, for messages only
    UniqueFd dir_fd{};
};

class StateSessions {
public:
    // Opens the state directory the operator named (not created: kNotFound when it is not
    // there, with what to do).
    static Result<StateSessions> open(const std::string& path);

    [[nodiscard]] const std::string& path() const { return state_.path(); }

    // Every session, summarised (its log read), sorted by start. `not_sessions`: entries
    // skipped as not a session's directory.
    std::vector<SessionSummary> list(std::size_t* not_sessions = nullptr) const;

    // The session `key` names: its s-… id, its MCP session id, or a prefix of either (at least
    // 4 characters) that only one session has. kInvalidArgument for a key that cannot be an
    // id, kNotFound (the message lists what there is), kFailedPrecondition when a prefix or id
    // is ambiguous (the message names the candidates).
    Result<FoundSession> find(std::string_view key) const;

private:
    struct Place {
        std::string tenant;
        std::string id;
    };
    explicit StateSessions(HostDir state) : state_(std::move(state)) {}
    std::vector<Place> places(std::size_t* not_sessions) const;
    Result<FoundSession> open_place(const Place& place) const;
    SessionSummary summarize(const Place& place) const;

    HostDir state_;
};

// Whether a stockade process holds session directory `dir_fd` (open_session_dir's flock). Takes
// a shared lock for an instant when nobody does.
bool session_running(int dir_fd);

}  // namespace stockade::runner
