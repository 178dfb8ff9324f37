#include "runner/mcp/http_sessions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "runner/mcp/http_rules.h"
#include "runner/mcp/protocol.h"

namespace stockade::mcp {

namespace {

using nlohmann::json;

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

StreamBounds stream_bounds(const HttpOptions& options) {
    return {.max_stream_bytes = options.max_stream_bytes,
            .replay_bytes = options.replay_bytes,
            .replay_events = options.replay_events};
}

}  // namespace

// ---- a session --------------------------------------------------------------------------------

McpSession::McpSession(std::string session_id, const HttpTenant& owner, const HttpOptions& options,
                       Metrics& metrics)
    : id(std::move(session_id)),
      tenant(owner),
      metrics_(metrics),
      mcp_options_(options.mcp),
      streams_(stream_bounds(options)),
      version_(kProtocol20251125) {
    mcp_options_.max_concurrent_calls = std::max<std::size_t>(1, owner.max_calls);
    mcp_options_.log_context = fmt::format("tenant={} session={}", owner.name, short_id());
}

void McpSession::start(std::unique_ptr<ToolHost> tool_host) {
    host_ = std::move(tool_host);
    event_log_id_ = host_->event_log_id();
    connection_ = std::make_unique<Connection>(*host_, mcp_options_, *this);
}

Result<nlohmann::json> McpSession::rewind(const nlohmann::json& request) {
    std::lock_guard host_lock(host_mu_);
    if (ended_ || !host_) {
        return Error{Errc::kUnavailable, "the session has ended: rewind it with stockade rewind"};
    }
    return host_->rewind(request);
}

void McpSession::end(const std::optional<std::string>& answer) {
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
    std::function<std::string(const std::string&)> answer_for;
    if (answer) {
        answer_for = [&answer](const std::string& key) {
            json request_id = json::parse(key, nullptr, false);
            return jsonrpc::encode_error(
                jsonrpc::is_valid_id(request_id) ? request_id : json(nullptr),
                jsonrpc::ErrorCode::kInternalError, *answer);
        };
    }
    for (const auto& call : streams_.close(answer_for)) {
        metrics_.call(tenant.name, call.tool, call.outcome, call.seconds);
    }
    connection_.reset();
    {
        std::lock_guard host_lock(host_mu_);
        host_.reset();
    }
    SPDLOG_LOGGER_INFO(logger(), "http session ended tenant={} session={}", tenant.name,
                       short_id());
}

std::string McpSession::version() {
    std::lock_guard lock(version_mu_);
    return version_;
}

void McpSession::negotiated(std::string version) {
    std::lock_guard lock(version_mu_);
    version_ = std::move(version);
}

void McpSession::deliver(jsonrpc::Message message, std::size_t bytes) {
    std::lock_guard lock(deliver_mu_);
    touch();
    if (connection_ && !ended_) {
        if (const auto* request = std::get_if<jsonrpc::Request>(&message);
            request != nullptr && request->method == "tools/call") {
            calls_made_.fetch_add(1);
        }
        connection_->deliver(std::move(message), bytes);
    }
}

std::shared_ptr<EventStream> McpSession::open_standalone(Wake wake) {
    return streams_.open_standalone(revision_features(version()).sse_priming, ended_,
                                    std::move(wake));
}

void McpSession::post(std::string message, const Route& route) {
    if (route.last) {
        touch();  // idle counts from a request's end as well as from its start
    }
    const auto posted = streams_.post(message, route.request, route.last);
    if (posted.finished) {
        metrics_.call(tenant.name, posted.finished->tool, posted.finished->outcome,
                      posted.finished->seconds);
    }
    if (posted.dropped) {
        SPDLOG_LOGGER_DEBUG(logger(), "http message for no open stream dropped session={}",
                            short_id());
    }
}

// ---- the table --------------------------------------------------------------------------------

std::shared_ptr<McpSession> SessionTable::find(std::string_view id, const HttpTenant& tenant) {
    if (!http::is_session_id(id)) {
        return nullptr;
    }
    std::lock_guard lock(mu_);
    auto it = sessions_.find(std::string(id));
    if (it == sessions_.end() || !it->second->ready || it->second->session == nullptr ||
        &it->second->session->tenant != &tenant) {
        return nullptr;  // another tenant's session is not found either
    }
    return it->second->session;
}

SessionTable::Reserved SessionTable::reserve(const HttpTenant& tenant, bool shared) {
    std::lock_guard lock(mu_);
    TenantState& state = tenants_[tenant.name];
    if (shared && state.shared) {
        return {.slot = state.shared, .opener = false, .open = state.sessions};
    }
    if (state.sessions >= tenant.max_sessions) {
        return {.slot = nullptr, .opener = false, .open = state.sessions};
    }
    auto slot = std::make_shared<SessionSlot>();
    slot->session =
        std::make_shared<McpSession>(http::new_session_id(), tenant, options_, metrics_);
    ++state.sessions;
    sessions_.emplace(slot->session->id, slot);
    if (shared) {
        state.shared = slot;
    }
    return {.slot = slot, .opener = true, .open = state.sessions};
}

void SessionTable::opened(SessionSlot& slot, const Status& status) {
    std::lock_guard lock(mu_);
    slot.ready = true;
    if (!status) {
        slot.error = status.error().message;
        const Errc code = status.error().code;
        slot.status = code == Errc::kInvalidArgument || code == Errc::kNotFound ? 400
                      : code == Errc::kResourceExhausted                        ? 429
                                                                                : 503;
        forget_locked(*slot.session);
    }
    for (auto& wake : slot.waiters) {
        wake();
    }
    slot.waiters.clear();
}

bool SessionTable::ready_or_wait(SessionSlot& slot, Wake wake) {
    std::lock_guard lock(mu_);
    if (slot.ready) {
        return true;
    }
    slot.waiters.push_back(std::move(wake));
    return false;
}

void SessionTable::forget(const McpSession& session) {
    std::lock_guard lock(mu_);
    forget_locked(session);
}

// Guarded by mu_.
void SessionTable::forget_locked(const McpSession& session) {
    if (sessions_.erase(session.id) == 0) {
        return;
    }
    TenantState& state = tenants_[session.tenant.name];
    --state.sessions;
    if (state.shared && state.shared->session.get() == &session) {
        state.shared.reset();
    }
}

std::vector<std::shared_ptr<McpSession>> SessionTable::open_sessions() {
    std::vector<std::shared_ptr<McpSession>> out;
    std::lock_guard lock(mu_);
    for (const auto& [id, slot] : sessions_) {
        if (slot->ready && slot->session) {
            out.push_back(slot->session);
        }
    }
    return out;
}

std::shared_ptr<McpSession> SessionTable::find_any(std::string_view id) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(std::string(id));
    if (it == sessions_.end() || !it->second->ready) {
        return nullptr;
    }
    return it->second->session;
}

std::optional<long> SessionTable::take_call_token(const HttpTenant& tenant, Clock::time_point now) {
    if (tenant.calls_per_second <= 0) {
        return std::nullopt;
    }
    std::lock_guard lock(mu_);
    TenantState& state = tenants_[tenant.name];
    const double burst = std::max(1.0, tenant.calls_per_second);
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
    return std::max(1L,
                    static_cast<long>(std::ceil((1.0 - state.tokens) / tenant.calls_per_second)));
}

std::vector<SessionTable::Due> SessionTable::due(Clock::time_point now) {
    std::vector<Due> out;
    for (auto& session : open_sessions()) {
        const auto idle = now - session->last_used_at();
        const bool expired = now - session->created > session->tenant.max_lifetime;
        if (expired || (idle > session->tenant.idle_ttl && session->calls() == 0)) {
            out.push_back({.session = session, .expired = expired});
        }
    }
    return out;
}

std::map<std::string, TenantGauges> SessionTable::gauges() {
    std::map<std::string, TenantGauges> out;
    {
        std::lock_guard lock(mu_);
        for (const auto& [name, state] : tenants_) {
            out[name].sessions = state.sessions;
        }
    }
    for (auto& session : open_sessions()) {
        out[session->tenant.name].calls += session->calls();
    }
    return out;
}

}  // namespace stockade::mcp
