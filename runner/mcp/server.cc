#include "runner/mcp/server.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "runner/mcp/elicitation.h"
#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/line_framer.h"
#include "runner/mcp/protocol.h"

namespace stockade::mcp {

namespace {

using jsonrpc::ErrorCode;
using nlohmann::json;

constexpr std::size_t kReadChunk = std::size_t{64} << 10;
// The longest an elicit() waits, whatever its timeout says.
constexpr std::chrono::milliseconds kMaxElicitTimeout = std::chrono::hours(24);
// How long the answers carried in a 2026-07-28 requestState stay valid.
constexpr std::chrono::milliseconds kRequestStateTtl = std::chrono::hours(1);

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

json server_info(const ServerOptions& options) {
    json info = {{"name", options.name}, {"version", options.version}};
    if (!options.title.empty()) {
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
// the host gives one, goes out as structuredContent and, when the text is empty, also as
// serialized JSON in the text block (the spec's backwards-compatibility advice).
json call_result_json(ToolCallResult result, bool modern) {
    const bool has_structured =
        modern ? !result.structured.is_null() : result.structured.is_object();
    if (result.text.empty() && has_structured) {
        result.text = jsonrpc::dump(result.structured);
    }
    json out = text_result(std::move(result.text), result.is_error);
    if (has_structured) {
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

// Makes the stop eventfd readable. Async-signal-safe. A failed write means the counter is
// already non-zero (EAGAIN) or the fd is gone: stop is then already signalled or impossible.
void signal_stop(int fd) noexcept {
    const std::uint64_t one = 1;
    if (::write(fd, &one, sizeof one) != static_cast<ssize_t>(sizeof one)) {
        return;
    }
}

// Blocks SIGPIPE in the calling thread for one write to a pipe, so that a closed reader is an
// EPIPE and not a signal, and restores the mask after, first taking off the queue a SIGPIPE the
// write left pending. Scoped to the write: threads that run tools keep their mask, and so do
// the processes they spawn.
class ScopedSigpipeBlock {
public:
    ScopedSigpipeBlock() {
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGPIPE);
        active_ = pthread_sigmask(SIG_BLOCK, &block, &old_) == 0;
    }
    ~ScopedSigpipeBlock() {
        if (!active_) {
            return;
        }
        if (sigismember(&old_, SIGPIPE) == 0) {
            sigset_t pending;
            if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
                sigset_t pipe_only;
                sigemptyset(&pipe_only);
                sigaddset(&pipe_only, SIGPIPE);
                const timespec zero{};
                (void)sigtimedwait(&pipe_only, nullptr, &zero);
            }
        }
        (void)pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
    ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;
    ScopedSigpipeBlock(ScopedSigpipeBlock&&) = delete;
    ScopedSigpipeBlock& operator=(ScopedSigpipeBlock&&) = delete;

private:
    sigset_t old_{};
    bool active_ = false;
};

}  // namespace

// One connection: the reader (the thread in run()), the writer lock, and the call pool.
class McpServer::Connection {
public:
    Connection(ToolHost& host, const ServerOptions& options, int out_fd, int stop_fd)
        : host_(host), options_(options), out_fd_(out_fd), stop_fd_(stop_fd) {
        struct stat st {};
        out_is_socket_ = ::fstat(out_fd_, &st) == 0 && S_ISSOCK(st.st_mode);
    }

    Status serve(int in_fd) {
        const std::size_t workers = std::max<std::size_t>(1, options_.max_concurrent_calls);
        workers_.reserve(workers);
        for (std::size_t i = 0; i < workers; ++i) {
            workers_.emplace_back([this] { worker_loop(); });
        }
        Status status = ok_status();
        try {
            status = read_loop(in_fd);
        } catch (const std::exception& e) {
            status = Error{.code = Errc::kInternal,
                           .message = std::string("mcp server: ") + e.what(),
                           .sys_errno = 0};
        }
        shutdown();
        return status;
    }

private:
    // A tools/call from arrival to its response. Thread: created by the reader; run by one
    // worker; `stop` is also requested by the reader (cancel, EOF).
    struct Call {
        json id;
        std::string key;  // jsonrpc::id_key(id)
        std::string name;
        json arguments;
        std::size_t bytes = 0;  // the request's size as it arrived (pending_bytes_)
        RequestProtocol protocol;
        std::vector<std::string> known_tools;  // the names `name` was checked against
        std::stop_source stop;
        std::mutex progress_mu;
        std::optional<double> last_progress;           // guarded by progress_mu
        bool finished = false;                         // guarded by progress_mu
        std::atomic<bool> cancelled_by_client{false};  // notifications/cancelled, not EOF
        // 2026-07-28 multi round-trip requests (set by the reader before the call is queued).
        json input_responses;                   // params.inputResponses: an object, or null
        json carried_answers = json::object();  // from a verified params.requestState
        std::mutex elicit_mu;
        json used_answers = json::object();  // guarded by elicit_mu: answers applied this round
        json input_requests;                 // guarded by elicit_mu: to send back, or null
    };

    // A legacy elicitation/create in flight, waiting for the client's response.
    // Guarded by pending_mu_.
    struct PendingElicit {
        std::condition_variable_any cv;
        bool done = false;    // the client answered
        bool closed = false;  // the connection is shutting down
        json result;
        json error;
    };

    // ---- reader ------------------------------------------------------------------------------

    Status read_loop(int in_fd) {
        LineFramer framer(options_.max_message_bytes);
        std::vector<FramedLine> lines;
        std::vector<char> buffer(kReadChunk);
        std::array<pollfd, 2> fds{pollfd{.fd = in_fd, .events = POLLIN, .revents = 0},
                                  pollfd{.fd = stop_fd_, .events = POLLIN, .revents = 0}};
        for (;;) {
            if (::poll(fds.data(), fds.size(), -1) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return errno_error("poll mcp input", errno);
            }
            if (fds[1].revents != 0) {
                SPDLOG_LOGGER_INFO(logger(), "mcp server stop requested");
                return ok_status();
            }
            if (fds[0].revents == 0) {
                continue;
            }
            const ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) {
                    continue;
                }
                return errno_error("read mcp input", errno);
            }
            if (n == 0) {
                framer.finish(lines);
                handle_lines(lines);
                SPDLOG_LOGGER_INFO(logger(), "mcp input closed");
                return ok_status();
            }
            framer.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), lines);
            handle_lines(lines);
        }
    }

    void handle_lines(std::vector<FramedLine>& lines) {
        for (auto& line : lines) {
            handle_line(line);
        }
        lines.clear();
    }

    void handle_line(const FramedLine& line) {
        if (line.oversized) {
            SPDLOG_LOGGER_WARN(logger(), "mcp message over limit discarded limit_bytes={}",
                               options_.max_message_bytes);
            send(jsonrpc::encode_error(nullptr, ErrorCode::kInvalidRequest,
                                       "message exceeds the " +
                                           std::to_string(options_.max_message_bytes) +
                                           "-byte limit and was discarded"));
            return;
        }
        if (line.text.find_first_not_of(" \t\r") == std::string::npos) {
            return;
        }
        auto decoded = jsonrpc::decode(line.text);
        if (auto* failure = std::get_if<jsonrpc::DecodeFailure>(&decoded)) {
            SPDLOG_LOGGER_DEBUG(logger(), "mcp message rejected code={} reason={}",
                                static_cast<int>(failure->code), failure->message);
            send(jsonrpc::encode_error(failure->id, failure->code, failure->message));
            return;
        }
        auto& message = std::get<jsonrpc::Message>(decoded);
        if (auto* request = std::get_if<jsonrpc::Request>(&message)) {
            try {
                handle_request(*request, line.text.size());
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
            handle_response(std::get<jsonrpc::Response>(message));
        }
    }

    // A response from the client: the answer to one of our elicitation/create requests. Anything
    // else (an unknown or late id, an id we could not have sent) is logged and dropped; a
    // response is never answered.
    void handle_response(jsonrpc::Response& response) {
        if (!response.id.is_string()) {
            SPDLOG_LOGGER_WARN(logger(), "mcp response with a non-string id dropped id_type={}",
                               response.id.type_name());
            return;
        }
        const auto& id = response.id.get_ref<const std::string&>();
        {
            std::lock_guard lock(pending_mu_);
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
            send(jsonrpc::encode_error(request.id, error->code, error->message, error->data));
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
                       {"serverInfo", server_info(options_)}};
        if (!options_.instructions.empty()) {
            result["instructions"] = options_.instructions;
        }
        send(jsonrpc::encode_result(request.id, std::move(result)));
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
                       {"serverInfo", server_info(options_)},
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
            entries.push_back(tool_json(tool));
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
                    request_state_.open(st->get_ref<const std::string&>(), tool_name, arguments);
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
        auto tools = list_tools(request.id);
        if (!tools) {
            return;
        }
        auto known = tool_names(*tools);
        if (std::find(known.begin(), known.end(), tool_name) == known.end()) {
            SPDLOG_LOGGER_INFO(logger(), "mcp unknown tool call={} tool={}",
                               jsonrpc::id_text(request.id), tool_name);
            send(unknown_tool_error(request.id, tool_name, known));
            return;
        }

        auto call = std::make_shared<Call>();
        call->id = request.id;
        call->key = jsonrpc::id_key(request.id);
        call->name = tool_name;
        call->arguments = std::move(arguments);
        call->protocol = std::move(protocol);
        call->known_tools = std::move(known);
        call->input_responses = std::move(input_responses);
        call->carried_answers = std::move(carried_answers);
        call->bytes = bytes;
        {
            std::lock_guard lock(calls_mu_);
            if (calls_.contains(call->key)) {
                send_error(request.id, ErrorCode::kInvalidRequest,
                           "request id " + call->key + " is already used by a call in progress");
                return;
            }
            if (calls_.size() >= options_.max_pending_calls ||
                pending_bytes_ + bytes > options_.max_pending_bytes) {
                SPDLOG_LOGGER_WARN(logger(),
                                   "mcp call refused: pool full call={} pending={} bytes={}",
                                   jsonrpc::id_text(request.id), calls_.size(), pending_bytes_);
                send_call_result(
                    *call,
                    ToolCallResult{
                        .text = "Stockade already has " + std::to_string(calls_.size()) +
                                " tool calls running or waiting (" +
                                std::to_string(pending_bytes_ >> 20) +
                                " MiB of arguments). Wait for some of them to finish, then retry "
                                "this call.",
                        .is_error = true,
                        .meta = nullptr,
                        .structured = nullptr,
                        .unknown_tool = false});
                return;
            }
            calls_.emplace(call->key, call);
            pending_bytes_ += call->bytes;
            queue_.push_back(call);
        }
        calls_cv_.notify_one();
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
        std::shared_ptr<Call> call;
        {
            std::lock_guard lock(calls_mu_);
            if (auto it = calls_.find(jsonrpc::id_key(id)); it != calls_.end()) {
                call = it->second;
            }
        }
        if (call == nullptr) {
            // Unknown or already answered: the spec lets us ignore it.
            SPDLOG_LOGGER_DEBUG(logger(), "mcp cancellation for no call in progress id={}",
                                jsonrpc::id_text(id));
            return;
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp call cancelled call={} tool={} reason={}",
                           jsonrpc::id_text(id), call->name, reason);
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

    // ---- workers -----------------------------------------------------------------------------

    void worker_loop() {
        for (;;) {
            std::shared_ptr<Call> call;
            {
                std::unique_lock lock(calls_mu_);
                calls_cv_.wait(lock, [this] { return shutting_down_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return;
                }
                call = std::move(queue_.front());
                queue_.pop_front();
            }
            run_call(call);
            std::lock_guard lock(calls_mu_);
            calls_.erase(call->key);
            pending_bytes_ -= call->bytes;
        }
    }

    void run_call(const std::shared_ptr<Call>& shared_call) {
        Call& call = *shared_call;
        const std::string request_id = jsonrpc::id_text(call.id);
        if (call.stop.stop_requested()) {
            SPDLOG_LOGGER_INFO(logger(), "mcp call dropped before start call={} tool={}",
                               request_id, call.name);
            return;
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
            .elicit = supports_form_elicitation(call.protocol.client_capabilities)
                          ? ElicitFn([this, shared_call](const ElicitRequest& request) {
                                return elicit(*shared_call, request);
                            })
                          : ElicitFn()};
        SPDLOG_LOGGER_INFO(logger(), "mcp call start call={} tool={}", request_id, call.name);
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
            json input_requests;
            {
                std::lock_guard lock(call.elicit_mu);
                input_requests = std::move(call.input_requests);
            }
            if (!input_requests.is_null() && !call.cancelled_by_client && !closing_) {
                SPDLOG_LOGGER_INFO(logger(),
                                   "mcp call end call={} tool={} input_required dur_ms={}",
                                   request_id, call.name, dur_ms);
                send_input_required(call, std::move(input_requests));
                return;
            }
            // MCP cancellation: the receiver SHOULD NOT respond to a cancelled request.
            SPDLOG_LOGGER_INFO(logger(), "mcp call end call={} tool={} cancelled dur_ms={}",
                               request_id, call.name, dur_ms);
            return;
        }
        if (!result) {
            send_error(call.id, ErrorCode::kInternalError,
                       "Internal error: tool \"" + call.name + "\" failed unexpectedly");
            return;
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp call end call={} tool={} is_error={} dur_ms={}",
                           request_id, call.name, result->is_error, dur_ms);
        if (result->unknown_tool) {
            send(unknown_tool_error(call.id, call.name, call.known_tools));
            return;
        }
        send_call_result(call, std::move(*result));
    }

    void send_call_result(const Call& call, ToolCallResult result) {
        json body = call_result_json(std::move(result), call.protocol.modern);
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
        send(std::move(line));
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
        if (!message.empty()) {
            params["message"] = std::move(message);
        }
        // Written under progress_mu so that notifications leave in the order of their values
        // and never after the response (which is sent once `finished` is set).
        send(jsonrpc::encode_notification("notifications/progress", std::move(params)));
    }

    // ---- elicitation (docs/protocol.md §6) ----------------------------------------------------

    Result<ElicitResponse> elicit(Call& call, const ElicitRequest& request) {
        if (call.protocol.modern) {
            return elicit_by_input_required(call, request);
        }
        return elicit_by_request(call, request);
    }

    // 2025 era: an elicitation/create request to the client; waits for its response.
    Result<ElicitResponse> elicit_by_request(Call& call, const ElicitRequest& request) {
        ASSIGN_OR_RETURN(json params, elicit_params(request, call.protocol.version));
        if (request.timeout <= std::chrono::milliseconds::zero()) {
            return Error{.code = Errc::kInvalidArgument,
                         .message = "elicit: the timeout must be positive",
                         .sys_errno = 0};
        }
        const std::string id = "stockade-elicit-" + std::to_string(++elicit_ids_);
        json schema = params["requestedSchema"];
        std::string line = jsonrpc::dump({{"jsonrpc", "2.0"},
                                          {"id", id},
                                          {"method", kElicitMethod},
                                          {"params", std::move(params)}});
        if (line.size() > options_.max_message_bytes) {
            return Error{.code = Errc::kInvalidArgument,
                         .message = "elicit: the question is over the message size limit",
                         .sys_errno = 0};
        }
        const std::stop_token stop = call.stop.get_token();
        auto pending = std::make_shared<PendingElicit>();
        {
            std::lock_guard lock(pending_mu_);
            if (pending_closed_ || stop.stop_requested()) {
                return Error{.code = Errc::kCancelled,
                             .message = "elicit: the call was cancelled",
                             .sys_errno = 0};
            }
            pending_.emplace(id, pending);
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp elicitation sent call={} request={}",
                           jsonrpc::id_text(call.id), id);
        send(std::move(line));

        const auto deadline =
            std::chrono::steady_clock::now() + std::min(request.timeout, kMaxElicitTimeout);
        bool answered = false;
        bool closed = false;
        json result;
        json error;
        {
            std::unique_lock lock(pending_mu_);
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
            return Error{.code = Errc::kCancelled,
                         .message = "elicit: the connection closed before the user answered",
                         .sys_errno = 0};
        }
        if (!answered) {
            const bool cancelled = stop.stop_requested();
            SPDLOG_LOGGER_INFO(logger(), "mcp elicitation withdrawn call={} request={} why={}",
                               jsonrpc::id_text(call.id), id,
                               cancelled ? "call cancelled" : "timeout");
            // Tells the client to close the question (2025-11-25 cancellation).
            send(jsonrpc::encode_notification(
                "notifications/cancelled",
                {{"requestId", id},
                 {"reason", cancelled ? "The tool call was cancelled."
                                      : "The server stopped waiting for an answer."}}));
            if (cancelled) {
                return Error{.code = Errc::kCancelled,
                             .message = "elicit: the call was cancelled",
                             .sys_errno = 0};
            }
            return Error{.code = Errc::kDeadlineExceeded,
                         .message = "elicit: no answer from the user within " +
                                    std::to_string(request.timeout.count()) + " ms",
                         .sys_errno = 0};
        }
        if (!error.is_null()) {
            if (!result.is_null()) {
                return Error{.code = Errc::kInvalidArgument,
                             .message =
                                 "elicit: the client's response has both a result and an "
                                 "error",
                             .sys_errno = 0};
            }
            return client_error(error);
        }
        auto response = parse_elicit_result(result, schema);
        if (!response) {
            SPDLOG_LOGGER_WARN(logger(), "mcp elicitation answer rejected call={} why={}",
                               jsonrpc::id_text(call.id), response.error().message);
            return Error{.code = Errc::kInvalidArgument,
                         .message = "elicit: " + response.error().message,
                         .sys_errno = 0};
        }
        SPDLOG_LOGGER_INFO(logger(), "mcp elicitation answered call={} request={} action={}",
                           jsonrpc::id_text(call.id), id, response->action);
        return response;
    }

    static Error client_error(const json& error) {
        std::string text = "the client answered elicitation/create with an error";
        if (error.is_object()) {
            if (auto code = error.find("code"); code != error.end() && code->is_number_integer()) {
                text += " " + std::to_string(code->get<std::int64_t>());
            }
            if (auto message = error.find("message");
                message != error.end() && message->is_string()) {
                text += ": " + message->get_ref<const std::string&>().substr(0, 200);
            }
        }
        return Error{.code = Errc::kUnavailable, .message = "elicit: " + text, .sys_errno = 0};
    }

    // 2026-07-28: no server-to-client requests. The answer comes with the request (the client
    // retrying after an input_required result), or the question goes back in one.
    Result<ElicitResponse> elicit_by_input_required(Call& call, const ElicitRequest& request) {
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
                return Error{.code = Errc::kInvalidArgument,
                             .message = "elicit: " + response.error().message,
                             .sys_errno = 0};
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
        if (jsonrpc::dump(input_request).size() > options_.max_message_bytes / 2) {
            return Error{.code = Errc::kInvalidArgument,
                         .message = "elicit: the question is over the message size limit",
                         .sys_errno = 0};
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
        return Error{.code = Errc::kCancelled,
                     .message =
                         "elicit: the question goes back to the client in an "
                         "input_required result; the client retries the call with the "
                         "answer",
                     .sys_errno = 0};
    }

    void send_input_required(Call& call, json input_requests) {
        json result = {{"resultType", "input_required"},
                       {"inputRequests", std::move(input_requests)}};
        json answers;
        {
            std::lock_guard lock(call.elicit_mu);
            answers = call.carried_answers;
            answers.update(call.used_answers);
        }
        if (!answers.empty()) {
            // Earlier answers ride along, sealed, so that a call asking several questions does
            // not ask the first one again.
            result["requestState"] =
                request_state_.seal(call.name, call.arguments, answers, kRequestStateTtl);
        }
        result["_meta"][std::string(kMetaServerInfo)] = server_info(options_);
        std::string line = jsonrpc::encode_result(call.id, std::move(result));
        if (line.size() > options_.max_message_bytes) {
            SPDLOG_LOGGER_ERROR(logger(), "mcp input_required over limit bytes={}", line.size());
            line = jsonrpc::encode_error(call.id, ErrorCode::kInternalError,
                                         "Internal error: the reply exceeded the message limit");
        }
        send(std::move(line));
    }

    void shutdown() {
        closing_ = true;
        {
            // Legacy elicitations fail at once: nobody is left to answer them.
            std::lock_guard lock(pending_mu_);
            pending_closed_ = true;
            for (auto& [id, pending] : pending_) {
                pending->closed = true;
                pending->cv.notify_all();
            }
        }
        std::size_t cancelled = 0;
        {
            std::lock_guard lock(calls_mu_);
            shutting_down_ = true;
            for (auto& [key, call] : calls_) {
                call->stop.request_stop();
                ++cancelled;
            }
            queue_.clear();
        }
        calls_cv_.notify_all();
        if (cancelled > 0) {
            SPDLOG_LOGGER_INFO(logger(), "mcp shutdown cancelling calls count={}", cancelled);
        }
        for (auto& worker : workers_) {
            worker.join();
        }
        workers_.clear();
        calls_.clear();
    }

    // ---- output ------------------------------------------------------------------------------

    // 2026-07-28 results carry resultType and the server's identity in _meta.
    json decorate(json result, const RequestProtocol& protocol) const {
        if (protocol.modern) {
            result["resultType"] = "complete";
            result["_meta"][std::string(kMetaServerInfo)] = server_info(options_);
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
        send(std::move(line));
    }

    void send_error(const json& id, ErrorCode code, const std::string& message) {
        send(jsonrpc::encode_error(id, code, message));
    }

    // Writes one message as one line. Thread-safe: every message goes out whole, in order.
    void send(std::string line) {
        line.push_back('\n');
        std::lock_guard lock(write_mu_);
        if (output_broken_) {
            return;
        }
        std::optional<ScopedSigpipeBlock> sigpipe_blocked;
        if (!out_is_socket_) {
            sigpipe_blocked.emplace();
        }
        std::string_view rest = line;
        while (!rest.empty()) {
            const ssize_t n = out_is_socket_
                                  ? ::send(out_fd_, rest.data(), rest.size(), MSG_NOSIGNAL)
                                  : ::write(out_fd_, rest.data(), rest.size());
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno == EAGAIN) {
                    pollfd out{.fd = out_fd_, .events = POLLOUT, .revents = 0};
                    (void)::poll(&out, 1, -1);
                    continue;
                }
                const int err = errno;
                SPDLOG_LOGGER_WARN(logger(), "mcp output closed; stopping: {}", errno_string(err));
                output_broken_ = true;
                signal_stop(stop_fd_);
                return;
            }
            rest.remove_prefix(static_cast<std::size_t>(n));
        }
    }

    ToolHost& host_;
    const ServerOptions& options_;
    const int out_fd_;
    const int stop_fd_;
    bool out_is_socket_ = false;

    LegacySession session_;  // Thread: reader only

    std::mutex write_mu_;
    bool output_broken_ = false;  // guarded by write_mu_

    std::mutex calls_mu_;
    std::condition_variable calls_cv_;
    std::unordered_map<std::string, std::shared_ptr<Call>> calls_;  // queued + running
    std::deque<std::shared_ptr<Call>> queue_;                       // waiting for a worker
    std::size_t pending_bytes_ = 0;  // guarded by calls_mu_: Call::bytes of calls_
    bool shutting_down_ = false;
    std::atomic<bool> closing_{false};  // shutdown() began: no more replies to calls
    std::vector<std::thread> workers_;

    std::mutex pending_mu_;
    std::unordered_map<std::string, std::shared_ptr<PendingElicit>> pending_;  // by request id
    bool pending_closed_ = false;  // guarded by pending_mu_
    std::atomic<std::uint64_t> elicit_ids_{0};
    RequestStateSealer request_state_;  // per connection: a new process rejects old states
};

McpServer::McpServer(ToolHost& host, ServerOptions options)
    : host_(host),
      options_(std::move(options)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!stop_fd_) {
        SPDLOG_LOGGER_ERROR(logger(), "eventfd for mcp stop failed: {}", errno_string(errno));
    }
}

McpServer::~McpServer() = default;

void McpServer::request_stop() noexcept {
    signal_stop(stop_fd_.get());
}

Status McpServer::run(int in_fd, int out_fd) {
    if (!stop_fd_) {
        return Error{
            .code = Errc::kUnavailable, .message = "mcp server: no stop eventfd", .sys_errno = 0};
    }
    Connection connection(host_, options_, out_fd, stop_fd_.get());
    return connection.serve(in_fd);
}

}  // namespace stockade::mcp
