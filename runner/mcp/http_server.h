// HttpServer: MCP over Streamable HTTP (docs/http.md), on Boost.Beast and Asio. One endpoint,
// /mcp, for many sessions of many tenants, each session a Connection (runner/mcp/connection.h)
// over a ToolHost the backend opens for it; /healthz, /readyz, /metrics and /admin/sessions for
// the operator, and the backend's own endpoints under /admin/ (serve --pod's /admin/bind). The
// server frames, authenticates, routes and meters; the backend decides who a token is, what a
// session runs in, and when the server is done. No tool or policy logic lives here. As an OAuth
// resource server (HttpOptions::oauth, runner/mcp/oauth.h) it checks access tokens itself, asks
// the backend only for the tenant a token names, and serves its Protected Resource Metadata.
//
//   2025-11-25, 2025-06-18: `initialize` (POST, no session) opens a session and answers with its
//     Mcp-Session-Id; later POSTs carry it. A tools/call is answered on an SSE stream that also
//     carries its progress and the questions it asks the user; other requests get JSON. GET
//     opens the session's stream for messages that belong to no request; Last-Event-ID resumes
//     a stream that was cut. DELETE ends the session.
//   2026-07-28: every request stands alone (params._meta), its Mcp-* headers must repeat the
//     body, and errors get the HTTP status of their code. Such requests are served in the
//     tenant's shared session, or in the one an Mcp-Session-Id header names.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "runner/mcp/connection.h"
#include "runner/mcp/http_rules.h"
#include "runner/mcp/oauth.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

// What the server enforces for one tenant. The backend owns these; their addresses are stable.
struct HttpTenant {
    std::string name;
    std::size_t max_sessions = 16;
    std::size_t max_calls = 4;    // tools/call running at once in one session (more wait)
    double calls_per_second = 0;  // tools/call per second, burst max(1, rate); 0: unlimited
    std::chrono::seconds idle_ttl{1800};
    std::chrono::seconds max_lifetime{86400};
};

// What a backend measures of one tenant's sessions, for /metrics.
struct TenantUsage {
    std::string tenant;
    std::uint64_t worker_restarts = 0;  // workers started again (crash, kill, hung call)
    std::int64_t processes = 0;         // commands running in its sandboxes now
    std::uint64_t output_bytes = 0;     // tool output written to disk since the start
    std::uint64_t disk_bytes = 0;       // tool output on disk now (ended sessions' included)
    std::uint64_t disk_limit_bytes = 0;
    // The policy's decisions on its calls: allow, ask (whatever the answer), deny.
    std::uint64_t allowed = 0, asked = 0, denied = 0;
};

// What a client asks of a new session besides its tenant: headers of its initialize request.
struct SessionRequest {
    std::string workspace{};  // Stockade-Workspace (empty: none)
    std::string image{};      // Stockade-Image (empty: none)
};

// What the server tells its backend of its own state, for what the backend decides on it (its
// operator endpoints, its lifetime).
struct ServerActivity {
    std::chrono::steady_clock::time_point now{};
    std::size_t sessions = 0;  // open or being opened, of every tenant
    // The latest request on /mcp that a tenant's token let in; the server's start before one.
    std::chrono::steady_clock::time_point last_request{};
    bool draining = false;
};

// The answer to a request on an operator endpoint the backend serves (HttpBackend::admin).
struct AdminReply {
    unsigned status = 200;
    std::string body;
    std::string content_type = "application/json";
};

class HttpBackend {
public:
    virtual ~HttpBackend() = default;
    // The tenant a request is served for: `token` is its bearer token (nullopt: none). Null
    // refuses the request (401).
    virtual const HttpTenant* authenticate(const std::optional<std::string>& token) = 0;
    // The tenant named `name`, or null: the tenant an access token's tenant claim names, when
    // the server checks OAuth access tokens (HttpOptions::oauth) instead of asking
    // authenticate(). Thread-safe.
    virtual const HttpTenant* tenant_named(std::string_view /*name*/) { return nullptr; }
    // Whether `token` is the operator's, for /metrics and /admin/sessions.
    virtual bool is_admin(const std::optional<std::string>& token) = 0;
    // Opens the tool host of a new session of `tenant`, as `request` asks. Blocking (a sandbox
    // starts): called on a thread of its own, never on an I/O thread. Its error's message is
    // shown to the client: kInvalidArgument and kNotFound as 400, kResourceExhausted as 429,
    // the rest as 503.
    virtual Result<std::unique_ptr<ToolHost>> open_session(const HttpTenant& tenant,
                                                           const std::string& session_id,
                                                           const SessionRequest& request) = 0;
    // Why new sessions cannot be opened now (/readyz), or nullopt.
    virtual std::optional<std::string> not_ready() { return std::nullopt; }
    // What /readyz says when it answers 200. Thread-safe.
    virtual std::string ready() { return "ready"; }
    // Why /mcp is refused with 503 now, whatever the token (a pod not bound to its tenant yet),
    // or nullopt. Thread-safe.
    virtual std::optional<std::string> unavailable() { return std::nullopt; }
    // What the backend measures of each tenant, for /metrics. Thread-safe.
    virtual std::vector<TenantUsage> usage() { return {}; }
    // More of /metrics, in its text format, after the server's own. Thread-safe.
    virtual std::string metrics() { return {}; }
    // The answer to an operator's request for `path` (under /admin/, the operator's token
    // checked) that the server does not serve itself, or nullopt for 404. Called on an I/O
    // thread: it must not wait long. Thread-safe.
    virtual std::optional<AdminReply> admin(std::string_view /*method*/, std::string_view /*path*/,
                                            const std::string& /*body*/,
                                            const ServerActivity& /*activity*/) {
        return std::nullopt;
    }
    // The endpoints admin() serves, as "POST /admin/bind", for the 404 that lists them.
    virtual std::vector<std::string> admin_endpoints() { return {}; }
    // Asked every second while the server serves: why it should stop now (it then drains as on
    // SIGTERM, and run() returns), or nullopt. The server logs the reason. Thread-safe.
    virtual std::optional<std::string> stop_reason(const ServerActivity& /*activity*/) {
        return std::nullopt;
    }
};

struct HttpOptions {
    std::string listen = "127.0.0.1:8080";  // "ADDRESS:PORT" ([v6]:PORT), or "unix:/path"
    // Extra Host and Origin values allowed (HostRules::loopback follows the bind).
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> allowed_origins;
    bool auth = true;  // false (--no-auth): every request is the backend's tenant for no token
    // serve --oauth: /mcp takes the access tokens this resource server lets in, each served as
    // the tenant its tenant claim names (HttpBackend::tenant_named), and no other token; every
    // 401 and 403 there says where the Protected Resource Metadata is, which is served without
    // a token. Null: the backend's tokens (authenticate()). The operator's endpoints keep the
    // operator's tokens either way.
    std::shared_ptr<ResourceServer> oauth;
    std::size_t max_header_bytes = std::size_t{16} << 10;
    // A request's head and body must arrive within this; a connection may idle between requests
    // for keep_alive; one write may wait this long for a client that does not read.
    std::chrono::seconds read_timeout{30};
    std::chrono::seconds keep_alive{75};
    std::chrono::seconds write_timeout{30};
    std::size_t max_connections = 4096;
    // What may wait on one stream for a client that reads too slowly; past it the connection is
    // closed, and the client resumes with Last-Event-ID.
    std::size_t max_stream_bytes = std::size_t{16} << 20;
    // What a session keeps of its streams' events to resume them (the oldest go first; a
    // stream's last event stays until a newer stream's push it out, however large).
    std::size_t replay_bytes = std::size_t{256} << 10;
    std::size_t replay_events = 1024;    // events kept per stream for Last-Event-ID
    std::chrono::seconds heartbeat{15};  // an SSE comment when a stream is otherwise quiet
    std::chrono::seconds drain{30};      // SIGTERM: how long running calls may finish
    // Of `drain`, what is kept back for ending the sessions and writing their last answers:
    // running calls get drain - drain_reserve, and the drain is over by `drain` (serve --pod,
    // whose pod is killed at Kubernetes' terminationGracePeriodSeconds). 0: calls get all of
    // `drain`, and ending the sessions (a few seconds at most) comes after it.
    std::chrono::milliseconds drain_reserve{0};
    // Whether a Stockade-Token: TOKEN header is taken as the token (before Authorization: it is
    // ours alone; serve --pod behind agent-sandbox's router, which strips Authorization).
    bool token_header = false;
    bool handle_signals = false;  // SIGTERM, SIGINT and SIGHUP call request_stop()
    unsigned io_threads = 2;
    unsigned open_threads = 2;  // sessions being opened (sandboxes starting) at once
    ServerOptions mcp;          // max_message_bytes bounds a request body too
};

class HttpServer {
public:
    HttpServer(HttpBackend& backend, HttpOptions options);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds the listener. Errors: kInvalidArgument (a malformed address), or the bind's.
    Status listen();
    // Where it listens, once listen() succeeded: "127.0.0.1:PORT", "[::1]:PORT", "unix:/path".
    [[nodiscard]] std::string endpoint() const;
    // Whether that is a loopback address or a unix socket (only local clients can reach it).
    [[nodiscard]] bool loopback() const;

    // Serves until request_stop(). Then it drains: the listener closes, new sessions and calls
    // get 503, running calls have HttpOptions::drain to finish, then every session ends (its
    // sandbox with it): a call still running is stopped and answered with a JSON-RPC error
    // saying that the server is shutting down. Returns when all of that is done.
    Status run();
    // Thread-safe; not async-signal-safe (serve handles its signals in the server's loop).
    void request_stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stockade::mcp
