#include "runner/mcp/http_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <csignal>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "runner/mcp/protocol.h"

namespace stockade::mcp {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

using asio::awaitable;
using asio::use_awaitable;
using nlohmann::json;
using Protocol = asio::generic::stream_protocol;
using HttpStream = beast::basic_stream<Protocol>;
using HttpRequest = bhttp::request<bhttp::string_body>;
using HttpResponse = bhttp::response<bhttp::string_body>;
using Clock = std::chrono::steady_clock;

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

std::optional<std::string_view> header(const HttpRequest& request, std::string_view name) {
    auto it = request.find(beast::string_view(name.data(), name.size()));
    if (it == request.end()) {
        return std::nullopt;
    }
    return std::string_view(it->value().data(), it->value().size());
}

std::string_view header_or_empty(const HttpRequest& request, std::string_view name) {
    return header(request, name).value_or(std::string_view());
}

// The protocol version a request declares in its own params._meta, if any.
std::optional<std::string> declared_version(const jsonrpc::Request& request) {
    if (!request.params.is_object()) {
        return std::nullopt;
    }
    auto meta = request.params.find("_meta");
    if (meta == request.params.end() || !meta->is_object()) {
        return std::nullopt;
    }
    auto version = meta->find(std::string(kMetaProtocolVersion));
    if (version == meta->end() || !version->is_string()) {
        return std::nullopt;
    }
    return version->get<std::string>();
}

bool is_legacy_version(std::string_view version) {
    return is_supported_version(version) && !is_modern_version(version);
}

// The JSON-RPC error code of a response message, or nullopt for a result.
// Our messages are dumped with their keys sorted, so an error response, and only one, begins
// with {"error": (a result begins with {"id":). Only those are parsed: results can be large.
bool is_error_response(std::string_view message) {
    return message.starts_with(R"({"error":)");
}

// The JSON-RPC error code of a response message, or nullopt for a result.
std::optional<int> error_code(std::string_view message) {
    if (!is_error_response(message)) {
        return std::nullopt;
    }
    json parsed = json::parse(message, nullptr, false);
    const json& error = parsed.is_object() ? parsed["error"] : json();
    if (!error.is_object()) {
        return static_cast<int>(jsonrpc::ErrorCode::kInternalError);
    }
    return error.value("code", static_cast<int>(jsonrpc::ErrorCode::kInternalError));
}

// The outcome of a tools/call for the metrics: "ok", "tool_error" (isError), "error" (a
// JSON-RPC error) or "cancelled" (no response). The result is not parsed: a quote inside a
// JSON string is escaped, so "isError":true with bare quotes is a key, the result's own (our
// results carry no other).
std::string call_outcome(std::string_view message) {
    if (message.empty()) {
        return "cancelled";
    }
    if (is_error_response(message)) {
        return "error";
    }
    return message.find(R"("isError":true)") != std::string_view::npos ? "tool_error" : "ok";
}

std::string prometheus_label(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

// ---- metrics ----------------------------------------------------------------------------------

// The retry field of every stream's priming event: how long a client waits before it resumes.
constexpr unsigned kRetryMs = 1000;

// What a request that comes while the server drains is told, with 503 and Retry-After.
constexpr std::string_view kShuttingDownRefusal =
    "Stockade is shutting down and takes no new sessions or tool calls. Retry in a new session "
    "once the server is back, or on another server.";
constexpr const char* kShuttingDownRetryAfter = "5";
// How long a drain waits, once every session has ended, for their last responses to be written.
constexpr std::chrono::seconds kDrainFlush{5};

constexpr std::array<double, 13> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                    1,     2.5,  5,     10,   30,  60};

class Metrics {
public:
    void request(std::string_view method, unsigned status) {
        std::lock_guard lock(mu_);
        ++requests_[{std::string(method), status}];
    }
    void call(const std::string& tenant, const std::string& tool, const std::string& outcome,
              double seconds) {
        std::lock_guard lock(mu_);
        ++calls_[{tenant, tool, outcome}];
        auto& histogram = latency_[tool];
        for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
            if (seconds <= kLatencyBuckets[i]) {
                ++histogram.buckets[i];
            }
        }
        ++histogram.count;
        histogram.sum += seconds;
    }
    void refusal(const std::string& tenant, std::string_view kind) {
        std::lock_guard lock(mu_);
        ++refusals_[{tenant, std::string(kind)}];
    }
    void session_opened(const std::string& tenant, bool ok) {
        std::lock_guard lock(mu_);
        ++opened_[{tenant, ok}];
    }

    // `gauges`: per tenant, sessions open and calls in progress; `usage`: the backend's.
    std::string render(const std::map<std::string, std::pair<std::size_t, std::size_t>>& gauges,
                       const std::vector<TenantUsage>& usage, bool draining) const {
        std::lock_guard lock(mu_);
        std::string out;
        out +=
            "# HELP stockade_http_requests_total HTTP requests by method and status.\n"
            "# TYPE stockade_http_requests_total counter\n";
        for (const auto& [key, n] : requests_) {
            out += fmt::format("stockade_http_requests_total{{method=\"{}\",status=\"{}\"}} {}\n",
                               prometheus_label(key.first), key.second, n);
        }
        out +=
            "# HELP stockade_tool_calls_total Tool calls by tenant, tool and outcome.\n"
            "# TYPE stockade_tool_calls_total counter\n";
        for (const auto& [key, n] : calls_) {
            out += fmt::format(
                "stockade_tool_calls_total{{tenant=\"{}\",tool=\"{}\",outcome=\"{}\"}} {}\n",
                prometheus_label(std::get<0>(key)), prometheus_label(std::get<1>(key)),
                prometheus_label(std::get<2>(key)), n);
        }
        out +=
            "# HELP stockade_tool_call_seconds Tool call latency, request to response.\n"
            "# TYPE stockade_tool_call_seconds histogram\n";
        for (const auto& [tool, h] : latency_) {
            const std::string label = prometheus_label(tool);
            for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
                out +=
                    fmt::format("stockade_tool_call_seconds_bucket{{tool=\"{}\",le=\"{}\"}} {}\n",
                                label, kLatencyBuckets[i], h.buckets[i]);
            }
            out += fmt::format("stockade_tool_call_seconds_bucket{{tool=\"{}\",le=\"+Inf\"}} {}\n",
                               label, h.count);
            out += fmt::format("stockade_tool_call_seconds_sum{{tool=\"{}\"}} {}\n", label, h.sum);
            out +=
                fmt::format("stockade_tool_call_seconds_count{{tool=\"{}\"}} {}\n", label, h.count);
        }
        out +=
            "# HELP stockade_quota_refusals_total Requests refused by a tenant's quota.\n"
            "# TYPE stockade_quota_refusals_total counter\n";
        for (const auto& [key, n] : refusals_) {
            out += fmt::format("stockade_quota_refusals_total{{tenant=\"{}\",quota=\"{}\"}} {}\n",
                               prometheus_label(key.first), prometheus_label(key.second), n);
        }
        out +=
            "# HELP stockade_sessions_opened_total Sessions opened, and failed to open.\n"
            "# TYPE stockade_sessions_opened_total counter\n";
        for (const auto& [key, n] : opened_) {
            out += fmt::format("stockade_sessions_opened_total{{tenant=\"{}\",result=\"{}\"}} {}\n",
                               prometheus_label(key.first), key.second ? "ok" : "failed", n);
        }
        out +=
            "# HELP stockade_sessions Sessions open, by tenant.\n"
            "# TYPE stockade_sessions gauge\n";
        for (const auto& [tenant, g] : gauges) {
            out += fmt::format("stockade_sessions{{tenant=\"{}\"}} {}\n", prometheus_label(tenant),
                               g.first);
        }
        out +=
            "# HELP stockade_calls_in_progress Tool calls running or waiting, by tenant.\n"
            "# TYPE stockade_calls_in_progress gauge\n";
        for (const auto& [tenant, g] : gauges) {
            out += fmt::format("stockade_calls_in_progress{{tenant=\"{}\"}} {}\n",
                               prometheus_label(tenant), g.second);
        }
        render_usage(usage, out);
        out += fmt::format(
            "# HELP stockade_draining 1 while the server drains after SIGTERM.\n"
            "# TYPE stockade_draining gauge\nstockade_draining {}\n",
            draining ? 1 : 0);
        return out;
    }

private:
    static void render_usage(const std::vector<TenantUsage>& usage, std::string& out) {
        struct Family {
            const char* name;
            const char* type;
            const char* help;
            std::function<std::string(const TenantUsage&)> value;
        };
        const Family families[] = {
            {"stockade_worker_restarts_total", "counter",
             "Session workers started again after a crash, a kill or a hung call.",
             [](const TenantUsage& u) {
                 return std::to_string(u.worker_restarts);
             }},
            {"stockade_processes", "gauge", "Commands running in the tenant's sandboxes.",
             [](const TenantUsage& u) {
                 return std::to_string(u.processes);
             }},
            {"stockade_output_bytes_total", "counter",
             "Tool output written to disk: spilled results and process logs.",
             [](const TenantUsage& u) {
                 return std::to_string(u.output_bytes);
             }},
            {"stockade_disk_bytes", "gauge",
             "Tool output the tenant's sessions hold on disk, ended sessions' included.",
             [](const TenantUsage& u) {
                 return std::to_string(u.disk_bytes);
             }},
            {"stockade_disk_limit_bytes", "gauge", "The tenant's disk quota for tool output.",
             [](const TenantUsage& u) {
                 return std::to_string(u.disk_limit_bytes);
             }},
        };
        for (const Family& family : families) {
            out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, family.help,
                               family.name, family.type);
            for (const TenantUsage& u : usage) {
                out += fmt::format("{}{{tenant=\"{}\"}} {}\n", family.name,
                                   prometheus_label(u.tenant), family.value(u));
            }
        }
        out +=
            "# HELP stockade_policy_decisions_total The policy's decisions on tool calls.\n"
            "# TYPE stockade_policy_decisions_total counter\n";
        for (const TenantUsage& u : usage) {
            for (const auto& [decision, n] :
                 {std::pair{"allow", u.allowed}, std::pair{"ask", u.asked},
                  std::pair{"deny", u.denied}}) {
                out += fmt::format(
                    "stockade_policy_decisions_total{{tenant=\"{}\",decision=\"{}\"}} {}\n",
                    prometheus_label(u.tenant), decision, n);
            }
        }
    }

    struct Histogram {
        std::array<std::uint64_t, kLatencyBuckets.size()> buckets{};
        std::uint64_t count = 0;
        double sum = 0;
    };
    mutable std::mutex mu_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
    std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> calls_;
    std::map<std::string, Histogram> latency_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> refusals_;
    std::map<std::pair<std::string, bool>, std::uint64_t> opened_;
};

// ---- streams and sessions ---------------------------------------------------------------------

// One response stream of a session: the SSE stream (or the JSON body) answering one POSTed
// request, or the session's GET stream for messages that belong to no request.
struct EventStream {
    std::uint64_t number = 0;
    std::string request;  // the request's id key; empty for the GET stream
    bool sse = true;      // false: one JSON response
    std::string tool;     // tools/call: the tool, for the metrics
    bool priming = true;  // begins with a priming event (RevisionFeatures::sse_priming)
    Clock::time_point started = Clock::now();
    // Guarded by McpSession::mu.
    std::uint64_t next_seq = 1;
    std::deque<std::pair<std::uint64_t, std::string>> history;  // SSE events kept for resuming
    std::deque<std::string> pending;                            // for the writer attached
    std::size_t pending_bytes = 0;
    std::uint64_t resumed_from = 0;  // the Last-Event-ID seq the writer attached after
    bool overflow = false;           // the client reads too slowly: its connection is dropped
    bool done = false;               // the request's last message came (or the session ended)
    std::string reply;               // JSON mode: the response; empty when none
    // The attached writer's wake-up (a timer it waits on); null when nobody writes the stream.
    std::shared_ptr<asio::steady_timer> waiter;
};

// Counts a response being written, for as long as it lives.
class Responding {
public:
    explicit Responding(std::atomic<std::size_t>& count) : count_(count) { ++count_; }
    ~Responding() { --count_; }
    Responding(const Responding&) = delete;
    Responding& operator=(const Responding&) = delete;

private:
    std::atomic<std::size_t>& count_;
};

void wake(EventStream& stream) {
    if (stream.waiter) {
        asio::post(stream.waiter->get_executor(), [timer = stream.waiter] { timer->cancel(); });
    }
}

class McpSession final : public Outbox {
public:
    McpSession(std::string session_id, const HttpTenant& owner, const HttpOptions& options,
               Metrics& metrics)
        : id(std::move(session_id)),
          tenant(owner),
          options_(options),
          metrics_(metrics),
          mcp_options_(options.mcp) {
        mcp_options_.max_concurrent_calls = std::max<std::size_t>(1, owner.max_calls);
        mcp_options_.log_context = fmt::format("tenant={} session={}", owner.name, short_id());
    }
    ~McpSession() override { end(); }
    McpSession(const McpSession&) = delete;
    McpSession& operator=(const McpSession&) = delete;

    // Thread: an opening thread, once.
    void start(std::unique_ptr<ToolHost> tool_host) {
        host_ = std::move(tool_host);
        connection_ = std::make_unique<Connection>(*host_, mcp_options_, *this);
    }

    // Ends the session: stops its calls and waits for them, then closes its tool host (the
    // sandbox). Blocking; idempotent. Streams still open end. `answer`: when the server ends
    // the session while its client is there (draining, the operator), every request not yet
    // answered, a call it stopped included, is answered with JSON-RPC error -32603 and this
    // message; nullopt (the client's DELETE, an idle session): they end with no answer.
    void end(const std::optional<std::string>& answer = std::nullopt) {
        if (ended_.exchange(true)) {
            return;
        }
        if (connection_) {
            if (answer) {
                connection_->shutdown_answering(*answer);
            } else {
                connection_->shutdown();
            }
        }
        {
            // A message being delivered has been handled; later ones are not (ended_).
            std::lock_guard delivered(deliver_mu_);
        }
        {
            std::lock_guard lock(mu);
            streams_closed_ = true;
            for (auto& [key, stream] : by_request_) {
                // A request whose answer will not come: the connection ignored it (it came as
                // the session ended), or it was being answered when the connection shut down.
                std::string message;
                if (answer) {
                    json request_id = json::parse(key, nullptr, false);
                    message = jsonrpc::encode_error(
                        jsonrpc::is_valid_id(request_id) ? request_id : json(nullptr),
                        jsonrpc::ErrorCode::kInternalError, *answer);
                }
                finish(*stream, message);
                if (stream->sse && !message.empty()) {
                    append(*stream, message);
                }
                wake(*stream);
            }
            by_request_.clear();
            for (auto& [number, stream] : streams_) {
                stream->done = true;
                wake(*stream);
            }
            if (standalone_) {
                standalone_->done = true;
                wake(*standalone_);
            }
        }
        connection_.reset();
        host_.reset();
        SPDLOG_LOGGER_INFO(logger(), "http session ended tenant={} session={}", tenant.name,
                           short_id());
    }

    [[nodiscard]] bool ended() const { return ended_; }

    // The revision the session's initialize negotiated (2025-11-25 before one).
    [[nodiscard]] std::string version() {
        std::lock_guard lock(mu);
        return version_;
    }
    void negotiated(std::string version) {
        std::lock_guard lock(mu);
        version_ = std::move(version);
    }
    void touch() { last_used.store(Clock::now().time_since_epoch().count()); }
    [[nodiscard]] std::size_t calls() const {
        return connection_ && !ended_ ? connection_->calls() : 0;
    }
    [[nodiscard]] std::string short_id() const { return id.substr(0, 12); }

    // Hands a message to the connection. Thread: any I/O thread; one at a time per session.
    void deliver(jsonrpc::Message message, std::size_t bytes) {
        std::lock_guard lock(deliver_mu_);
        touch();
        if (connection_ && !ended_) {
            connection_->deliver(std::move(message), bytes);
        }
    }

    struct OpenedStream {
        std::shared_ptr<EventStream> stream;  // null: refused
        bool ended = false;                   // refused because the session ended
    };

    // A stream for request `key`, attached to `waiter`. Refused when a request with that id is
    // still in progress, or the session has ended.
    OpenedStream open_stream(const std::string& key, bool sse, std::string tool, bool priming,
                             std::shared_ptr<asio::steady_timer> waiter) {
        std::lock_guard lock(mu);
        if (streams_closed_) {
            return {.stream = nullptr, .ended = true};
        }
        if (by_request_.contains(key)) {
            return {.stream = nullptr, .ended = false};
        }
        auto stream = std::make_shared<EventStream>();
        stream->number = next_stream_++;
        stream->request = key;
        stream->sse = sse;
        stream->tool = std::move(tool);
        stream->priming = priming;
        stream->waiter = std::move(waiter);
        by_request_.emplace(key, stream);
        if (sse) {
            streams_.emplace(stream->number, stream);
            forget_old_streams();
        }
        return {.stream = stream, .ended = false};
    }

    // The GET stream, attached to `waiter`; null when one is attached already.
    std::shared_ptr<EventStream> open_standalone(std::shared_ptr<asio::steady_timer> waiter) {
        std::lock_guard lock(mu);
        if (standalone_ && standalone_->waiter) {
            return nullptr;
        }
        if (!standalone_) {
            standalone_ = std::make_shared<EventStream>();
            standalone_->number = next_stream_++;
            standalone_->priming = revision_features(version_).sse_priming;
            streams_.emplace(standalone_->number, standalone_);
        }
        standalone_->waiter = std::move(waiter);
        standalone_->done = ended_;
        return standalone_;
    }

    // Resumes stream `id.stream` after event `id.seq` (Last-Event-ID). Null when the stream is
    // unknown (forgotten) or has a writer.
    std::shared_ptr<EventStream> resume(http::EventId from,
                                        std::shared_ptr<asio::steady_timer> waiter) {
        std::lock_guard lock(mu);
        auto it = streams_.find(from.stream);
        if (it == streams_.end() || it->second->waiter) {
            return nullptr;
        }
        auto& stream = *it->second;
        stream.pending.clear();
        stream.pending_bytes = 0;
        stream.overflow = false;
        stream.resumed_from = from.seq;
        for (const auto& [seq, event] : stream.history) {
            if (seq > from.seq) {
                stream.pending.push_back(event);
                stream.pending_bytes += event.size();
            }
        }
        stream.waiter = std::move(waiter);
        return it->second;
    }

    // The writer of `stream` stops writing it: after all of it (`complete`), or cut off.
    // The writer of `stream` stops writing it. Its events stay (within replay_bytes) even when
    // it was written whole: a write to a client that has gone can succeed all the same.
    void detach(const std::shared_ptr<EventStream>& stream) {
        std::lock_guard lock(mu);
        stream->waiter.reset();
        stream->pending.clear();
        stream->pending_bytes = 0;
    }

    void post(std::string message, const Route& route) override {
        if (route.last) {
            touch();  // idle counts from a request's end as well as from its start
        }
        std::lock_guard lock(mu);
        std::shared_ptr<EventStream> stream;
        if (!route.request.empty()) {
            if (auto it = by_request_.find(route.request); it != by_request_.end()) {
                stream = it->second;
            }
        }
        const bool own = stream != nullptr;
        if (own && !stream->sse && !route.last) {
            stream = nullptr;  // a JSON response carries one message: the rest go to GET
        }
        if (!stream) {
            stream = standalone_;
        }
        if (own && route.last) {
            finish(*by_request_.at(route.request), message);
            by_request_.erase(route.request);
        }
        if (message.empty() || !stream || (own && route.last && !stream->sse)) {
            if (!message.empty() && !stream) {
                SPDLOG_LOGGER_DEBUG(logger(), "http message for no open stream dropped session={}",
                                    short_id());
            }
            if (stream) {
                wake(*stream);
            }
            return;
        }
        append(*stream, message);
        wake(*stream);
    }

    const std::string id;
    const HttpTenant& tenant;
    const Clock::time_point created = Clock::now();
    std::atomic<Clock::rep> last_used{Clock::now().time_since_epoch().count()};
    std::mutex mu;  // the streams

private:
    // Guarded by mu.
    void finish(EventStream& stream, const std::string& message) {
        stream.done = true;
        if (!stream.sse) {
            stream.reply = message;
        }
        if (!stream.tool.empty()) {
            const double seconds =
                std::chrono::duration<double>(Clock::now() - stream.started).count();
            metrics_.call(tenant.name, stream.tool, call_outcome(message), seconds);
        }
    }

    // Guarded by mu.
    void append(EventStream& stream, const std::string& message) {
        const std::uint64_t seq = stream.next_seq++;
        std::string event = http::sse_event(http::event_id({stream.number, seq}), message);
        if (stream.waiter) {
            stream.pending_bytes += event.size();
            stream.pending.push_back(event);
            if (stream.pending_bytes > options_.max_stream_bytes) {
                stream.overflow = true;
            }
        }
        history_bytes_ += event.size();
        stream.history.emplace_back(seq, std::move(event));
        if (stream.history.size() > options_.replay_events) {
            history_bytes_ -= stream.history.front().second.size();
            stream.history.pop_front();
        }
        // What the session keeps to replay is bounded: the oldest events go first.
        for (auto it = streams_.begin();
             history_bytes_ > options_.replay_bytes && it != streams_.end(); ++it) {
            auto& old = it->second->history;
            while (!old.empty() && history_bytes_ > options_.replay_bytes &&
                   (it->second.get() != &stream || old.size() > 1)) {
                history_bytes_ -= old.front().second.size();
                old.pop_front();
            }
        }
    }

    // Guarded by mu. Streams cut off before their end stay for a while to be resumed.
    void forget_old_streams() {
        constexpr std::size_t kKeptStreams = 64;
        for (auto it = streams_.begin(); streams_.size() > kKeptStreams && it != streams_.end();) {
            if (it->second->waiter || it->second == standalone_) {
                ++it;
            } else {
                for (const auto& [seq, event] : it->second->history) {
                    history_bytes_ -= event.size();
                }
                it = streams_.erase(it);
            }
        }
    }

    const HttpOptions& options_;
    Metrics& metrics_;
    ServerOptions mcp_options_;
    std::mutex deliver_mu_;
    std::unique_ptr<ToolHost> host_;
    std::unique_ptr<Connection> connection_;  // after host_: ends first
    std::atomic<bool> ended_{false};
    // Guarded by mu.
    std::string version_ = std::string(kProtocol20251125);
    bool streams_closed_ = false;  // end() answered the open requests: no stream opens now
    std::unordered_map<std::string, std::shared_ptr<EventStream>> by_request_;
    std::map<std::uint64_t, std::shared_ptr<EventStream>> streams_;  // SSE ones, by number
    std::shared_ptr<EventStream> standalone_;
    std::uint64_t next_stream_ = 1;
    std::size_t history_bytes_ = 0;  // of every stream's history
};

// A session being opened, or open: requests that need it wait until it is ready.
struct SessionSlot {
    std::shared_ptr<McpSession> session;
    bool ready = false;
    std::string error;    // opening failed: why
    unsigned status = 0;  // and the HTTP status that says so
    std::vector<std::shared_ptr<asio::steady_timer>> waiters;
};

// What the server keeps per tenant: sessions counted against max_sessions and a token bucket
// for calls per second.
struct TenantState {
    std::size_t sessions = 0;
    double tokens = 0;
    Clock::time_point refilled{};
    std::shared_ptr<SessionSlot> shared;  // the session of its 2026-07-28 requests
};

// The listening address, parsed.
struct ListenAddress {
    bool unix_socket = false;
    std::string path;  // unix
    asio::ip::tcp::endpoint tcp;
};

Result<ListenAddress> parse_listen(const std::string& text) {
    ListenAddress out;
    if (text.starts_with("unix:")) {
        out.unix_socket = true;
        out.path = text.substr(5);
        if (out.path.empty() || out.path.front() != '/') {
            return Error{Errc::kInvalidArgument,
                         "--http unix:PATH needs an absolute path, e.g. unix:/run/stockade.sock"};
        }
        return out;
    }
    std::string host;
    std::string port;
    if (text.starts_with("[")) {
        const auto close = text.find("]:");
        if (close == std::string::npos) {
            return Error{Errc::kInvalidArgument,
                         "--http \"" + text + "\": an IPv6 address is written [ADDRESS]:PORT"};
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos) {
            return Error{
                Errc::kInvalidArgument,
                "--http \"" + text + "\": give ADDRESS:PORT (e.g. 127.0.0.1:8080) or unix:/PATH"};
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host == "localhost") {
        host = "127.0.0.1";
    }
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    unsigned long number = 0;
    try {
        std::size_t used = 0;
        number = std::stoul(port, &used);
        if (used != port.size()) {
            number = 70000;
        }
    } catch (const std::exception&) {
        number = 70000;
    }
    if (ec || number > 65535) {
        return Error{Errc::kInvalidArgument,
                     "--http \"" + text +
                         "\": give a numeric ADDRESS:PORT (e.g. 127.0.0.1:8080, 0.0.0.0:8080, "
                         "[::1]:8080) or unix:/PATH"};
    }
    out.tcp = asio::ip::tcp::endpoint(address, static_cast<unsigned short>(number));
    return out;
}

}  // namespace

// ---- the server -------------------------------------------------------------------------------

class HttpServer::Impl {
public:
    Impl(HttpBackend& backend, HttpOptions options)
        : backend_(backend),
          options_(std::move(options)),
          open_pool_(std::max(1U, options_.open_threads)) {}

    ~Impl() { open_pool_.join(); }

    Status listen() {
        ASSIGN_OR_RETURN(ListenAddress address, parse_listen(options_.listen));
        rules_.hosts = options_.allowed_hosts;
        rules_.origins = options_.allowed_origins;
        boost::system::error_code ec;
        if (address.unix_socket) {
            rules_.loopback = true;
            // A socket left by an earlier run is replaced; anything else at the path is not ours.
            struct stat st {};
            if (::lstat(address.path.c_str(), &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) {
                    return Error{Errc::kInvalidArgument,
                                 "--http unix:" + address.path +
                                     ": the path exists and is not a socket; give another"};
                }
                (void)::unlink(address.path.c_str());
            }
            asio::local::stream_protocol::endpoint endpoint(address.path);
            unix_acceptor_.emplace(ioc_);
            unix_acceptor_->open(endpoint.protocol(), ec);
            if (!ec) {
                unix_acceptor_->bind(endpoint, ec);
            }
            if (!ec) {
                unix_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
            }
            endpoint_ = "unix:" + address.path;
            unix_path_ = address.path;
        } else {
            rules_.loopback = address.tcp.address().is_loopback();
            tcp_acceptor_.emplace(ioc_);
            tcp_acceptor_->open(address.tcp.protocol(), ec);
            if (!ec) {
                tcp_acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
                tcp_acceptor_->bind(address.tcp, ec);
            }
            if (!ec) {
                tcp_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
            }
            if (!ec) {
                auto bound = tcp_acceptor_->local_endpoint(ec);
                endpoint_ = bound.address().is_v6()
                                ? fmt::format("[{}]:{}", bound.address().to_string(), bound.port())
                                : fmt::format("{}:{}", bound.address().to_string(), bound.port());
            }
        }
        if (ec) {
            return Error{Errc::kUnavailable,
                         "cannot listen on " + options_.listen + ": " + ec.message()};
        }
        return ok_status();
    }

    [[nodiscard]] std::string endpoint() const { return endpoint_; }
    [[nodiscard]] bool loopback() const { return rules_.loopback; }

    Status run() {
        if (!tcp_acceptor_ && !unix_acceptor_) {
            return Error{Errc::kInvalidArgument, "HttpServer::run before listen()"};
        }
        std::optional<asio::signal_set> signals;
        if (options_.handle_signals) {
            signals.emplace(ioc_, SIGTERM, SIGINT, SIGHUP);
            signals->async_wait([this](const boost::system::error_code& ec, int signal) {
                if (!ec) {
                    SPDLOG_LOGGER_WARN(logger(), "http server draining on signal {}", signal);
                    request_stop();
                }
            });
        }
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        asio::co_spawn(ioc_, reap_loop(), asio::detached);
        std::vector<std::thread> threads;
        for (unsigned i = 1; i < std::max(1U, options_.io_threads); ++i) {
            threads.emplace_back([this] { run_io(); });
        }
        run_io();
        for (auto& thread : threads) {
            thread.join();
        }
        if (!unix_path_.empty()) {
            (void)::unlink(unix_path_.c_str());
        }
        return ok_status();
    }

    void request_stop() {
        asio::post(ioc_, [this] {
            if (draining_.exchange(true)) {
                return;
            }
            boost::system::error_code ignored;
            if (tcp_acceptor_) {
                tcp_acceptor_->close(ignored);
            }
            if (unix_acceptor_) {
                unix_acceptor_->close(ignored);
            }
            asio::co_spawn(ioc_, drain(), asio::detached);
        });
    }

private:
    void run_io() {
        for (;;) {
            try {
                ioc_.run();
                return;
            } catch (const std::exception& e) {
                // A handler threw: log it and keep serving; nothing a client sends stops us.
                SPDLOG_LOGGER_ERROR(logger(), "http handler failed: {}", e.what());
            }
        }
    }

    // ---- connections ---------------------------------------------------------------------------

    awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            Protocol::socket socket(ioc_);
            if (tcp_acceptor_) {
                auto tcp = co_await tcp_acceptor_->async_accept(
                    asio::make_strand(ioc_), asio::redirect_error(use_awaitable, ec));
                if (!ec) {
                    tcp.set_option(asio::ip::tcp::no_delay(true), ec);
                    socket = Protocol::socket(std::move(tcp));
                }
            } else {
                auto local = co_await unix_acceptor_->async_accept(
                    asio::make_strand(ioc_), asio::redirect_error(use_awaitable, ec));
                if (!ec) {
                    socket = Protocol::socket(std::move(local));
                }
            }
            if (ec) {
                if (draining_ || ec == asio::error::operation_aborted) {
                    co_return;
                }
                SPDLOG_LOGGER_WARN(logger(), "http accept failed: {}", ec.message());
                asio::steady_timer pause(ioc_, std::chrono::milliseconds(50));
                co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
                continue;
            }
            if (connections_.load() >= options_.max_connections) {
                SPDLOG_LOGGER_WARN(logger(), "http connection refused: {} open",
                                   connections_.load());
                socket.close(ec);
                continue;
            }
            // Each connection runs on a strand of its own: a stream's writer checks for events
            // and starts waiting in one step that a wake-up (a cancel posted to the same strand)
            // cannot fall between.
            asio::co_spawn(asio::make_strand(ioc_), serve_connection(HttpStream(std::move(socket))),
                           asio::detached);
        }
    }

    awaitable<void> serve_connection(HttpStream stream) {
        ++connections_;
        beast::flat_buffer buffer;
        bool first = true;
        try {
            for (;;) {
                bhttp::request_parser<bhttp::string_body> parser;
                parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
                parser.body_limit(options_.mcp.max_message_bytes);
                stream.expires_after(first ? options_.read_timeout : options_.keep_alive);
                first = false;
                boost::system::error_code ec;
                co_await bhttp::async_read_header(stream, buffer, parser,
                                                  asio::redirect_error(use_awaitable, ec));
                if (!ec) {
                    stream.expires_after(options_.read_timeout);
                    co_await bhttp::async_read(stream, buffer, parser,
                                               asio::redirect_error(use_awaitable, ec));
                }
                if (ec) {
                    co_await refuse_unreadable(stream, ec);
                    break;
                }
                HttpRequest request = parser.release();
                if (!co_await handle(stream, request) || !request.keep_alive()) {
                    break;
                }
            }
        } catch (const std::exception& e) {
            SPDLOG_LOGGER_WARN(logger(), "http connection failed: {}", e.what());
        }
        boost::system::error_code ignored;
        stream.socket().shutdown(Protocol::socket::shutdown_both, ignored);
        stream.close();
        --connections_;
    }

    // A request that could not be read: say why when the client can still hear it.
    awaitable<void> refuse_unreadable(HttpStream& stream, const boost::system::error_code& ec) {
        unsigned status = 0;
        std::string text;
        if (ec == bhttp::error::body_limit) {
            status = 413;
            text = fmt::format("The request body is over the {}-byte limit.\n",
                               options_.mcp.max_message_bytes);
        } else if (ec == bhttp::error::header_limit) {
            status = 431;
            text = fmt::format("The request headers are over the {}-byte limit.\n",
                               options_.max_header_bytes);
        } else if (ec == beast::error::timeout) {
            status = 408;
            text = "The request did not arrive in time.\n";
        } else if (ec != bhttp::error::end_of_stream && ec != asio::error::eof &&
                   ec != asio::error::connection_reset &&
                   ec.category() ==
                       bhttp::make_error_code(bhttp::error::end_of_stream).category()) {
            status = 400;
            text = "Malformed HTTP request: " + ec.message() + "\n";
        }
        if (status == 0) {
            co_return;
        }
        metrics_.request("-", status);
        HttpResponse response{static_cast<bhttp::status>(status), 11};
        response.set(bhttp::field::content_type, "text/plain; charset=utf-8");
        response.set(bhttp::field::connection, "close");
        response.body() = std::move(text);
        response.prepare_payload();
        stream.expires_after(std::chrono::seconds(5));
        boost::system::error_code ignored;
        co_await bhttp::async_write(stream, response, asio::redirect_error(use_awaitable, ignored));
    }

    // Callers build the response in a variable first: g++ 12 destroys some temporaries of a
    // co_await expression twice (those of a conditional operator, at least).
    awaitable<bool> write(HttpStream& stream, HttpResponse response, const HttpRequest& request) {
        response.version(request.version());
        response.keep_alive(request.keep_alive() && !draining_);
        response.set(bhttp::field::server, "stockade");
        response.prepare_payload();
        metrics_.request(
            std::string_view(request.method_string().data(), request.method_string().size()),
            response.result_int());
        stream.expires_after(options_.write_timeout);
        boost::system::error_code ec;
        co_await bhttp::async_write(stream, response, asio::redirect_error(use_awaitable, ec));
        co_return !ec && response.keep_alive();
    }

    static HttpResponse text_response(unsigned status, std::string text) {
        HttpResponse response{static_cast<bhttp::status>(status), 11};
        response.set(bhttp::field::content_type, "text/plain; charset=utf-8");
        response.body() = std::move(text);
        return response;
    }

    static HttpResponse json_response(unsigned status, std::string body) {
        HttpResponse response{static_cast<bhttp::status>(status), 11};
        response.set(bhttp::field::content_type, "application/json");
        response.body() = std::move(body);
        return response;
    }

    static HttpResponse rpc_error(unsigned status, const json& id, jsonrpc::ErrorCode code,
                                  std::string_view message) {
        return json_response(status, jsonrpc::encode_error(id, code, message));
    }

    HttpResponse unauthorized(const std::optional<std::string>& token) const {
        HttpResponse response = text_response(
            401, token ? "The bearer token is not valid for this server.\n"
                       : "This server needs a bearer token: send Authorization: Bearer TOKEN.\n");
        response.set(bhttp::field::www_authenticate,
                     token ? R"(Bearer realm="stockade", error="invalid_token")"
                           : R"(Bearer realm="stockade")");
        return response;
    }

    // ---- routing -------------------------------------------------------------------------------

    awaitable<bool> handle(HttpStream& stream, HttpRequest& request) {
        const std::string_view target(request.target().data(), request.target().size());
        const std::string_view path = target.substr(0, target.find('?'));
        if (!http::host_allowed(header_or_empty(request, "Host"), rules_) ||
            !http::origin_allowed(header_or_empty(request, "Origin"), rules_)) {
            SPDLOG_LOGGER_WARN(logger(), "http request refused: host={} origin={}",
                               header_or_empty(request, "Host"),
                               header_or_empty(request, "Origin"));
            HttpResponse reply = text_response(403,
                                               "This server does not answer to that Host or Origin "
                                               "(--allowed-host, --allowed-origin).\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        if (path == "/healthz") {
            HttpResponse reply = text_response(200, "ok\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        if (path == "/readyz") {
            std::optional<std::string> why =
                draining_ ? std::optional<std::string>("draining") : backend_.not_ready();
            HttpResponse reply =
                why ? text_response(503, *why + "\n") : text_response(200, "ready\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        std::optional<std::string> token;
        if (auto authorization = header(request, "Authorization")) {
            token = http::bearer_token(*authorization);
            if (!token) {
                HttpResponse reply = unauthorized(std::string());
                co_return co_await write(stream, std::move(reply), request);
            }
        }
        if (path == "/metrics" || path == "/admin/sessions" || path.starts_with("/admin/")) {
            if (options_.auth && !backend_.is_admin(token)) {
                HttpResponse reply = unauthorized(token);
                co_return co_await write(stream, std::move(reply), request);
            }
            HttpResponse reply = admin(request, path);
            co_return co_await write(stream, std::move(reply), request);
        }
        if (path != "/mcp") {
            HttpResponse reply = text_response(404, "Not found. The MCP endpoint is /mcp.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        const HttpTenant* tenant = backend_.authenticate(options_.auth ? token : std::nullopt);
        if (tenant == nullptr) {
            HttpResponse reply = unauthorized(token);
            co_return co_await write(stream, std::move(reply), request);
        }
        switch (request.method()) {
            case bhttp::verb::post:
                co_return co_await post(stream, request, *tenant);
            case bhttp::verb::get:
                co_return co_await get(stream, request, *tenant);
            case bhttp::verb::delete_:
                co_return co_await remove(stream, request, *tenant);
            default: {
                HttpResponse response = text_response(405, "Use POST, GET or DELETE on /mcp.\n");
                response.set(bhttp::field::allow, "POST, GET, DELETE");
                co_return co_await write(stream, std::move(response), request);
            }
        }
    }

    awaitable<bool> post(HttpStream& stream, HttpRequest& request, const HttpTenant& tenant) {
        const http::Accepts accepts = http::parse_accept(header_or_empty(request, "Accept"));
        if (!accepts.json && !accepts.event_stream) {
            HttpResponse reply =
                text_response(406, "Accept application/json and text/event-stream on /mcp.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        if (auto type = header(request, "Content-Type");
            type && !http::trim_ows(*type).starts_with("application/json")) {
            HttpResponse reply =
                text_response(415, "POST a JSON-RPC message as application/json.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        auto decoded = jsonrpc::decode(request.body());
        if (auto* failure = std::get_if<jsonrpc::DecodeFailure>(&decoded)) {
            HttpResponse reply = rpc_error(400, failure->id, failure->code, failure->message);
            co_return co_await write(stream, std::move(reply), request);
        }
        auto& message = std::get<jsonrpc::Message>(decoded);
        auto* rpc = std::get_if<jsonrpc::Request>(&message);
        const auto protocol_header = header(request, "MCP-Protocol-Version");
        const std::optional<std::string> declared =
            rpc != nullptr ? declared_version(*rpc) : std::nullopt;
        const bool modern =
            declared ? !is_legacy_version(*declared)
                     : protocol_header && is_modern_version(http::trim_ows(*protocol_header));
        if (rpc != nullptr && modern) {
            if (!declared) {
                HttpResponse reply = rpc_error(400, rpc->id, jsonrpc::ErrorCode::kInvalidParams,
                                               "Under protocol " + std::string(kProtocol20260728) +
                                                   " every request carries params._meta with \"" +
                                                   std::string(kMetaProtocolVersion) + "\" and \"" +
                                                   std::string(kMetaClientCapabilities) + "\".");
                co_return co_await write(stream, std::move(reply), request);
            }
            if (auto mismatch =
                    http::modern_header_mismatch(protocol_header, header(request, "Mcp-Method"),
                                                 header(request, "Mcp-Name"), *declared, *rpc)) {
                HttpResponse reply = rpc_error(400, rpc->id, jsonrpc::ErrorCode::kHeaderMismatch,
                                               "Header mismatch: " + *mismatch + ".");
                co_return co_await write(stream, std::move(reply), request);
            }
        } else if (protocol_header && !is_supported_version(http::trim_ows(*protocol_header))) {
            HttpResponse reply = rpc_error(
                400, rpc != nullptr ? rpc->id : json(nullptr), jsonrpc::ErrorCode::kInvalidRequest,
                "Unsupported MCP-Protocol-Version \"" +
                    std::string(http::trim_ows(*protocol_header)) + "\".");
            co_return co_await write(stream, std::move(reply), request);
        }

        // The session the message is for.
        std::shared_ptr<McpSession> session;
        bool created = false;
        const std::string_view session_header =
            http::trim_ows(header_or_empty(request, "Mcp-Session-Id"));
        if (!session_header.empty()) {
            session = find_session(session_header, tenant);
            if (!session) {
                HttpResponse reply = draining_ ? shutting_down(rpc) : session_not_found(rpc);
                co_return co_await write(stream, std::move(reply), request);
            }
        } else if (modern || (rpc != nullptr && rpc->method == "initialize")) {
            if (draining_) {
                HttpResponse reply = shutting_down(rpc);
                co_return co_await write(stream, std::move(reply), request);
            }
            auto opened = co_await open_session(
                tenant, modern,
                std::string(http::trim_ows(header_or_empty(request, "Stockade-Workspace"))));
            if (auto* refusal = std::get_if<HttpResponse>(&opened)) {
                HttpResponse reply = std::move(*refusal);
                co_return co_await write(stream, std::move(reply), request);
            }
            session = std::get<std::shared_ptr<McpSession>>(std::move(opened));
            created = !modern;
        } else {
            HttpResponse reply = rpc_error(
                400, rpc != nullptr ? rpc->id : json(nullptr), jsonrpc::ErrorCode::kInvalidRequest,
                "Bad request: no Mcp-Session-Id header. Send initialize first, then "
                "the session id it returns with every request.");
            co_return co_await write(stream, std::move(reply), request);
        }

        if (rpc == nullptr) {
            session->deliver(std::move(message), request.body().size());
            HttpResponse reply = text_response(202, "");
            co_return co_await write(stream, std::move(reply), request);
        }
        const bool is_call = rpc->method == "tools/call";
        if (is_call) {
            if (draining_) {
                HttpResponse reply = shutting_down(rpc);
                co_return co_await write(stream, std::move(reply), request);
            }
            if (auto wait = take_call_token(tenant)) {
                metrics_.refusal(tenant.name, "calls_per_second");
                HttpResponse response = rpc_error(
                    429, rpc->id, jsonrpc::ErrorCode::kInternalError,
                    fmt::format("Rate limit: this tenant may make {} tool calls a second. Retry "
                                "in {} s.",
                                tenant.calls_per_second, *wait));
                response.set(bhttp::field::retry_after, std::to_string(*wait));
                co_return co_await write(stream, std::move(response), request);
            }
        }
        const bool sse = (is_call && accepts.event_stream) || !accepts.json;
        auto waiter = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
        std::string tool;
        if (is_call) {
            tool = http::request_name(*rpc).value_or("");
        }
        // The revision the response is written under: the request's own, the one its
        // initialize negotiates, or the session's.
        std::string version;
        if (declared) {
            version = *declared;
        } else if (rpc->method == "initialize") {
            const json requested =
                rpc->params.is_object() ? rpc->params.value("protocolVersion", json()) : json();
            version = negotiate_initialize_version(
                requested.is_string() ? requested.get<std::string>() : std::string());
            session->negotiated(version);
        } else {
            version = session->version();
        }
        const json id = rpc->id;
        auto opened = session->open_stream(jsonrpc::id_key(id), sse, std::move(tool),
                                           revision_features(version).sse_priming, waiter);
        if (opened.ended) {
            HttpResponse reply = draining_ ? shutting_down(rpc) : session_not_found(rpc);
            co_return co_await write(stream, std::move(reply), request);
        }
        if (!opened.stream) {
            HttpResponse reply =
                rpc_error(409, id, jsonrpc::ErrorCode::kInvalidRequest,
                          "Request id " + jsonrpc::id_text(id) +
                              " is already used by a request in progress in this session.");
            co_return co_await write(stream, std::move(reply), request);
        }
        auto event_stream = std::move(opened.stream);
        session->deliver(std::move(message), request.body().size());
        // The answer to initialize names the session it opened.
        const std::string new_session = created ? session->id : std::string();
        if (sse) {
            co_return co_await write_events(stream, request, *session, event_stream, waiter,
                                            new_session);
        }
        co_return co_await write_reply(stream, request, *session, event_stream, waiter, new_session,
                                       modern);
    }

    awaitable<bool> get(HttpStream& stream, HttpRequest& request, const HttpTenant& tenant) {
        const std::string_view session_header =
            http::trim_ows(header_or_empty(request, "Mcp-Session-Id"));
        if (session_header.empty()) {
            HttpResponse response = text_response(
                405,
                "GET needs an Mcp-Session-Id: there is no stream outside a session. This server "
                "speaks Streamable HTTP (MCP 2025-03-26 and later), not the HTTP+SSE transport "
                "of 2024-11-05: POST initialize to this URL to open a session.\n");
            response.set(bhttp::field::allow, "POST, DELETE");
            co_return co_await write(stream, std::move(response), request);
        }
        if (!http::parse_accept(header_or_empty(request, "Accept")).event_stream) {
            HttpResponse reply = text_response(406, "GET on /mcp answers text/event-stream.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        auto session = find_session(session_header, tenant);
        if (!session) {
            HttpResponse reply =
                draining_ ? shutting_down(nullptr) : text_response(404, "Session not found.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        auto waiter = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
        std::shared_ptr<EventStream> event_stream;
        if (auto last = header(request, "Last-Event-ID")) {
            auto id = http::parse_event_id(*last);
            event_stream = id ? session->resume(*id, waiter) : nullptr;
            if (!event_stream) {
                HttpResponse reply =
                    text_response(404,
                                  "No stream to resume from that Last-Event-ID: it is "
                                  "unknown, finished, or being read already.\n");
                co_return co_await write(stream, std::move(reply), request);
            }
        } else {
            event_stream = session->open_standalone(waiter);
            if (!event_stream) {
                HttpResponse reply =
                    text_response(409, "This session's GET stream is already open.\n");
                co_return co_await write(stream, std::move(reply), request);
            }
        }
        const std::string no_new_session;
        co_return co_await write_events(stream, request, *session, event_stream, waiter,
                                        no_new_session);
    }

    awaitable<bool> remove(HttpStream& stream, HttpRequest& request, const HttpTenant& tenant) {
        const std::string_view session_header =
            http::trim_ows(header_or_empty(request, "Mcp-Session-Id"));
        auto session = find_session(session_header, tenant);
        if (!session) {
            HttpResponse reply = text_response(404, "Session not found.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        co_await end_session(session);
        HttpResponse reply = text_response(204, "");
        co_return co_await write(stream, std::move(reply), request);
    }

    static HttpResponse session_not_found(const jsonrpc::Request* rpc) {
        return rpc_error(404, rpc != nullptr ? rpc->id : json(nullptr),
                         jsonrpc::ErrorCode::kInvalidRequest,
                         "Session not found: it ended, or never existed. Start a new one with "
                         "initialize.");
    }

    // A request that comes while the server drains: no new session, no new call, and no
    // session once the drain has ended them.
    static HttpResponse shutting_down(const jsonrpc::Request* rpc) {
        HttpResponse response =
            rpc_error(503, rpc != nullptr ? rpc->id : json(nullptr),
                      jsonrpc::ErrorCode::kInternalError, std::string(kShuttingDownRefusal));
        response.set(bhttp::field::retry_after, kShuttingDownRetryAfter);
        response.set(bhttp::field::connection, "close");
        return response;
    }

    // ---- writing streams -----------------------------------------------------------------------

    // An SSE response: the events of `events` as they come, until its last one. false when the
    // connection must close (the client went away or reads too slowly).
    awaitable<bool> write_events(HttpStream& stream, const HttpRequest& request,
                                 McpSession& session, std::shared_ptr<EventStream> events,
                                 std::shared_ptr<asio::steady_timer> waiter,
                                 const std::string& new_session) {
        const Responding responding(responding_);
        bhttp::response<bhttp::empty_body> head{bhttp::status::ok, request.version()};
        head.set(bhttp::field::server, "stockade");
        head.set(bhttp::field::content_type, "text/event-stream");
        head.set(bhttp::field::cache_control, "no-cache, no-transform");
        head.set("X-Accel-Buffering", "no");
        if (!new_session.empty()) {
            head.set("Mcp-Session-Id", new_session);
        }
        head.keep_alive(request.keep_alive());
        head.chunked(true);
        metrics_.request(
            std::string_view(request.method_string().data(), request.method_string().size()), 200);
        // The head, the events that are there and, once the last has come, the end of the body
        // leave together: a call that is done by the time the head is written is one write.
        std::ostringstream head_text;
        head_text << head.base();
        std::string out = head_text.str();
        // The priming event: an id to resume from and how long to wait before reconnecting,
        // before anything else is sent. Not to a client of a revision before 2025-11-25, which
        // would read its empty data as a message; its events' own ids resume the stream.
        std::string batch;
        {
            std::lock_guard lock(session.mu);
            if (events->priming) {
                batch = http::sse_event(http::event_id({events->number, events->resumed_from}), "",
                                        kRetryMs);
            }
        }
        bool complete = false;
        for (;;) {
            bool done = false;
            bool overflow = false;
            {
                std::lock_guard lock(session.mu);
                for (auto& event : events->pending) {
                    batch += event;
                }
                events->pending.clear();
                events->pending_bytes = 0;
                done = events->done;
                overflow = events->overflow;
            }
            if (overflow) {
                SPDLOG_LOGGER_WARN(logger(),
                                   "http client reads too slowly; closing its stream session={}",
                                   session.short_id());
                break;
            }
            if (!batch.empty()) {
                out += fmt::format("{:x}\r\n", batch.size());
                out += batch;
                out += "\r\n";
                batch.clear();
            }
            if (done) {
                out += "0\r\n\r\n";  // the last chunk
            }
            const bool wrote = !out.empty();
            if (wrote) {
                boost::system::error_code ec;
                stream.expires_after(options_.write_timeout);
                co_await asio::async_write(stream, asio::buffer(out),
                                           asio::redirect_error(use_awaitable, ec));
                out.clear();
                if (ec) {
                    break;
                }
            }
            if (done) {
                complete = true;
                break;
            }
            if (wrote) {
                continue;  // what came while the write was out had its wake-up then: look again
            }
            waiter->expires_after(options_.heartbeat);
            boost::system::error_code wait_ec;
            co_await waiter->async_wait(asio::redirect_error(use_awaitable, wait_ec));
            if (!wait_ec) {
                {
                    std::lock_guard lock(session.mu);
                    if (!events->pending.empty() || events->done) {
                        SPDLOG_LOGGER_ERROR(logger(),
                                            "http stream {} woke by its heartbeat with events "
                                            "waiting session={}",
                                            events->number, session.short_id());
                    }
                }
                batch = ": keep-alive\n\n";  // finds a client that went away
            }
        }
        session.detach(events);
        co_return complete&& request.keep_alive() && !draining_;
    }

    // A JSON response: the request's one reply, when it comes.
    awaitable<bool> write_reply(HttpStream& stream, const HttpRequest& request, McpSession& session,
                                std::shared_ptr<EventStream> events,
                                std::shared_ptr<asio::steady_timer> waiter,
                                const std::string& new_session, bool modern) {
        const Responding responding(responding_);
        std::string reply;
        for (;;) {
            {
                std::lock_guard lock(session.mu);
                if (events->done) {
                    reply = std::move(events->reply);
                    break;
                }
            }
            waiter->expires_after(std::chrono::hours(24));
            boost::system::error_code ec;
            co_await waiter->async_wait(asio::redirect_error(use_awaitable, ec));
        }
        session.detach(events);
        if (reply.empty()) {
            HttpResponse accepted = text_response(202, "");
            co_return co_await write(stream, std::move(accepted), request);
        }
        unsigned status = 200;
        const bool stopped = session.ended() && draining_;
        if (auto code = error_code(reply)) {
            // Under 2026-07-28 a call the drain stopped is what 503 says: retry later.
            status = stopped && modern ? 503 : http::error_status(*code, modern);
        }
        HttpResponse response = json_response(status, std::move(reply));
        if (status == 503) {
            response.set(bhttp::field::retry_after, kShuttingDownRetryAfter);
        }
        if (!new_session.empty()) {
            response.set("Mcp-Session-Id", new_session);
        }
        co_return co_await write(stream, std::move(response), request);
    }

    // ---- sessions ------------------------------------------------------------------------------

    std::shared_ptr<McpSession> find_session(std::string_view id, const HttpTenant& tenant) {
        if (!http::is_session_id(id)) {
            return nullptr;
        }
        std::lock_guard lock(sessions_mu_);
        auto it = sessions_.find(std::string(id));
        if (it == sessions_.end() || !it->second->ready || it->second->session == nullptr ||
            &it->second->session->tenant != &tenant) {
            return nullptr;  // another tenant's session is not found either
        }
        return it->second->session;
    }

    // A new session of `tenant` (`shared`: its session for 2026-07-28 requests, opened once),
    // or the response refusing it.
    awaitable<std::variant<std::shared_ptr<McpSession>, HttpResponse>> open_session(
        const HttpTenant& tenant, bool shared, std::string workspace) {
        std::shared_ptr<SessionSlot> slot;
        bool opener = false;
        {
            std::lock_guard lock(sessions_mu_);
            TenantState& state = tenants_[tenant.name];
            if (shared) {
                workspace.clear();  // the tenant's shared session is on its workspace root
            }
            if (shared && state.shared) {
                slot = state.shared;
            } else if (state.sessions >= tenant.max_sessions) {
                metrics_.refusal(tenant.name, "sessions");
                HttpResponse response = rpc_error(
                    429, nullptr, jsonrpc::ErrorCode::kInternalError,
                    fmt::format("This tenant has {} sessions open, its limit. End one (DELETE "
                                "/mcp with its Mcp-Session-Id) or wait for an idle one to expire.",
                                state.sessions));
                response.set(bhttp::field::retry_after, "10");
                co_return response;
            } else {
                slot = std::make_shared<SessionSlot>();
                slot->session = std::make_shared<McpSession>(http::new_session_id(), tenant,
                                                             options_, metrics_);
                ++state.sessions;
                sessions_.emplace(slot->session->id, slot);
                if (shared) {
                    state.shared = slot;
                }
                opener = true;
            }
        }
        if (opener) {
            auto session = slot->session;
            Status opened = co_await asio::co_spawn(open_pool_, start_session(session, workspace),
                                                    use_awaitable);
            metrics_.session_opened(tenant.name, opened.has_value());
            std::lock_guard lock(sessions_mu_);
            slot->ready = true;
            if (!opened) {
                slot->error = opened.error().message;
                slot->status = opened.error().code == Errc::kInvalidArgument ||
                                       opened.error().code == Errc::kNotFound
                                   ? 400
                               : opened.error().code == Errc::kResourceExhausted ? 429
                                                                                 : 503;
                forget_locked(*slot);
                SPDLOG_LOGGER_ERROR(logger(), "http session failed to open tenant={} why={}",
                                    tenant.name, slot->error);
            } else {
                SPDLOG_LOGGER_INFO(logger(), "http session opened tenant={} session={} shared={}",
                                   tenant.name, session->short_id(), shared);
            }
            for (auto& waiter : slot->waiters) {
                asio::post(waiter->get_executor(), [waiter] { waiter->cancel(); });
            }
            slot->waiters.clear();
        } else {
            auto waiter = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
            for (;;) {
                {
                    std::lock_guard lock(sessions_mu_);
                    if (slot->ready) {
                        break;
                    }
                    slot->waiters.push_back(waiter);
                }
                waiter->expires_after(std::chrono::minutes(5));
                boost::system::error_code ec;
                co_await waiter->async_wait(asio::redirect_error(use_awaitable, ec));
            }
        }
        if (!slot->error.empty()) {
            co_return rpc_error(slot->status, nullptr,
                                slot->status == 400 ? jsonrpc::ErrorCode::kInvalidParams
                                                    : jsonrpc::ErrorCode::kInternalError,
                                "The session could not be started: " + slot->error);
        }
        co_return slot->session;
    }

    // Opens the session's tool host. Blocking: runs on the opening pool. (A coroutine of its own
    // rather than a lambda: g++ 12 destroys a coroutine lambda's captures twice.)
    awaitable<Status> start_session(std::shared_ptr<McpSession> session, std::string workspace) {
        auto host = backend_.open_session(session->tenant, session->id, workspace);
        if (!host) {
            co_return host.error();
        }
        session->start(std::move(*host));
        co_return ok_status();
    }

    static awaitable<void> stop_session(std::shared_ptr<McpSession> session,
                                        std::optional<std::string> answer) {
        session->end(answer);
        co_return;
    }

    // Guarded by sessions_mu_: the slot leaves the tables (its session may still be ending).
    void forget_locked(const SessionSlot& slot) {
        const auto& session = *slot.session;
        if (sessions_.erase(session.id) == 0) {
            return;
        }
        TenantState& state = tenants_[session.tenant.name];
        --state.sessions;
        if (state.shared && state.shared->session.get() == &session) {
            state.shared.reset();
        }
    }

    // Ends a session off the I/O threads (its calls are stopped and waited for, its sandbox
    // stopped). `answer`: see McpSession::end.
    awaitable<void> end_session(std::shared_ptr<McpSession> session,
                                std::optional<std::string> answer = std::nullopt) {
        {
            std::lock_guard lock(sessions_mu_);
            if (auto it = sessions_.find(session->id); it != sessions_.end()) {
                forget_locked(*it->second);
            }
        }
        co_await asio::co_spawn(open_pool_, stop_session(session, std::move(answer)),
                                use_awaitable);
    }

    std::vector<std::shared_ptr<McpSession>> open_sessions() {
        std::vector<std::shared_ptr<McpSession>> out;
        std::lock_guard lock(sessions_mu_);
        for (const auto& [id, slot] : sessions_) {
            if (slot->ready && slot->session) {
                out.push_back(slot->session);
            }
        }
        return out;
    }

    // Seconds to wait before the tenant may call again, or nullopt when it may call now.
    std::optional<long> take_call_token(const HttpTenant& tenant) {
        if (tenant.calls_per_second <= 0) {
            return std::nullopt;
        }
        std::lock_guard lock(sessions_mu_);
        TenantState& state = tenants_[tenant.name];
        const double burst = std::max(1.0, tenant.calls_per_second);
        const auto now = Clock::now();
        if (state.refilled == Clock::time_point{}) {
            state.tokens = burst;
        } else {
            state.tokens = std::min(
                burst, state.tokens + std::chrono::duration<double>(now - state.refilled).count() *
                                          tenant.calls_per_second);
        }
        state.refilled = now;
        if (state.tokens >= 1.0) {
            state.tokens -= 1.0;
            return std::nullopt;
        }
        return std::max(
            1L, static_cast<long>(std::ceil((1.0 - state.tokens) / tenant.calls_per_second)));
    }

    // Idle sessions and those past their lifetime end.
    awaitable<void> reap_loop() {
        asio::steady_timer timer(ioc_);
        while (!draining_) {
            timer.expires_after(std::chrono::seconds(1));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
            const auto now = Clock::now();
            for (auto& session : open_sessions()) {
                const auto idle = now - Clock::time_point(Clock::duration(session->last_used));
                const bool expired = now - session->created > session->tenant.max_lifetime;
                if (expired || (idle > session->tenant.idle_ttl && session->calls() == 0)) {
                    SPDLOG_LOGGER_INFO(logger(), "http session {} tenant={} session={}",
                                       expired ? "past its lifetime" : "idle", session->tenant.name,
                                       session->short_id());
                    std::optional<std::string> answer;
                    if (expired) {
                        answer = fmt::format(
                            "This session reached its maximum lifetime ({} s) while this call "
                            "was running, so the call was stopped and its processes killed; it "
                            "may have done part of its work. Start a new session to retry it.",
                            session->tenant.max_lifetime.count());
                    }
                    asio::co_spawn(ioc_, end_session(session, std::move(answer)), asio::detached);
                }
            }
        }
    }

    // SIGTERM: running calls get options_.drain to finish, then every session ends: a call
    // still running is stopped and answered with an error that says so (drain_answer()).
    awaitable<void> drain() {
        const auto deadline = Clock::now() + options_.drain;
        asio::steady_timer timer(ioc_);
        for (;;) {
            std::size_t running = 0;
            for (auto& session : open_sessions()) {
                running += session->calls();
            }
            if (running == 0) {
                SPDLOG_LOGGER_WARN(logger(),
                                   "http drain: every call finished; ending every session");
                break;
            }
            if (Clock::now() >= deadline) {
                SPDLOG_LOGGER_WARN(logger(),
                                   "http drain: {} calls still running at the deadline; stopping "
                                   "them, answering each with an error, and ending every session",
                                   running);
                break;
            }
            timer.expires_after(std::chrono::milliseconds(100));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
        }
        for (auto& session : open_sessions()) {
            co_await end_session(session, drain_answer());
        }
        // Let the responses that just ended write their last bytes; a client that does not
        // read them is not waited for long.
        const auto flushed = Clock::now() + kDrainFlush;
        while (responding_.load() > 0 && Clock::now() < flushed) {
            timer.expires_after(std::chrono::milliseconds(20));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
        }
        ioc_.stop();
    }

    // The answer of a call the drain stopped.
    [[nodiscard]] std::string drain_answer() const {
        return fmt::format(
            "Stockade is shutting down: this call was still running when the {} s given to "
            "running calls ran out, so it was stopped and its processes killed; it may have done "
            "part of its work. Retry it in a new session once the server is back.",
            options_.drain.count());
    }

    // ---- operator endpoints --------------------------------------------------------------------

    HttpResponse admin(const HttpRequest& request, std::string_view path) {
        if (path == "/metrics" && request.method() == bhttp::verb::get) {
            std::map<std::string, std::pair<std::size_t, std::size_t>> gauges;
            {
                std::lock_guard lock(sessions_mu_);
                for (const auto& [name, state] : tenants_) {
                    gauges[name].first = state.sessions;
                }
            }
            for (auto& session : open_sessions()) {
                gauges[session->tenant.name].second += session->calls();
            }
            HttpResponse response =
                text_response(200, metrics_.render(gauges, backend_.usage(), draining_));
            response.set(bhttp::field::content_type, "text/plain; version=0.0.4");
            return response;
        }
        if (path == "/admin/sessions" && request.method() == bhttp::verb::get) {
            json list = json::array();
            const auto now = Clock::now();
            for (auto& session : open_sessions()) {
                const auto idle = now - Clock::time_point(Clock::duration(session->last_used));
                list.push_back({{"id", session->id},
                                {"tenant", session->tenant.name},
                                {"age_seconds", std::chrono::duration_cast<std::chrono::seconds>(
                                                    now - session->created)
                                                    .count()},
                                {"idle_seconds",
                                 std::chrono::duration_cast<std::chrono::seconds>(idle).count()},
                                {"calls", session->calls()}});
            }
            return json_response(200, json{{"sessions", std::move(list)}}.dump());
        }
        constexpr std::string_view kPrefix = "/admin/sessions/";
        if (path.starts_with(kPrefix) && request.method() == bhttp::verb::delete_) {
            const std::string id(path.substr(kPrefix.size()));
            std::shared_ptr<McpSession> session;
            for (auto& open : open_sessions()) {
                if (open->id == id) {
                    session = open;
                }
            }
            if (!session) {
                return text_response(404, "No such session.\n");
            }
            asio::co_spawn(
                ioc_,
                end_session(session, std::string("The operator ended this session while this "
                                                 "call was running, so the call was stopped and "
                                                 "its processes killed; it may have done part of "
                                                 "its work. Start a new session to retry it.")),
                asio::detached);
            return text_response(202, "Ending session " + id + ".\n");
        }
        return text_response(404,
                             "Not found. Operator endpoints: GET /metrics, GET "
                             "/admin/sessions, DELETE /admin/sessions/ID.\n");
    }

    HttpBackend& backend_;
    const HttpOptions options_;
    http::HostRules rules_;
    asio::io_context ioc_;
    asio::thread_pool open_pool_;
    std::optional<asio::ip::tcp::acceptor> tcp_acceptor_;
    std::optional<asio::local::stream_protocol::acceptor> unix_acceptor_;
    std::string endpoint_;
    std::string unix_path_;
    std::atomic<bool> draining_{false};
    std::atomic<std::size_t> connections_{0};
    std::atomic<std::size_t> responding_{0};  // responses being written (SSE or JSON)
    Metrics metrics_;
    std::mutex sessions_mu_;
    std::unordered_map<std::string, std::shared_ptr<SessionSlot>> sessions_;  // by id
    std::map<std::string, TenantState> tenants_;                              // by name
};

HttpServer::HttpServer(HttpBackend& backend, HttpOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))) {}

HttpServer::~HttpServer() = default;

Status HttpServer::listen() {
    return impl_->listen();
}

std::string HttpServer::endpoint() const {
    return impl_->endpoint();
}

bool HttpServer::loopback() const {
    return impl_->loopback();
}

Status HttpServer::run() {
    return impl_->run();
}

void HttpServer::request_stop() {
    impl_->request_stop();
}

}  // namespace stockade::mcp
