#include "runner/mcp/connection.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "runner/mcp/call.h"
#include "runner/mcp/call_pool.h"
#include "runner/mcp/elicitation.h"
#include "runner/mcp/elicitor.h"
#include "runner/mcp/protocol.h"

namespace stockade::mcp {

namespace {

using jsonrpc::ErrorCode;
using nlohmann::json;

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

// MCP Implementation: the title only from 2025-06-18 on, which added it.
json server_info(const ServerOptions& options, std::string_view version) {
    json info = {{"name", options.name}, {"version", options.version}};
    if (!options.title.empty() && revision_features(version).titles) {
        info["title"] = options.title;
    }
    return info;
}

json server_capabilities() {
    return {{"tools", {{"listChanged", false}}}};
}

json text_result(std::string text, bool is_error) {
    return {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})},
            {"isError", is_error}};
}

// CallToolResult. The host's metadata goes out as the result's _meta. Structured content, when
// the host gives one, goes out as structuredContent (from 2025-06-18 on, which added it) and,
// when the text is empty, also as serialized JSON in the text block (the spec's
// backwards-compatibility advice, and all that an earlier revision's client gets).
json call_result_json(ToolCallResult result, const RequestProtocol& protocol) {
    const bool has_structured =
        protocol.modern ? !result.structured.is_null() : result.structured.is_object();
    if (result.text.empty() && has_structured) {
        result.text = jsonrpc::dump(result.structured);
    }
    json out = text_result(std::move(result.text), result.is_error);
    if (has_structured && revision_features(protocol.version).structured_content) {
        out["structuredContent"] = std::move(result.structured);
    }
    if (result.meta.is_object() && !result.meta.empty()) {
        out["_meta"] = std::move(result.meta);
    }
    return out;
}

std::vector<std::string> tool_names(const std::vector<ToolInfo>& tools) {
    std::vector<std::string> names;
    names.reserve(tools.size());
    for (const auto& tool : tools) {
        names.push_back(tool.name);
    }
    return names;
}

// Unknown tool: a protocol error (-32602) per the MCP tools spec, naming what exists.
std::string unknown_tool_error(const json& id, const std::string& name,
                               const std::vector<std::string>& known) {
    std::string list;
    for (const auto& tool : known) {
        list += list.empty() ? tool : ", " + tool;
    }
    return jsonrpc::encode_error(id, ErrorCode::kInvalidParams,
                                 "Unknown tool: \"" + name + "\". Known tools: " + list + ".",
                                 {{"knownTools", known}});
}

}  // namespace

// One connection, in the order a message travels: the front end delivers each message;
// requests are dispatched at once, tools/call are run by the call pool; replies go out through
// the outbox; questions to the user go through the elicitor.
class Connection::Impl {
public:
    Impl(ToolHost& host, const ServerOptions& options, Outbox& out)
        : host_(host),
          options_(options),
          context_(options.log_context.empty() ? std::string() : " " + options.log_context),
          out_(out),
          elicitor_(out_, options.max_message_bytes, server_info(options, kProtocol20260728)),
          pool_(CallPoolLimits{.threads = options.max_concurrent_calls,
                               .max_calls = options.max_pending_calls,
                               .max_bytes = options.max_pending_bytes}) {}

public:
    void reject_oversized() {
        SPDLOG_LOGGER_WARN(logger(), "mcp message over limit discarded limit_bytes={}",
                           options_.max_message_bytes);
        reply(nullptr, jsonrpc::encode_error(nullptr, ErrorCode::kInvalidRequest,
                                             "message exceeds the " +
                                                 std::to_string(options_.max_message_bytes) +
                                                 "-byte limit and was discarded"));
    }

    void deliver(std::string_view text) {
        if (text.find_first_not_of(" \t\r") == std::string_view::npos) {
            return;
        }
        auto decoded = jsonrpc::decode(text);
        if (auto* failure = std::get_if<jsonrpc::DecodeFailure>(&decoded)) {
            SPDLOG_LOGGER_DEBUG(logger(), "mcp message rejected code={} reason={}",
                                static_cast<int>(failure->code), failure->message);
            reply(failure->id, jsonrpc::encode_error(failure->id, failure->code, failure->message));
            return;
        }
        deliver(std::get<jsonrpc::Message>(decoded), text.size());
    }

    void deliver(jsonrpc::Message& message, std::size_t bytes) {
        if (closing_) {
            return;
        }
        if (auto* request = std::get_if<jsonrpc::Request>(&message)) {
            try {
                handle_request(*request, bytes);
            } catch (const std::exception& e) {
                SPDLOG_LOGGER_ERROR(logger(), "mcp request failed method={} what={}",
                                    request->method, e.what());
                send_error(request->id, ErrorCode::kInternalError, "Internal error");
            }
        } else if (auto* notification = std::get_if<jsonrpc::Notification>(&message)) {
            try {
                handle_notification(*notification);
            } catch (const std::exception& e) {
                SPDLOG_LOGGER_ERROR(logger(), "mcp notification failed method={} what={}",
                                    notification->method, e.what());
            }
        } else {
            // A response is never answered: the client's answer to one of our questions.
            elicitor_.deliver(std::get<jsonrpc::Response>(message));
        }
    }

    [[nodiscard]] std::size_t calls() const { return pool_.size(); }

    // `answer`: the message of the error that answers each call stopped, or nullopt for none.
    void shutdown(std::optional<std::string> answer) {
        {
            std::lock_guard lock(shutdown_mu_);
            if (closing_) {
                return;
            }
            shutdown_answer_ = std::move(answer);
            closing_ = true;
        }
        elicitor_.close();  // legacy questions fail at once: nobody is left to answer them
        if (const std::size_t cancelled = pool_.shutdown(); cancelled > 0) {
            SPDLOG_LOGGER_INFO(logger(), "mcp shutdown cancelled calls count={}", cancelled);
        }
    }

private:
    // ---- dispatch ----------------------------------------------------------------------------

    // `bytes`: the size of the request as it arrived, for the bound on what waits in memory.
    void handle_request(jsonrpc::Request& request, std::size_t bytes) {
        const std::string& method = request.method;
        SPDLOG_LOGGER_DEBUG(logger(), "mcp request method={} id={}", method,
                            jsonrpc::id_text(request.id));
        if (!request.params.is_null() && !request.params.is_object()) {
            send_error(request.id, ErrorCode::kInvalidParams, "params must be an object");
            return;
        }
        auto resolved = resolve_protocol(request.params, session_);
        if (auto* error = std::get_if<ProtocolError>(&resolved)) {
            reply(request.id,
                  jsonrpc::encode_error(request.id, error->code, error->message, error->data));
            return;
        }
        auto& protocol = std::get<RequestProtocol>(resolved);
        if (method == "initialize") {
            if (protocol.stateless && protocol.modern) {
                // A request that declares 2026-07-28 in its own _meta is served under it, and
                // that revision has no handshake: the method does not exist there.
                send_error(request.id, ErrorCode::kMethodNotFound,
                           "Method not found: initialize (protocol " + protocol.version +
                               " has no handshake; call server/discover, or send initialize "
                               "without the per-request _meta for a 2025 revision)");
                return;
            }
            handle_initialize(request);
            return;
        }
        if (method == "tools/call") {
            handle_call(request, std::move(protocol), bytes);
        } else if (method == "tools/list") {
            handle_list(request, protocol);
        } else if (method == "server/discover") {
            handle_discover(request, protocol);
        } else if (method == "ping" && !protocol.modern) {
            send_result(request.id, json::object(), protocol);
        } else {
            // ping is gone from 2026-07-28 (SEP-2575), like every method we do not implement.
            send_error(request.id, ErrorCode::kMethodNotFound, "Method not found: " + method);
        }
    }

    void handle_initialize(const jsonrpc::Request& request) {
        const json& params = request.params;
        auto version = params.is_object() ? params.find("protocolVersion") : json::const_iterator();
        if (!params.is_object() || version == params.end() || !version->is_string()) {
            send_error(request.id, ErrorCode::kInvalidParams,
                       "initialize needs params.protocolVersion (a string)");
            return;
        }
        const auto& requested = version->get_ref<const std::string&>();
        if (session_.initialized) {
            SPDLOG_LOGGER_WARN(logger(), "mcp initialize repeated; renegotiating");
        }
        session_.initialized = true;
        session_.version = negotiate_initialize_version(requested);
        session_.client_info = params.value("clientInfo", json(nullptr));
        session_.client_capabilities = params.value("capabilities", json::object());
        if (!session_.client_capabilities.is_object()) {
            session_.client_capabilities = json::object();
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp initialize client={} requested={} negotiated={}",
                           jsonrpc::dump(session_.client_info), requested, session_.version);
        json result = {{"protocolVersion", session_.version},
                       {"capabilities", server_capabilities()},
                       {"serverInfo", server_info(options_, session_.version)}};
        if (!options_.instructions.empty()) {
            result["instructions"] = options_.instructions;
        }
        if (std::string log_id = host_.event_log_id(); !log_id.empty()) {
            result["_meta"][std::string(kMetaSessionKey)] = {{"event_log_id", std::move(log_id)}};
        }
        reply(request.id, jsonrpc::encode_result(request.id, std::move(result)));
    }

    void handle_discover(const jsonrpc::Request& request, const RequestProtocol& protocol) {
        if (!protocol.stateless) {
            send_error(request.id, ErrorCode::kInvalidParams,
                       "server/discover needs params._meta with \"" +
                           std::string(kMetaProtocolVersion) + "\" and \"" +
                           std::string(kMetaClientCapabilities) + "\"");
            return;
        }
        json versions = json::array();
        for (auto v : supported_versions()) {
            versions.push_back(std::string(v));
        }
        json result = {{"supportedVersions", std::move(versions)},
                       {"capabilities", server_capabilities()},
                       {"serverInfo", server_info(options_, kProtocol20260728)},
                       {"ttlMs", options_.cache_ttl.count()},
                       {"cacheScope", "private"}};
        if (!options_.instructions.empty()) {
            result["instructions"] = options_.instructions;
        }
        RequestProtocol as_modern = protocol;
        as_modern.modern = true;  // a 2026-07-28 method: always the modern result shape
        send_result(request.id, std::move(result), as_modern);
    }

    void handle_list(const jsonrpc::Request& request, const RequestProtocol& protocol) {
        if (request.params.is_object()) {
            if (auto cursor = request.params.find("cursor");
                cursor != request.params.end() && !cursor->is_null()) {
                send_error(request.id, ErrorCode::kInvalidParams,
                           "Invalid cursor: tools/list returns every tool in one page");
                return;
            }
        }
        auto tools = list_tools(request.id);
        if (!tools) {
            return;
        }
        json entries = json::array();
        for (const auto& tool : *tools) {
            entries.push_back(tool_json(tool, protocol.version));
        }
        json result = {{"tools", std::move(entries)}};
        if (protocol.modern) {
            result["ttlMs"] = options_.cache_ttl.count();
            result["cacheScope"] = "private";
        }
        send_result(request.id, std::move(result), protocol);
    }

    void handle_call(const jsonrpc::Request& request, RequestProtocol protocol, std::size_t bytes) {
        const json& params = request.params;
        auto name = params.is_object() ? params.find("name") : json::const_iterator();
        if (!params.is_object() || name == params.end() || !name->is_string()) {
            send_error(request.id, ErrorCode::kInvalidParams,
                       "tools/call needs params.name (a string)");
            return;
        }
        json arguments = json::object();
        if (auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
            if (!args->is_object()) {
                send_error(request.id, ErrorCode::kInvalidParams,
                           "tools/call params.arguments must be an object");
                return;
            }
            arguments = *args;
        }
        const auto& tool_name = name->get_ref<const std::string&>();
        json input_responses;
        json carried_answers = json::object();
        if (protocol.modern) {
            // Multi round-trip requests: the answers to an earlier input_required result.
            if (auto r = params.find("inputResponses"); r != params.end() && !r->is_null()) {
                if (!r->is_object()) {
                    send_error(request.id, ErrorCode::kInvalidParams,
                               "tools/call params.inputResponses must be an object");
                    return;
                }
                input_responses = *r;
            }
            if (auto st = params.find("requestState"); st != params.end() && !st->is_null()) {
                if (!st->is_string()) {
                    send_error(request.id, ErrorCode::kInvalidParams,
                               "tools/call params.requestState must be a string");
                    return;
                }
                auto answers =
                    elicitor_.open_state(st->get_ref<const std::string&>(), tool_name, arguments);
                if (!answers) {
                    SPDLOG_LOGGER_WARN(logger(), "mcp requestState rejected call={} why={}",
                                       jsonrpc::id_text(request.id), answers.error().message);
                    send_error(request.id, ErrorCode::kInvalidParams,
                               "Invalid requestState: " + answers.error().message);
                    return;
                }
                carried_answers = std::move(*answers);
            }
        }
        // Whether the tool exists is the host's to say, once, when it runs the call.
        auto call = std::make_shared<Call>();
        call->id = request.id;
        call->key = jsonrpc::id_key(request.id);
        call->name = tool_name;
        call->arguments = std::move(arguments);
        call->protocol = std::move(protocol);
        call->input_responses = std::move(input_responses);
        call->carried_answers = std::move(carried_answers);
        call->bytes = bytes;
        const auto submitted = pool_.submit(
            call, [this](const std::shared_ptr<Call>& admitted) { run_and_reply(admitted); });
        switch (submitted.admission) {
            case CallPool::Admission::kAdmitted:
                return;
            case CallPool::Admission::kDuplicateId:
                send_error(request.id, ErrorCode::kInvalidRequest,
                           "request id " + call->key + " is already used by a call in progress");
                return;
            case CallPool::Admission::kFull:
                SPDLOG_LOGGER_WARN(logger(),
                                   "mcp call refused: pool full call={} pending={} bytes={}",
                                   jsonrpc::id_text(request.id), submitted.calls, submitted.bytes);
                reply(request.id,
                      call_result_line(
                          *call,
                          ToolCallResult{
                              .text = "Stockade already has " + std::to_string(submitted.calls) +
                                      " tool calls running or waiting (" +
                                      std::to_string(submitted.bytes >> 20) +
                                      " MiB of arguments). Wait for some of them to finish, "
                                      "then retry this call.",
                              .is_error = true,
                              .meta = nullptr,
                              .structured = nullptr,
                              .unknown_tool = false}));
                return;
            case CallPool::Admission::kClosed:
                SPDLOG_LOGGER_INFO(logger(), "mcp call after shutdown dropped call={}",
                                   jsonrpc::id_text(request.id));
                if (auto answer = shutdown_answer()) {
                    send_error(request.id, ErrorCode::kInternalError, *answer);
                } else {
                    end_without_reply(call->key);
                }
                return;
        }
    }

    void handle_notification(const jsonrpc::Notification& notification) {
        const std::string& method = notification.method;
        if (method == "notifications/cancelled") {
            const json& params = notification.params;
            auto id = params.is_object() ? params.find("requestId") : json::const_iterator();
            if (!params.is_object() || id == params.end() || !jsonrpc::is_valid_id(*id)) {
                SPDLOG_LOGGER_DEBUG(logger(), "mcp malformed cancellation ignored");
                return;
            }
            auto reason = params.find("reason");
            cancel(*id, reason != params.end() && reason->is_string() ? reason->get<std::string>()
                                                                      : std::string());
        } else if (method == "notifications/initialized") {
            SPDLOG_LOGGER_DEBUG(logger(), "mcp client initialized");
        } else {
            SPDLOG_LOGGER_DEBUG(logger(), "mcp notification ignored method={}", method);
        }
    }

    void cancel(const json& id, const std::string& reason) {
        const std::shared_ptr<Call> call = pool_.find(jsonrpc::id_key(id));
        if (call == nullptr) {
            // Unknown or already answered: the spec lets us ignore it.
            SPDLOG_LOGGER_DEBUG(logger(), "mcp cancellation for no call in progress id={}",
                                jsonrpc::id_text(id));
            return;
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp call cancelled call={} tool={}{} reason=\"{}\"",
                           jsonrpc::id_text(id), call->name, context_, reason);
        call->cancelled_by_client = true;
        call->stop.request_stop();
    }

    std::optional<std::vector<ToolInfo>> list_tools(const json& id) {
        try {
            return host_.list_tools();
        } catch (const std::exception& e) {
            SPDLOG_LOGGER_ERROR(logger(), "tool host list_tools failed: {}", e.what());
            send_error(id, ErrorCode::kInternalError, "Internal error: listing the tools failed");
            return std::nullopt;
        }
    }

    // ---- calls ------------------------------------------------------------------------------

    // Runs a call on a pool thread, then gives its slot back before the reply leaves: a client
    // that has the reply may reuse the id, and the bytes, at once.
    void run_and_reply(const std::shared_ptr<Call>& call) {
        std::optional<std::string> reply = run_call(call);
        pool_.release(*call);
        if (reply) {
            this->reply(call->id, std::move(*reply));
        } else {
            end_without_reply(call->key);
        }
    }

    // The reply to a call: its result, an error, or nothing (cancelled: the MCP receiver
    // SHOULD NOT respond to a cancelled request).
    std::optional<std::string> run_call(const std::shared_ptr<Call>& shared_call) {
        Call& call = *shared_call;
        const std::string request_id = jsonrpc::id_text(call.id);
        if (call.stop.stop_requested()) {
            SPDLOG_LOGGER_INFO(logger(), "mcp call dropped before start call={} tool={}{}",
                               request_id, call.name, context_);
            return stopped_reply(call);
        }
        CallInfo info{
            .request_id = request_id,
            .stop = call.stop.get_token(),
            .progress =
                [this, shared_call](double done, std::optional<double> total, std::string message) {
                    report_progress(*shared_call, done, total, std::move(message));
                },
            .protocol_version = call.protocol.version,
            .client_info = call.protocol.client_info,
            .client_capabilities = call.protocol.client_capabilities,
            .elicit = revision_features(call.protocol.version).elicitation &&
                              supports_form_elicitation(call.protocol.client_capabilities)
                          ? ElicitFn([this, shared_call](const ElicitRequest& request) {
                                return elicitor_.elicit(*shared_call, request);
                            })
                          : ElicitFn()};
        SPDLOG_LOGGER_INFO(logger(), "mcp call start call={} tool={}{}", request_id, call.name,
                           context_);
        const auto start = std::chrono::steady_clock::now();
        std::optional<ToolCallResult> result;
        try {
            result = host_.call_tool(call.name, call.arguments, info);
        } catch (const std::exception& e) {
            SPDLOG_LOGGER_ERROR(logger(), "mcp call threw call={} tool={} what={}", request_id,
                                call.name, e.what());
        } catch (...) {
            SPDLOG_LOGGER_ERROR(logger(), "mcp call threw call={} tool={}", request_id, call.name);
        }
        {
            std::lock_guard lock(call.progress_mu);
            call.finished = true;
        }
        const auto dur_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
        if (call.stop.stop_requested()) {
            if (!call.cancelled_by_client && !closing_) {
                if (auto reply = elicitor_.input_required_reply(call)) {
                    SPDLOG_LOGGER_INFO(logger(),
                                       "mcp call end call={} tool={} input_required dur_ms={}{}",
                                       request_id, call.name, dur_ms, context_);
                    return reply;
                }
            }
            std::optional<std::string> reply = stopped_reply(call);
            SPDLOG_LOGGER_INFO(logger(), "mcp call end call={} tool={} {} dur_ms={}{}", request_id,
                               call.name, reply ? "stopped by shutdown" : "cancelled", dur_ms,
                               context_);
            return reply;
        }
        if (!result) {
            return jsonrpc::encode_error(
                call.id, ErrorCode::kInternalError,
                "Internal error: tool \"" + call.name + "\" failed unexpectedly");
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp call end call={} tool={} is_error={} dur_ms={}{}",
                           request_id, call.name, result->is_error, dur_ms, context_);
        if (result->unknown_tool) {
            // The names are listed for the error alone: a call that runs never lists them.
            std::vector<std::string> known;
            try {
                known = tool_names(host_.list_tools());
            } catch (const std::exception& e) {
                SPDLOG_LOGGER_ERROR(logger(), "tool host list_tools failed: {}", e.what());
            }
            return unknown_tool_error(call.id, call.name, known);
        }
        return call_result_line(call, std::move(*result));
    }

    // The reply to a call stopped before its end: none when the client cancelled it or went
    // away, the shutdown's error when the server stopped it (shutdown_answering()).
    std::optional<std::string> stopped_reply(const Call& call) {
        if (call.cancelled_by_client || !closing_) {
            return std::nullopt;
        }
        std::optional<std::string> answer = shutdown_answer();
        if (!answer) {
            return std::nullopt;
        }
        return jsonrpc::encode_error(call.id, ErrorCode::kInternalError, *answer);
    }

    std::optional<std::string> shutdown_answer() {
        std::lock_guard lock(shutdown_mu_);
        return shutdown_answer_;
    }

    std::string call_result_line(const Call& call, ToolCallResult result) {
        json body = call_result_json(std::move(result), call.protocol);
        std::string line =
            jsonrpc::encode_result(call.id, decorate(std::move(body), call.protocol));
        if (line.size() > options_.max_message_bytes) {
            SPDLOG_LOGGER_WARN(logger(), "mcp call result over limit call={} bytes={}",
                               jsonrpc::id_text(call.id), line.size());
            json replaced = text_result(
                "The result of this call was " + std::to_string(line.size()) + " bytes, over the " +
                    std::to_string(options_.max_message_bytes) +
                    "-byte message limit, and was dropped. Ask for less output (a narrower "
                    "range, a more specific pattern) and retry.",
                true);
            line = jsonrpc::encode_result(call.id, decorate(std::move(replaced), call.protocol));
        }
        return line;
    }

    void report_progress(Call& call, double done, std::optional<double> total,
                         std::string message) {
        if (call.protocol.progress_token.is_null() || !std::isfinite(done)) {
            return;
        }
        std::lock_guard lock(call.progress_mu);
        if (call.finished || call.stop.stop_requested() ||
            (call.last_progress.has_value() && done <= *call.last_progress)) {
            return;
        }
        call.last_progress = done;
        json params = {{"progressToken", call.protocol.progress_token}, {"progress", done}};
        if (total.has_value() && std::isfinite(*total)) {
            params["total"] = *total;
        }
        if (!message.empty() && revision_features(call.protocol.version).progress_message) {
            params["message"] = std::move(message);
        }
        // Written under progress_mu so that notifications leave in the order of their values
        // and never after the response (which is sent once `finished` is set).
        out_.post(jsonrpc::encode_notification("notifications/progress", std::move(params)),
                  Route{.request = call.key, .last = false});
    }

    // ---- output ------------------------------------------------------------------------------

    // 2026-07-28 results carry resultType and the server's identity in _meta.
    json decorate(json result, const RequestProtocol& protocol) const {
        if (protocol.modern) {
            result["resultType"] = "complete";
            result["_meta"][std::string(kMetaServerInfo)] = server_info(options_, protocol.version);
        }
        return result;
    }

    void send_result(const json& id, json result, const RequestProtocol& protocol) {
        std::string line = jsonrpc::encode_result(id, decorate(std::move(result), protocol));
        if (line.size() > options_.max_message_bytes) {
            SPDLOG_LOGGER_ERROR(logger(), "mcp reply over limit bytes={}", line.size());
            line = jsonrpc::encode_error(id, ErrorCode::kInternalError,
                                         "Internal error: the reply exceeded the message limit");
        }
        reply(id, std::move(line));
    }

    void send_error(const json& id, ErrorCode code, const std::string& message) {
        reply(id, jsonrpc::encode_error(id, code, message));
    }

    // The response to request `id` (null: to a message whose id could not be read).
    void reply(const json& id, std::string message) {
        out_.post(
            std::move(message),
            Route{.request = id.is_null() ? std::string() : jsonrpc::id_key(id), .last = true});
    }

    // A request that gets no response (a cancelled call) is over.
    void end_without_reply(const std::string& key) {
        out_.post(std::string(), Route{.request = key, .last = true});
    }

    ToolHost& host_;
    const ServerOptions& options_;
    const std::string context_;                   // " " + options_.log_context, or empty
    LegacySession session_;                       // Thread: the one delivering
    std::atomic<bool> closing_{false};            // shutdown() began: later messages are ignored
    std::mutex shutdown_mu_;                      // orders the first shutdown() and its answer
    std::optional<std::string> shutdown_answer_;  // guarded by shutdown_mu_
    Outbox& out_;
    Elicitor elicitor_;
    CallPool pool_;  // last: its threads stop before the rest goes
};

Connection::Connection(ToolHost& host, const ServerOptions& options, Outbox& out)
    : impl_(std::make_unique<Impl>(host, options, out)) {}

Connection::~Connection() {
    impl_->shutdown(std::nullopt);
}

void Connection::deliver(std::string_view text) {
    impl_->deliver(text);
}

void Connection::deliver(jsonrpc::Message message, std::size_t bytes) {
    impl_->deliver(message, bytes);
}

void Connection::reject_oversized() {
    impl_->reject_oversized();
}

std::size_t Connection::calls() const {
    return impl_->calls();
}

void Connection::shutdown() {
    impl_->shutdown(std::nullopt);
}

void Connection::shutdown_answering(std::string message) {
    impl_->shutdown(std::move(message));
}

}  // namespace stockade::mcp
