// The sessions of the HTTP server (docs/http.md) and their lifecycle: a session is reserved
// against its tenant's max_sessions, opened (the backend starts its tool host), found by its id
// for each later request (only by its own tenant: another tenant's id finds nothing), and ended
// by its client (DELETE), by the operator, by idling past its tenant's idle_ttl, by reaching its
// max_lifetime, or by the drain. Also each tenant's token bucket of calls per second. Knows no
// socket: whoever waits for a session being opened attaches a Wake.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "runner/mcp/connection.h"
#include "runner/mcp/http_metrics.h"
#include "runner/mcp/http_server.h"
#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/outbox.h"
#include "runner/mcp/stream_store.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

// One session: its Connection over the tool host the backend opened, and its response streams.
class McpSession final : public Outbox {
public:
    using Clock = std::chrono::steady_clock;

    McpSession(std::string session_id, const HttpTenant& owner, const HttpOptions& options,
               Metrics& metrics);
    ~McpSession() override { end(); }
    McpSession(const McpSession&) = delete;
    McpSession& operator=(const McpSession&) = delete;

    // Thread: an opening thread, once.
    void start(std::unique_ptr<ToolHost> tool_host);

    // Ends the session: stops its calls and waits for them, then closes its tool host (the
    // sandbox). Blocking; idempotent. Streams still open end. `answer`: when the server ends
    // the session while its client is there (draining, the operator), every request not yet
    // answered, a call it stopped included, is answered with JSON-RPC error -32603 and this
    // message; nullopt (the client's DELETE, an idle session): they end with no answer.
    void end(const std::optional<std::string>& answer = std::nullopt);
    [[nodiscard]] bool ended() const { return ended_; }

    // The revision the session's initialize negotiated (2025-11-25 before one).
    [[nodiscard]] std::string version();
    void negotiated(std::string version);
    void touch() { last_used.store(Clock::now().time_since_epoch().count()); }
    [[nodiscard]] Clock::time_point last_used_at() const {
        return Clock::time_point(Clock::duration(last_used.load()));
    }
    // Its tool calls, running or waiting.
    [[nodiscard]] std::size_t calls() const {
        return connection_ && !ended_ ? connection_->calls() : 0;
    }
    // The tools/call requests it was sent since it opened, whatever became of them.
    [[nodiscard]] std::uint64_t calls_made() const { return calls_made_.load(); }
    // Its event log's id in the state directory (ToolHost::event_log_id), once started.
    [[nodiscard]] const std::string& event_log_id() const { return event_log_id_; }
    [[nodiscard]] std::string short_id() const { return id.substr(0, 12); }

    // The tool host's rewind (ToolHost::rewind); kUnavailable once the session ended. Blocking:
    // end() waits for a rewind in progress.
    Result<nlohmann::json> rewind(const nlohmann::json& request);

    // Hands a message to the connection. Thread: any I/O thread; one at a time per session.
    void deliver(jsonrpc::Message message, std::size_t bytes);

    // The session's GET stream (StreamStore::open_standalone).
    std::shared_ptr<EventStream> open_standalone(Wake wake);
    StreamStore& streams() { return streams_; }

    void post(std::string message, const Route& route) override;

    const std::string id;
    const HttpTenant& tenant;
    const Clock::time_point created = Clock::now();
    std::atomic<Clock::rep> last_used{Clock::now().time_since_epoch().count()};

private:
    Metrics& metrics_;
    ServerOptions mcp_options_;
    StreamStore streams_;
    std::mutex deliver_mu_;
    std::mutex host_mu_;  // held by rewind() and by end() around host_'s reset
    std::unique_ptr<ToolHost> host_;
    std::unique_ptr<Connection> connection_;  // after host_: ends first
    std::atomic<bool> ended_{false};
    std::atomic<std::uint64_t> calls_made_{0};
    std::string event_log_id_;  // set by start(), before the session is in the table
    std::mutex version_mu_;
    std::string version_;  // guarded by version_mu_
};

// A session being opened, or open: requests that need it wait until it is ready.
struct SessionSlot {
    std::shared_ptr<McpSession> session;
    // Guarded by the table's mutex until ready; fixed after.
    bool ready = false;
    std::string error;    // opening failed: why
    unsigned status = 0;  // and the HTTP status that says so
    std::vector<Wake> waiters;
};

// Every session of the server, by id, and what is kept per tenant. Thread-safe.
class SessionTable {
public:
    using Clock = std::chrono::steady_clock;

    SessionTable(const HttpOptions& options, Metrics& metrics)
        : options_(options), metrics_(metrics) {}

    // The open session `id` of `tenant`, or null: unknown, not yet open, ended, or another
    // tenant's (which is not found either).
    std::shared_ptr<McpSession> find(std::string_view id, const HttpTenant& tenant);

    struct Reserved {
        std::shared_ptr<SessionSlot> slot;  // null: refused, the tenant is at max_sessions
        bool opener = false;                // the caller opens the session and then calls opened()
        std::size_t open = 0;               // refused: the tenant's sessions
    };
    // A new session of `tenant`, or (`shared`) the tenant's session for 2026-07-28 requests,
    // opened once: later callers get its slot to wait on.
    Reserved reserve(const HttpTenant& tenant, bool shared);
    // The opener's outcome: the slot is ready (a failed session leaves the table, its error
    // and status, 400, 429 or 503, in the slot) and its waiters are woken.
    void opened(SessionSlot& slot, const Status& status);
    // Whether `slot` is ready; when not, `wake` is called once it is.
    bool ready_or_wait(SessionSlot& slot, Wake wake);

    // `session` leaves the table (it may still be ending).
    void forget(const McpSession& session);
    // The sessions open now.
    std::vector<std::shared_ptr<McpSession>> open_sessions();
    // The open session `id`, whichever tenant's (the operator's DELETE), or null.
    std::shared_ptr<McpSession> find_any(std::string_view id);

    // Seconds to wait before `tenant` may call again, or nullopt when it may call now (and a
    // token is taken).
    std::optional<long> take_call_token(const HttpTenant& tenant, Clock::time_point now);

    // The sessions to end at `now`: past their max_lifetime (`expired`), or idle past their
    // idle_ttl with no call running.
    struct Due {
        std::shared_ptr<McpSession> session;
        bool expired = false;
    };
    std::vector<Due> due(Clock::time_point now);

    // Per tenant: sessions counted (those being opened included) and calls running or waiting.
    std::map<std::string, TenantGauges> gauges();

private:
    // What the server keeps per tenant: sessions counted against max_sessions and a token
    // bucket for calls per second.
    struct TenantState {
        std::size_t sessions = 0;
        double tokens = 0;
        Clock::time_point refilled{};
        std::shared_ptr<SessionSlot> shared;  // the session of its 2026-07-28 requests
    };

    void forget_locked(const McpSession& session);

    const HttpOptions& options_;
    Metrics& metrics_;
    std::mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<SessionSlot>> sessions_;  // by id
    std::map<std::string, TenantState> tenants_;                              // by name
};

}  // namespace stockade::mcp
