#include "runner/mcp/elicitor.h"

#include <algorithm>
#include <chrono>
#include <stop_token>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace stockade::mcp {

namespace {

using nlohmann::json;

// The longest an elicit() waits, whatever its timeout says.
constexpr std::chrono::milliseconds kMaxElicitTimeout = std::chrono::hours(24);
// How long the answers carried in a 2026-07-28 requestState stay valid.
constexpr std::chrono::milliseconds kRequestStateTtl = std::chrono::hours(1);

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

Error elicit_error(Errc code, std::string message) {
    return Error{.code = code, .message = "elicit: " + std::move(message), .sys_errno = 0};
}

Error client_error(const json& error) {
    std::string text = "the client answered elicitation/create with an error";
    if (error.is_object()) {
        if (auto code = error.find("code"); code != error.end() && code->is_number_integer()) {
            text += " " + std::to_string(code->get<std::int64_t>());
        }
        if (auto message = error.find("message"); message != error.end() && message->is_string()) {
            text += ": " + message->get_ref<const std::string&>().substr(0, 200);
        }
    }
    return elicit_error(Errc::kUnavailable, std::move(text));
}

}  // namespace

Elicitor::Elicitor(Outbox& out, std::size_t max_message_bytes, json server_info)
    : out_(out), max_message_bytes_(max_message_bytes), server_info_(std::move(server_info)) {}

Result<ElicitResponse> Elicitor::elicit(Call& call, const ElicitRequest& request) {
    if (call.protocol.modern) {
        return by_input_required(call, request);
    }
    return by_request(call, request);
}

Result<ElicitResponse> Elicitor::by_request(Call& call, const ElicitRequest& request) {
    ASSIGN_OR_RETURN(json params, elicit_params(request, call.protocol.version));
    if (request.timeout <= std::chrono::milliseconds::zero()) {
        return elicit_error(Errc::kInvalidArgument, "the timeout must be positive");
    }
    const std::string id = "stockade-elicit-" + std::to_string(++ids_);
    json schema = params["requestedSchema"];
    std::string line = jsonrpc::dump(
        {{"jsonrpc", "2.0"}, {"id", id}, {"method", kElicitMethod}, {"params", std::move(params)}});
    if (line.size() > max_message_bytes_) {
        return elicit_error(Errc::kInvalidArgument, "the question is over the message size limit");
    }
    const std::stop_token stop = call.stop.get_token();
    auto pending = std::make_shared<Pending>();
    {
        std::lock_guard lock(mu_);
        if (closed_ || stop.stop_requested()) {
            return elicit_error(Errc::kCancelled, "the call was cancelled");
        }
        pending_.emplace(id, pending);
    }
    SPDLOG_LOGGER_INFO(logger(), "mcp elicitation sent call={} request={}",
                       jsonrpc::id_text(call.id), id);
    out_.post(std::move(line), Route{.request = call.key, .last = false});

    const auto deadline =
        std::chrono::steady_clock::now() + std::min(request.timeout, kMaxElicitTimeout);
    bool answered = false;
    bool closed = false;
    json result;
    json error;
    {
        std::unique_lock lock(mu_);
        answered = pending->cv.wait_until(lock, stop, deadline,
                                          [&] { return pending->done || pending->closed; });
        pending_.erase(id);
        closed = pending->closed && !pending->done;
        if (answered && !closed) {
            result = std::move(pending->result);
            error = std::move(pending->error);
        }
    }
    if (closed) {
        return elicit_error(Errc::kCancelled, "the connection closed before the user answered");
    }
    if (!answered) {
        const bool cancelled = stop.stop_requested();
        SPDLOG_LOGGER_INFO(logger(), "mcp elicitation withdrawn call={} request={} why={}",
                           jsonrpc::id_text(call.id), id, cancelled ? "call cancelled" : "timeout");
        // Tells the client to close the question (2025-11-25 cancellation).
        out_.post(jsonrpc::encode_notification(
                      "notifications/cancelled",
                      {{"requestId", id},
                       {"reason", cancelled ? "The tool call was cancelled."
                                            : "The server stopped waiting for an answer."}}),
                  Route{.request = call.key, .last = false});
        if (cancelled) {
            return elicit_error(Errc::kCancelled, "the call was cancelled");
        }
        return elicit_error(
            Errc::kDeadlineExceeded,
            "no answer from the user within " + std::to_string(request.timeout.count()) + " ms");
    }
    if (!error.is_null()) {
        if (!result.is_null()) {
            return elicit_error(Errc::kInvalidArgument,
                                "the client's response has both a result and an error");
        }
        return client_error(error);
    }
    auto response = parse_elicit_result(result, schema);
    if (!response) {
        SPDLOG_LOGGER_WARN(logger(), "mcp elicitation answer rejected call={} why={}",
                           jsonrpc::id_text(call.id), response.error().message);
        return elicit_error(Errc::kInvalidArgument, response.error().message);
    }
    SPDLOG_LOGGER_INFO(logger(), "mcp elicitation answered call={} request={} action={}",
                       jsonrpc::id_text(call.id), id, response->action);
    return response;
}

Result<ElicitResponse> Elicitor::by_input_required(Call& call, const ElicitRequest& request) {
    ASSIGN_OR_RETURN(json params, elicit_params(request, call.protocol.version));
    const std::string key = input_request_key(params);
    const json* answer = nullptr;
    for (const json* answers : {&call.input_responses, &call.carried_answers}) {
        if (answer == nullptr && answers->is_object()) {
            if (auto it = answers->find(key); it != answers->end()) {
                answer = &*it;
            }
        }
    }
    if (answer != nullptr) {
        auto response = parse_elicit_result(*answer, params["requestedSchema"]);
        if (!response) {
            SPDLOG_LOGGER_WARN(logger(), "mcp input response rejected call={} key={} why={}",
                               jsonrpc::id_text(call.id), key, response.error().message);
            return elicit_error(Errc::kInvalidArgument, response.error().message);
        }
        {
            std::lock_guard lock(call.elicit_mu);
            call.used_answers[key] = *answer;
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp input response applied call={} key={} action={}",
                           jsonrpc::id_text(call.id), key, response->action);
        return response;
    }
    json input_request = {{"method", kElicitMethod}, {"params", std::move(params)}};
    if (jsonrpc::dump(input_request).size() > max_message_bytes_ / 2) {
        return elicit_error(Errc::kInvalidArgument, "the question is over the message size limit");
    }
    {
        std::lock_guard lock(call.elicit_mu);
        if (call.input_requests.is_null()) {  // one question per round trip
            call.input_requests = {{key, std::move(input_request)}};
        }
    }
    SPDLOG_LOGGER_INFO(logger(), "mcp input required call={} key={}", jsonrpc::id_text(call.id),
                       key);
    call.stop.request_stop();
    return elicit_error(Errc::kCancelled,
                        "the question goes back to the client in an input_required result; the "
                        "client retries the call with the answer");
}

void Elicitor::deliver(jsonrpc::Response& response) {
    if (!response.id.is_string()) {
        SPDLOG_LOGGER_WARN(logger(), "mcp response with a non-string id dropped id_type={}",
                           response.id.type_name());
        return;
    }
    const auto& id = response.id.get_ref<const std::string&>();
    {
        std::lock_guard lock(mu_);
        if (auto it = pending_.find(id); it != pending_.end() && !it->second->done) {
            it->second->done = true;
            it->second->result = std::move(response.result);
            it->second->error = std::move(response.error);
            it->second->cv.notify_all();
            return;
        }
    }
    SPDLOG_LOGGER_WARN(logger(), "mcp response to no pending request dropped id={}",
                       id.substr(0, 64));
}

Result<json> Elicitor::open_state(std::string_view state, const std::string& tool,
                                  const json& arguments) const {
    return request_state_.open(state, tool, arguments);
}

std::optional<std::string> Elicitor::input_required_reply(Call& call) {
    json input_requests;
    json answers;
    {
        std::lock_guard lock(call.elicit_mu);
        input_requests = std::move(call.input_requests);
        call.input_requests = nullptr;
        answers = call.carried_answers;
        answers.update(call.used_answers);
    }
    if (input_requests.is_null()) {
        return std::nullopt;
    }
    json result = {{"resultType", "input_required"}, {"inputRequests", std::move(input_requests)}};
    if (!answers.empty()) {
        // Earlier answers ride along, sealed, so that a call asking several questions does not
        // ask the first one again.
        result["requestState"] =
            request_state_.seal(call.name, call.arguments, answers, kRequestStateTtl);
    }
    result["_meta"][std::string(kMetaServerInfo)] = server_info_;
    std::string line = jsonrpc::encode_result(call.id, std::move(result));
    if (line.size() > max_message_bytes_) {
        SPDLOG_LOGGER_ERROR(logger(), "mcp input_required over limit bytes={}", line.size());
        line = jsonrpc::encode_error(call.id, jsonrpc::ErrorCode::kInternalError,
                                     "Internal error: the reply exceeded the message limit");
    }
    return line;
}

void Elicitor::close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [id, pending] : pending_) {
        pending->closed = true;
        pending->cv.notify_all();
    }
}

}  // namespace stockade::mcp
