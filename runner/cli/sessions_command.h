// `stockade sessions list` and `stockade sessions kill ID...`: the operator's client of serve
// --http's /admin/sessions endpoints (docs/http.md), over TCP or a unix socket. The pure parts
// (the --server URL, the sessions JSON, the table) are apart from the one HTTP exchange.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::runner {

struct SessionsOptions {
    std::string server{};            // --server; empty: $STOCKADE_SERVER, else kDefaultServer
    std::string admin_token_file{};  // --admin-token-file; empty: $STOCKADE_ADMIN_TOKEN, else none
    bool json = false;               // list: print the server's JSON as it came
    std::vector<std::string> ids{};  // kill
    std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // connect, and then the answer
};

inline constexpr std::string_view kDefaultServer = "http://127.0.0.1:8787";

// Lists the server's sessions: a table sorted by tenant, then age (newest first), or with
// --json the body of GET /admin/sessions. Exit 0, 1 when the server could not be asked or its
// answer is not a session list, 2 for a usage error (--server, the token file).
int sessions_list_command(const SessionsOptions& options);

// Ends each session of `options.ids` (DELETE /admin/sessions/ID), one line per id. Exit 0 when
// every one was ended, 1 when any was not (or the server could not be asked), 2 as for list.
int sessions_kill_command(const SessionsOptions& options);

// Where a serve --http listens, from `http://HOST[:PORT][/PREFIX]`, `HOST:PORT` (what --http
// was given) or `unix:/PATH`. The port defaults to 80; a trailing `/mcp` (the URL serve prints)
// is dropped, and any other path is a prefix the operator endpoints live under (a gateway's).
struct ServerAddress {
    bool unix_socket = false;
    std::string host{};         // TCP: a name or an address, IPv6 without brackets
    std::string port{};         // TCP: 1-65535
    std::string socket_path{};  // unix
    std::string prefix{};       // "" or "/a/b", with no trailing slash

    // http://HOST:PORT/PREFIX or unix:/PATH, for messages.
    [[nodiscard]] std::string url() const;
    // What the Host header says: HOST:PORT, or localhost on a unix socket (serve answers only
    // to a loopback name there).
    [[nodiscard]] std::string host_header() const;
    bool operator==(const ServerAddress&) const = default;
};
Result<ServerAddress> parse_server_url(std::string_view text);

// The admin token in the text of --admin-token-file: its first line, trimmed of blanks.
// kInvalidArgument when it is empty, not a bearer token (visible ASCII), or looks like serve's
// hash file (a comment line) rather than the token.
Result<std::string> admin_token_from_text(std::string_view text);

// One session of GET /admin/sessions.
struct SessionRow {
    std::string id{};
    std::string tenant{};
    std::string log_id{};  // its event log's id in the state directory (stockade log ID)
    std::chrono::seconds age{};
    std::chrono::seconds idle{};
    std::uint64_t calls_made = 0;  // tools/call since it opened
    std::uint64_t running = 0;     // tools/call running or waiting now
    bool operator==(const SessionRow&) const = default;
};
// The rows of a /admin/sessions body, {"sessions": [{id, tenant, log_id, age_seconds,
// idle_seconds, calls, calls_made}]} ("calls": running or waiting). kInvalidArgument when it is
// not JSON or not that shape; a field of a row that is missing or of another type is "" or 0
// (an older server has no log_id or calls_made). Never throws.
Result<std::vector<SessionRow>> parse_sessions(std::string_view body);

// "45s", "3m12s", "2h05m", "3d04h": the two largest units; negative is "0s".
std::string format_duration(std::chrono::seconds duration);

// The plain table of `rows`, sorted by tenant, then age (newest first), then id: a header line
// ID TENANT LOG AGE IDLE CALLS RUNNING and one line per row, columns aligned with two spaces
// between them (LOG is "-" when the server did not say). Ids, tenants and log ids are shown with
// anything but printable ASCII as '?' (they come from the server). Empty for no rows.
std::string format_sessions_table(std::vector<SessionRow> rows);

}  // namespace stockade::runner
