#include "runner/mcp/http_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
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
#include "common/quote.h"
#include "runner/mcp/http_metrics.h"
#include "runner/mcp/http_sessions.h"
#include "runner/mcp/listen_address.h"
#include "runner/mcp/protocol.h"
#include "runner/mcp/stream_store.h"

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

// What a request that comes while the server drains is told, with 503 and Retry-After.
constexpr std::string_view kShuttingDownRefusal =
    "Stockade is shutting down and takes no new sessions or tool calls. Retry in a new session "
    "once the server is back, or on another server.";
constexpr const char* kShuttingDownRetryAfter = "5";
// When a client refused because the backend cannot serve /mcp yet may try again.
constexpr const char* kUnavailableRetryAfter = "5";
// How long a drain waits, once every session has ended, for their last responses to be written.
constexpr std::chrono::seconds kDrainFlush{5};

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

// The Wake of a writer that waits on `timer`: a cancel posted to the timer's executor (the
// connection's strand).
Wake wake_of(const std::shared_ptr<asio::steady_timer>& timer) {
    return [timer] {
        asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    };
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
        ASSIGN_OR_RETURN(ListenAddress address, parse_listen_address(options_.listen));
        rules_.hosts = options_.allowed_hosts;
        rules_.origins = options_.allowed_origins;
        boost::system::error_code ec;
        if (const auto* unix_address = std::get_if<UnixListenAddress>(&address)) {
            const std::string& path = unix_address->path;
            rules_.loopback = true;
            // A socket left by an earlier run is replaced; anything else at the path is not ours.
            struct stat st {};
            if (::lstat(path.c_str(), &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) {
                    return Error{Errc::kInvalidArgument,
                                 "--http unix:" + path +
                                     ": the path exists and is not a socket; give another"};
                }
                (void)::unlink(path.c_str());
            }
            asio::local::stream_protocol::endpoint endpoint(path);
            unix_acceptor_.emplace(ioc_);
            unix_acceptor_->open(endpoint.protocol(), ec);
            if (!ec) {
                unix_acceptor_->bind(endpoint, ec);
            }
            if (!ec) {
                unix_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
            }
            endpoint_ = "unix:" + path;
            unix_path_ = path;
        } else {
            const auto& tcp = std::get<TcpListenAddress>(address).endpoint;
            rules_.loopback = tcp.address().is_loopback();
            tcp_acceptor_.emplace(ioc_);
            tcp_acceptor_->open(tcp.protocol(), ec);
            if (!ec) {
                tcp_acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
                tcp_acceptor_->bind(tcp, ec);
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
            401, token                   ? "The bearer token is not valid for this server.\n"
                 : options_.token_header ? "This server needs a bearer token: send "
                                           "Authorization: Bearer TOKEN, or Stockade-Token: "
                                           "TOKEN.\n"
                                         : "This server needs a bearer token: send "
                                           "Authorization: Bearer TOKEN.\n");
        response.set(bhttp::field::www_authenticate,
                     token ? R"(Bearer realm="stockade", error="invalid_token")"
                           : R"(Bearer realm="stockade")");
        return response;
    }

    // The refusal of a request on /mcp that an OAuth resource server did not let in: 401 (403
    // for a scope the token lacks), with the challenge that points at the metadata.
    HttpResponse oauth_refusal(const jwt::Refused* refused) const {
        const bool scope =
            refused != nullptr && refused->reason == jwt::Refusal::kInsufficientScope;
        HttpResponse response =
            text_response(scope ? 403 : 401, options_.oauth->refusal_text(refused));
        response.set(bhttp::field::www_authenticate, options_.oauth->challenge(refused));
        return response;
    }

    // The Protected Resource Metadata (RFC 9728), to anyone.
    HttpResponse resource_metadata(const HttpRequest& request) const {
        if (request.method() != bhttp::verb::get) {
            HttpResponse response = text_response(405, "Use GET for the resource's metadata.\n");
            response.set(bhttp::field::allow, "GET");
            return response;
        }
        HttpResponse response = json_response(200, options_.oauth->metadata());
        response.set(bhttp::field::cache_control, "max-age=300");
        return response;
    }

    // Who a request on /mcp is, when its tenant is let in.
    struct Caller {
        const HttpTenant* tenant = nullptr;
        std::string subject;  // an access token's sub (OAuth), else empty
    };

    // The caller an access token makes of a request on /mcp, or the response refusing it. The
    // token is never logged; a refused one's sub and jti are, when its signature verified.
    std::variant<Caller, HttpResponse> authorize(const std::optional<std::string>& token) {
        if (!token) {
            return oauth_refusal(nullptr);
        }
        jwt::Verdict verdict = options_.oauth->check(*token);
        if (auto* refused = std::get_if<jwt::Refused>(&verdict)) {
            SPDLOG_LOGGER_INFO(logger(), "http token refused reason={} sub={} jti={} why={}",
                               jwt::refusal_name(refused->reason), quote(refused->subject),
                               quote(refused->jwt_id), quote(refused->detail, 200));
            return oauth_refusal(refused);
        }
        const jwt::AccessToken& access = std::get<jwt::AccessToken>(verdict);
        const HttpTenant* tenant = backend_.tenant_named(access.tenant);
        if (tenant == nullptr) {
            const jwt::Refused unknown{
                .reason = jwt::Refusal::kUnknownTenant,
                .detail = "the tenant the token names is not a tenant of this server",
                .subject = access.subject,
                .jwt_id = access.jwt_id};
            SPDLOG_LOGGER_INFO(logger(), "http token refused reason={} sub={} jti={} tenant={}",
                               jwt::refusal_name(unknown.reason), quote(access.subject),
                               quote(access.jwt_id), quote(access.tenant));
            return oauth_refusal(&unknown);
        }
        SPDLOG_LOGGER_DEBUG(logger(), "http token accepted tenant={} sub={} jti={}", tenant->name,
                            quote(access.subject), quote(access.jwt_id));
        return Caller{.tenant = tenant, .subject = access.subject};
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
                why ? text_response(503, *why + "\n") : text_response(200, backend_.ready() + "\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        if (options_.oauth && options_.oauth->serves_metadata_at(path)) {
            HttpResponse reply = resource_metadata(request);
            co_return co_await write(stream, std::move(reply), request);
        }
        // With OAuth, /mcp answers any refusal with its challenge; another scheme than Bearer
        // in Authorization is no token there (RFC 6750 §3.1).
        const bool oauth_mcp = options_.oauth && path == "/mcp";
        std::optional<std::string> token;
        if (auto ours = options_.token_header ? header(request, "Stockade-Token") : std::nullopt) {
            token = std::string(http::trim_ows(*ours));
            if (token->empty()) {
                HttpResponse reply = unauthorized(std::string());
                co_return co_await write(stream, std::move(reply), request);
            }
        } else if (auto authorization = header(request, "Authorization")) {
            token = http::bearer_token(*authorization);
            if (!token && !oauth_mcp) {
                HttpResponse reply = unauthorized(std::string());
                co_return co_await write(stream, std::move(reply), request);
            }
        }
        if (path == "/metrics" || path == "/admin/sessions" || path.starts_with("/admin/")) {
            if (options_.auth && !backend_.is_admin(token)) {
                HttpResponse reply = unauthorized(token);
                co_return co_await write(stream, std::move(reply), request);
            }
            if (path.starts_with("/admin/sessions/") && path.ends_with("/rewind") &&
                request.method() == bhttp::verb::post) {
                // Blocking (a walk and the writes): on the pool, not this I/O thread.
                HttpResponse reply = co_await asio::co_spawn(
                    open_pool_, rewind_session(std::string(path), request.body()), use_awaitable);
                co_return co_await write(stream, std::move(reply), request);
            }
            HttpResponse reply = admin(request, path);
            co_return co_await write(stream, std::move(reply), request);
        }
        if (path != "/mcp") {
            HttpResponse reply = text_response(404, "Not found. The MCP endpoint is /mcp.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        if (auto why = backend_.unavailable()) {
            HttpResponse reply = text_response(503, *why + "\n");
            reply.set(bhttp::field::retry_after, kUnavailableRetryAfter);
            co_return co_await write(stream, std::move(reply), request);
        }
        Caller caller;
        if (oauth_mcp) {
            auto authorized = authorize(token);
            if (auto* refusal = std::get_if<HttpResponse>(&authorized)) {
                HttpResponse reply = std::move(*refusal);
                co_return co_await write(stream, std::move(reply), request);
            }
            caller = std::get<Caller>(std::move(authorized));
        } else {
            caller.tenant = backend_.authenticate(options_.auth ? token : std::nullopt);
            if (caller.tenant == nullptr) {
                HttpResponse reply = unauthorized(token);
                co_return co_await write(stream, std::move(reply), request);
            }
        }
        const HttpTenant* tenant = caller.tenant;
        last_request_.store(Clock::now().time_since_epoch().count());
        switch (request.method()) {
            case bhttp::verb::post:
                co_return co_await post(stream, request, *tenant, caller.subject);
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

    // `subject`: the access token's sub, for the log of a session it opens.
    awaitable<bool> post(HttpStream& stream, HttpRequest& request, const HttpTenant& tenant,
                         const std::string& subject) {
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
            session = sessions_.find(session_header, tenant);
            if (!session) {
                HttpResponse reply = draining_ ? shutting_down(rpc) : session_not_found(rpc);
                co_return co_await write(stream, std::move(reply), request);
            }
        } else if (modern || (rpc != nullptr && rpc->method == "initialize")) {
            if (draining_) {
                HttpResponse reply = shutting_down(rpc);
                co_return co_await write(stream, std::move(reply), request);
            }
            // A named value, not a temporary in the co_await: g++ 12 destroys such
            // temporaries twice.
            SessionRequest wanted;
            wanted.workspace =
                std::string(http::trim_ows(header_or_empty(request, "Stockade-Workspace")));
            wanted.image = std::string(http::trim_ows(header_or_empty(request, "Stockade-Image")));
            auto opened = co_await open_session(tenant, modern, std::move(wanted), subject);
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
            if (auto wait = sessions_.take_call_token(tenant, Clock::now())) {
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
        auto opened =
            session->streams().open(jsonrpc::id_key(id), sse, std::move(tool),
                                    revision_features(version).sse_priming, wake_of(waiter));
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
        auto session = sessions_.find(session_header, tenant);
        if (!session) {
            HttpResponse reply =
                draining_ ? shutting_down(nullptr) : text_response(404, "Session not found.\n");
            co_return co_await write(stream, std::move(reply), request);
        }
        auto waiter = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
        std::shared_ptr<EventStream> event_stream;
        if (auto last = header(request, "Last-Event-ID")) {
            auto id = http::parse_event_id(*last);
            event_stream = id ? session->streams().resume(*id, wake_of(waiter)) : nullptr;
            if (!event_stream) {
                HttpResponse reply =
                    text_response(404,
                                  "No stream to resume from that Last-Event-ID: it is "
                                  "unknown, finished, or being read already.\n");
                co_return co_await write(stream, std::move(reply), request);
            }
        } else {
            event_stream = session->open_standalone(wake_of(waiter));
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
        auto session = sessions_.find(session_header, tenant);
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
        std::string batch = session.streams().priming_event(*events);
        bool complete = false;
        for (;;) {
            auto [taken, done, overflow] = session.streams().take(*events);
            batch += taken;
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
                if (session.streams().has_news(*events)) {
                    SPDLOG_LOGGER_ERROR(logger(),
                                        "http stream {} woke by its heartbeat with events "
                                        "waiting session={}",
                                        events->number, session.short_id());
                }
                batch = ": keep-alive\n\n";  // finds a client that went away
            }
        }
        session.streams().detach(*events);
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
            if (auto answered = session.streams().reply(*events)) {
                reply = std::move(*answered);
                break;
            }
            waiter->expires_after(std::chrono::hours(24));
            boost::system::error_code ec;
            co_await waiter->async_wait(asio::redirect_error(use_awaitable, ec));
        }
        session.streams().detach(*events);
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

    // A new session of `tenant` (`shared`: its session for 2026-07-28 requests, opened once),
    // or the response refusing it.
    awaitable<std::variant<std::shared_ptr<McpSession>, HttpResponse>> open_session(
        const HttpTenant& tenant, bool shared, SessionRequest request, const std::string& subject) {
        if (shared) {
            request = {};  // the tenant's shared session is on its workspace root and image
        }
        const SessionTable::Reserved reserved = sessions_.reserve(tenant, shared);
        if (!reserved.slot) {
            metrics_.refusal(tenant.name, "sessions");
            HttpResponse response = rpc_error(
                429, nullptr, jsonrpc::ErrorCode::kInternalError,
                fmt::format("This tenant has {} sessions open, its limit. End one (DELETE "
                            "/mcp with its Mcp-Session-Id) or wait for an idle one to expire.",
                            reserved.open));
            response.set(bhttp::field::retry_after, "10");
            co_return response;
        }
        const std::shared_ptr<SessionSlot> slot = reserved.slot;
        if (reserved.opener) {
            auto session = slot->session;
            Status opened = co_await asio::co_spawn(
                open_pool_, start_session(session, std::move(request)), use_awaitable);
            metrics_.session_opened(tenant.name, opened.has_value());
            sessions_.opened(*slot, opened);
            if (!opened) {
                SPDLOG_LOGGER_ERROR(logger(), "http session failed to open tenant={} why={}",
                                    tenant.name, slot->error);
            } else {
                SPDLOG_LOGGER_INFO(logger(), "http session opened tenant={} session={} shared={}{}",
                                   tenant.name, session->short_id(), shared,
                                   subject.empty() ? std::string() : " sub=" + quote(subject));
            }
        } else {
            auto waiter = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
            while (!sessions_.ready_or_wait(*slot, wake_of(waiter))) {
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
    awaitable<Status> start_session(std::shared_ptr<McpSession> session, SessionRequest request) {
        auto host = backend_.open_session(session->tenant, session->id, request);
        if (!host) {
            co_return host.error();
        }
        session->start(std::move(*host));
        co_return ok_status();
    }

    // POST /admin/sessions/ID/rewind {"to": CALL, "dry_run": bool, "force": bool}.
    awaitable<HttpResponse> rewind_session(std::string path, std::string body) {
        constexpr std::string_view kPrefix = "/admin/sessions/";
        const std::string id =
            path.substr(kPrefix.size(), path.size() - kPrefix.size() - std::strlen("/rewind"));
        const std::shared_ptr<McpSession> session = sessions_.find_any(id);
        if (!session) {
            co_return text_response(404, "No such session (GET /admin/sessions lists them).\n");
        }
        json request = json::parse(body, nullptr, false);
        if (!request.is_object()) {
            co_return text_response(
                400,
                "The body must be a JSON object: {\"to\": \"CALL\", \"dry_run\": false, "
                "\"force\": false}.\n");
        }
        auto report = session->rewind(request);
        if (!report) {
            const Errc code = report.error().code;
            const unsigned status = code == Errc::kInvalidArgument ? 400
                                    : code == Errc::kNotFound      ? 404
                                                                   : 409;
            co_return text_response(status, report.error().message + "\n");
        }
        co_return json_response(200, report->dump(-1, ' ', false, json::error_handler_t::replace));
    }

    static awaitable<void> stop_session(std::shared_ptr<McpSession> session,
                                        std::optional<std::string> answer) {
        session->end(answer);
        co_return;
    }

    // Ends a session off the I/O threads (its calls are stopped and waited for, its sandbox
    // stopped). `answer`: see McpSession::end.
    awaitable<void> end_session(std::shared_ptr<McpSession> session,
                                std::optional<std::string> answer = std::nullopt) {
        sessions_.forget(*session);
        co_await asio::co_spawn(open_pool_, stop_session(session, std::move(answer)),
                                use_awaitable);
    }

    // What the backend is told of the server's state.
    ServerActivity activity() {
        ServerActivity state{
            .now = Clock::now(),
            .last_request = Clock::time_point(Clock::duration(last_request_.load())),
            .draining = draining_};
        for (const auto& [name, gauges] : sessions_.gauges()) {
            state.sessions += gauges.sessions;
        }
        return state;
    }

    // Idle sessions and those past their lifetime end; the server stops when its backend says
    // so (HttpBackend::stop_reason).
    awaitable<void> reap_loop() {
        asio::steady_timer timer(ioc_);
        while (!draining_) {
            timer.expires_after(std::chrono::seconds(1));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
            if (draining_) {
                break;
            }
            if (auto why = backend_.stop_reason(activity())) {
                SPDLOG_LOGGER_WARN(logger(), "http server draining: {}", *why);
                request_stop();
                break;
            }
            for (auto& [session, expired] : sessions_.due(Clock::now())) {
                SPDLOG_LOGGER_INFO(logger(), "http session {} tenant={} session={}",
                                   expired ? "past its lifetime" : "idle", session->tenant.name,
                                   session->short_id());
                std::optional<std::string> answer;
                if (expired) {
                    answer = fmt::format(
                        "This session reached its maximum lifetime ({} s) while this call was "
                        "running, so the call was stopped and its processes killed; it may have "
                        "done part of its work. Start a new session to retry it.",
                        session->tenant.max_lifetime.count());
                }
                asio::co_spawn(ioc_, end_session(session, std::move(answer)), asio::detached);
            }
        }
    }

    // SIGTERM: running calls get options_.drain (less options_.drain_reserve) to finish, then
    // every session ends: a call still running is stopped and answered with an error that says
    // so (drain_answer()). With a reserve, the last answers' writing stops at options_.drain.
    awaitable<void> drain() {
        const auto end = Clock::now() + options_.drain;
        const auto deadline =
            end - std::min<Clock::duration>(options_.drain_reserve, options_.drain);
        asio::steady_timer timer(ioc_);
        for (;;) {
            std::size_t running = 0;
            for (auto& session : sessions_.open_sessions()) {
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
        for (auto& session : sessions_.open_sessions()) {
            co_await end_session(session, drain_answer());
        }
        // Let the responses that just ended write their last bytes; a client that does not
        // read them is not waited for long.
        auto flushed = Clock::now() + kDrainFlush;
        if (options_.drain_reserve.count() > 0) {
            flushed = std::min(flushed, end);  // the drain is over by `drain`, whatever is left
        }
        while (responding_.load() > 0 && Clock::now() < flushed) {
            timer.expires_after(std::chrono::milliseconds(20));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
        }
        ioc_.stop();
    }

    // The answer of a call the drain stopped.
    [[nodiscard]] std::string drain_answer() const {
        const std::chrono::duration<double> given =
            options_.drain -
            std::min<std::chrono::milliseconds>(options_.drain_reserve, options_.drain);
        return fmt::format(
            "Stockade is shutting down: this call was still running when the {:g} s given to "
            "running calls ran out, so it was stopped and its processes killed; it may have done "
            "part of its work. Retry it in a new session once the server is back.",
            given.count());
    }

    // ---- operator endpoints --------------------------------------------------------------------

    HttpResponse admin(const HttpRequest& request, std::string_view path) {
        if (path == "/metrics" && request.method() == bhttp::verb::get) {
            HttpResponse response = text_response(
                200, metrics_.render(sessions_.gauges(), backend_.usage(), draining_) +
                         backend_.metrics());
            response.set(bhttp::field::content_type, "text/plain; version=0.0.4");
            return response;
        }
        if (path == "/admin/sessions" && request.method() == bhttp::verb::get) {
            json list = json::array();
            const auto now = Clock::now();
            for (auto& session : sessions_.open_sessions()) {
                const auto idle = now - session->last_used_at();
                list.push_back({{"id", session->id},
                                {"tenant", session->tenant.name},
                                {"age_seconds", std::chrono::duration_cast<std::chrono::seconds>(
                                                    now - session->created)
                                                    .count()},
                                {"idle_seconds",
                                 std::chrono::duration_cast<std::chrono::seconds>(idle).count()},
                                {"calls", session->calls()},
                                {"calls_made", session->calls_made()},
                                {"log_id", session->event_log_id()}});
            }
            return json_response(200, json{{"sessions", std::move(list)}}.dump());
        }
        constexpr std::string_view kPrefix = "/admin/sessions/";
        if (path.starts_with(kPrefix) && request.method() == bhttp::verb::delete_) {
            const std::string id(path.substr(kPrefix.size()));
            const std::shared_ptr<McpSession> session = sessions_.find_any(id);
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
        const std::string_view method(request.method_string().data(),
                                      request.method_string().size());
        if (auto reply = backend_.admin(method, path, request.body(), activity())) {
            HttpResponse response = text_response(reply->status, std::move(reply->body));
            response.set(bhttp::field::content_type, reply->content_type);
            return response;
        }
        std::string endpoints =
            "GET /metrics, GET /admin/sessions, DELETE /admin/sessions/ID, POST "
            "/admin/sessions/ID/rewind";
        for (const std::string& endpoint : backend_.admin_endpoints()) {
            endpoints += ", " + endpoint;
        }
        return text_response(404, "Not found. Operator endpoints: " + endpoints + ".\n");
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
    // When a tenant's token last let a request in on /mcp (the start before one).
    std::atomic<Clock::rep> last_request_{Clock::now().time_since_epoch().count()};
    Metrics metrics_;
    SessionTable sessions_{options_, metrics_};
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
