#include "runner/cli/sessions_command.h"

#include <sys/un.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "common/parse.h"
#include "common/version.h"
#include "network/address.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/run_command.h"

namespace stockade::runner {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using nlohmann::json;
using Protocol = asio::generic::stream_protocol;
using Stream = beast::basic_stream<Protocol>;

constexpr std::size_t kMaxBody = std::size_t{64} << 20;  // far past any session list
constexpr std::size_t kMaxNesting = 64;
constexpr std::size_t kMaxExcerpt = 200;

bool printable(char c) {
    return c >= 0x20 && c < 0x7f;
}

// `text` as one line of printable ASCII, at most `max` characters: what the server sends is
// shown to a terminal, and must not move its cursor or set its title.
std::string safe_text(std::string_view text, std::size_t max = kMaxExcerpt) {
    std::string out;
    for (char c : text) {
        if (out.size() == max) {
            out += "...";
            break;
        }
        out += printable(c) ? c : '?';
    }
    return out;
}

// The first non-blank line of a body, for an error message.
std::string excerpt(std::string_view body) {
    while (!body.empty()) {
        const auto end = body.find('\n');
        std::string_view line = body.substr(0, end);
        while (!line.empty() &&
               (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
            line.remove_suffix(1);
        }
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
            line.remove_prefix(1);
        }
        if (!line.empty()) {
            return safe_text(line);
        }
        body = end == std::string_view::npos ? std::string_view() : body.substr(end + 1);
    }
    return "";
}

Error invalid(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

// A path segment character that needs no escaping (RFC 3986 unreserved).
bool unreserved(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

std::string percent_encode(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (unreserved(c)) {
            out += c;
        } else {
            out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
        }
    }
    return out;
}

std::chrono::seconds seconds_of(const json& value) {
    constexpr auto kMax = std::numeric_limits<std::chrono::seconds::rep>::max();
    if (value.is_number_unsigned()) {
        const auto n = value.get<std::uint64_t>();
        return std::chrono::seconds(n > static_cast<std::uint64_t>(kMax)
                                        ? kMax
                                        : static_cast<std::chrono::seconds::rep>(n));
    }
    if (value.is_number_integer()) {
        return std::chrono::seconds(std::max<std::int64_t>(0, value.get<std::int64_t>()));
    }
    if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!std::isfinite(d) || d <= 0) {
            return std::chrono::seconds(0);
        }
        // 2^63 is exactly representable; anything at or above it is the largest count.
        return std::chrono::seconds(d >= 9.2233720368547758e18
                                        ? kMax
                                        : static_cast<std::chrono::seconds::rep>(std::floor(d)));
    }
    return std::chrono::seconds(0);
}

std::uint64_t count_of(const json& value) {
    if (value.is_number_unsigned()) {
        return value.get<std::uint64_t>();
    }
    if (value.is_number_integer()) {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(0, value.get<std::int64_t>()));
    }
    if (value.is_number_float()) {
        const double d = value.get<double>();
        return std::isfinite(d) && d > 0 && d < 1.8446744073709552e19
                   ? static_cast<std::uint64_t>(d)
                   : 0;
    }
    return 0;
}

std::string string_of(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& member_or_null(const json& object, const char* key) {
    static const json null_value;
    const auto it = object.find(key);
    return it == object.end() ? null_value : *it;
}

// ---- the HTTP exchange -------------------------------------------------------------------------

struct Reply {
    unsigned status = 0;
    std::string reason;
    std::string content_type;
    std::string body;
};

// Which request failed, so that a status can be told in its terms.
enum class Request { kList, kKill };

// Whom to ask, and with which token.
struct ClientConfig {
    ServerAddress server;
    std::optional<std::string> token;
    std::chrono::milliseconds timeout;
};

// The operator's side of serve --http: one connection per request, each bounded by the
// timeout (to connect, then for the whole answer). Thread: the caller's only.
class AdminClient {
public:
    explicit AdminClient(ClientConfig config)
        : server_(std::move(config.server)),
          token_(std::move(config.token)),
          timeout_(config.timeout) {}

    [[nodiscard]] const ServerAddress& server() const { return server_; }
    [[nodiscard]] bool has_token() const { return token_.has_value(); }

    // `path` is below the server's prefix, e.g. "/admin/sessions". Never throws.
    Result<Reply> request(bhttp::verb verb, const std::string& path) {
        try {
            return exchange(verb, server_.prefix + path);
        } catch (const std::exception& e) {
            const auto method = bhttp::to_string(verb);
            return Error{Errc::kInternal,
                         fmt::format("{} {}{}: {}", std::string(method.data(), method.size()),
                                     server_.url(), path, e.what())};
        }
    }

private:
    // Runs the io_context until the one operation started on it has completed.
    void wait() {
        ioc_.restart();
        ioc_.run();
    }

    Result<std::vector<Protocol::endpoint>> endpoints() {
        std::vector<Protocol::endpoint> out;
        if (server_.unix_socket) {
            out.emplace_back(asio::local::stream_protocol::endpoint(server_.socket_path));
            return out;
        }
        asio::ip::tcp::resolver resolver(ioc_);
        boost::system::error_code ec;
        const auto results = resolver.resolve(server_.host, server_.port, ec);
        if (ec || results.empty()) {
            return Error{Errc::kUnavailable,
                         fmt::format("cannot resolve \"{}\": {}. Check --server (or "
                                     "STOCKADE_SERVER), e.g. http://127.0.0.1:8787",
                                     safe_text(server_.host), ec ? ec.message() : "no address")};
        }
        for (const auto& entry : results) {
            out.emplace_back(entry.endpoint());
        }
        return out;
    }

    [[nodiscard]] std::string timeout_text() const {
        return timeout_.count() % 1000 == 0 ? fmt::format("{} s", timeout_.count() / 1000)
                                            : fmt::format("{} ms", timeout_.count());
    }

    [[nodiscard]] std::string not_running_hint() const {
        return fmt::format(
            "is stockade serve --http running at {}? Give its address with --server URL or "
            "STOCKADE_SERVER",
            server_.url());
    }

    [[nodiscard]] Error connect_error(const boost::system::error_code& ec) const {
        const std::string where = server_.url();
        if (ec == beast::error::timeout) {
            return Error{Errc::kDeadlineExceeded,
                         fmt::format("cannot connect to {}: no answer within {}: {}", where,
                                     timeout_text(), not_running_hint())};
        }
        const int err = ec.category() == boost::system::system_category() ? ec.value() : 0;
        const std::string cause = err != 0 ? errno_string(err) : ec.message();
        if (err == EACCES || err == EPERM) {
            return Error{Errc::kPermissionDenied,
                         fmt::format("cannot connect to {}: {}: run this as a user who may open "
                                     "the socket (its owner, or root)",
                                     where, cause)};
        }
        if (server_.unix_socket && err == ENOENT) {
            return Error{Errc::kUnavailable,
                         fmt::format("cannot connect to {}: no socket there: {}", where,
                                     not_running_hint())};
        }
        return Error{Errc::kUnavailable,
                     fmt::format("cannot connect to {}: {}: {}", where, cause, not_running_hint())};
    }

    [[nodiscard]] Error read_error(const boost::system::error_code& ec) const {
        const std::string where = server_.url();
        if (ec == beast::error::timeout) {
            return Error{Errc::kDeadlineExceeded,
                         fmt::format("{} did not answer within {} ms: is it stockade serve "
                                     "--http, and not overloaded?",
                                     where, timeout_text())};
        }
        if (ec == bhttp::error::body_limit) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("{} answered with more than {} MiB: is it stockade serve "
                                     "--http?",
                                     where, kMaxBody >> 20)};
        }
        if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
            ec == asio::error::connection_reset || ec == bhttp::error::partial_message) {
            return Error{Errc::kUnavailable,
                         fmt::format("{} closed the connection without a whole answer ({}): is "
                                     "it stockade serve --http?",
                                     where, ec.message())};
        }
        if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category()) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("{} did not answer in HTTP ({}): is it stockade serve "
                                     "--http, and not a TLS port or another service?",
                                     where, ec.message())};
        }
        return Error{Errc::kUnavailable,
                     fmt::format("read the answer of {}: {}", where, ec.message())};
    }

    Result<Reply> exchange(bhttp::verb verb, const std::string& target) {
        ASSIGN_OR_RETURN(std::vector<Protocol::endpoint> candidates, endpoints());
        Stream stream(ioc_);
        boost::system::error_code ec;
        for (const auto& endpoint : candidates) {
            stream.expires_after(timeout_);
            stream.async_connect(endpoint, [&ec](const boost::system::error_code& e) { ec = e; });
            wait();
            if (!ec) {
                break;
            }
            boost::system::error_code ignored;
            stream.socket().close(ignored);
        }
        if (ec) {
            return connect_error(ec);
        }

        bhttp::request<bhttp::empty_body> request{verb, target, 11};
        request.set(bhttp::field::host, server_.host_header());
        request.set(bhttp::field::user_agent, fmt::format("stockade/{}", kVersion));
        request.set(bhttp::field::accept, "application/json, text/plain");
        if (token_) {
            request.set(bhttp::field::authorization, "Bearer " + *token_);
        }
        request.keep_alive(false);
        request.prepare_payload();
        stream.expires_after(timeout_);
        bhttp::async_write(stream, request,
                           [&ec](const boost::system::error_code& e, std::size_t) { ec = e; });
        wait();
        if (ec) {
            return read_error(ec);
        }

        beast::flat_buffer buffer;
        bhttp::response_parser<bhttp::string_body> parser;
        parser.body_limit(kMaxBody);
        bhttp::async_read(stream, buffer, parser,
                          [&ec](const boost::system::error_code& e, std::size_t) { ec = e; });
        wait();
        if (ec) {
            return read_error(ec);
        }
        boost::system::error_code ignored;
        stream.socket().shutdown(Protocol::socket::shutdown_both, ignored);
        auto& message = parser.get();
        const auto content_type = message[bhttp::field::content_type];
        return Reply{
            .status = message.result_int(),
            .reason = std::string(message.reason().data(), message.reason().size()),
            .content_type = std::string(content_type.data(), content_type.size()),
            .body = std::move(message.body()),
        };
    }

    const ServerAddress server_;
    const std::optional<std::string> token_;
    const std::chrono::milliseconds timeout_;
    asio::io_context ioc_;
};

// A non-2xx answer, told as what the operator should do about it.
Error status_error(const AdminClient& client, const Reply& reply, Request request) {
    const std::string where = client.server().url();
    const std::string said = excerpt(reply.body);
    const std::string status = fmt::format("{} {}", reply.status, safe_text(reply.reason, 60));
    switch (reply.status) {
        case 401:
            if (!client.has_token()) {
                return Error{Errc::kPermissionDenied,
                             fmt::format("{} needs the admin token ({}): give --admin-token-file "
                                         "FILE (the file holding the token, not its hash) or set "
                                         "STOCKADE_ADMIN_TOKEN",
                                         where, status)};
            }
            return Error{Errc::kPermissionDenied,
                         fmt::format("the admin token was refused ({}): give the token whose hash "
                                     "is in serve's --admin-token-file (serve started without "
                                     "that flag refuses every one)",
                                     status)};
        case 403:
            return Error{Errc::kPermissionDenied,
                         fmt::format("{} refused the request ({}{}{}): give --server the address "
                                     "serve listens on (on a loopback bind, 127.0.0.1:PORT or "
                                     "localhost:PORT), or start serve with --allowed-host",
                                     where, status, said.empty() ? "" : ": ", said)};
        case 404:
            if (request == Request::kList) {
                return Error{Errc::kNotFound,
                             fmt::format("{} has no {}/admin/sessions ({}): is it stockade serve "
                                         "--http, and is the URL's path right?",
                                         where, client.server().prefix, status)};
            }
            return Error{Errc::kNotFound, "no such session"};
        default:
            break;
    }
    return Error{Errc::kUnavailable, said.empty()
                                         ? fmt::format("{} answered {}", where, status)
                                         : fmt::format("{} answered {}: {}", where, status, said)};
}

// --server, $STOCKADE_SERVER or the default; the token from --admin-token-file or
// $STOCKADE_ADMIN_TOKEN, or none.
Result<ClientConfig> make_client(const SessionsOptions& options) {
    std::string server = options.server;
    std::string_view server_from = "--server";
    if (server.empty()) {
        // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, before any thread
        if (const char* env = std::getenv("STOCKADE_SERVER"); env != nullptr && *env != '\0') {
            server = env;
            server_from = "STOCKADE_SERVER";
        } else {
            server = std::string(kDefaultServer);
        }
    }
    auto address = parse_server_url(server);
    if (!address) {
        return invalid(
            fmt::format("{} \"{}\": {}", server_from, safe_text(server), address.error().message));
    }
    std::optional<std::string> token;
    if (!options.admin_token_file.empty()) {
        std::ifstream in(options.admin_token_file);
        if (!in) {
            return invalid(fmt::format("--admin-token-file {}: {}", options.admin_token_file,
                                       errno_string(errno)));
        }
        std::ostringstream text;
        text << in.rdbuf();
        auto parsed = admin_token_from_text(text.str());
        if (!parsed) {
            return invalid(fmt::format("--admin-token-file {}: {}", options.admin_token_file,
                                       parsed.error().message));
        }
        token = std::move(*parsed);
        // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, before any thread
    } else if (const char* env = std::getenv("STOCKADE_ADMIN_TOKEN"); env != nullptr) {
        auto parsed = admin_token_from_text(env);
        if (!parsed) {
            return invalid("STOCKADE_ADMIN_TOKEN: " + parsed.error().message);
        }
        token = std::move(*parsed);
    }
    return ClientConfig{
        .server = std::move(*address), .token = std::move(token), .timeout = options.timeout};
}

}  // namespace

// ---- pure parts
// ----------------------------------------------------------------------------------

std::string ServerAddress::url() const {
    if (unix_socket) {
        return "unix:" + socket_path;
    }
    const bool v6 = host.find(':') != std::string::npos;
    return fmt::format("http://{}{}{}:{}{}", v6 ? "[" : "", host, v6 ? "]" : "", port, prefix);
}

std::string ServerAddress::host_header() const {
    if (unix_socket) {
        return "localhost";
    }
    const bool v6 = host.find(':') != std::string::npos;
    return fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

Result<ServerAddress> parse_server_url(std::string_view text) {
    text = trim(text);
    ServerAddress out;
    if (text.starts_with("unix:")) {
        std::string_view path = text.substr(5);
        if (path.starts_with("///")) {
            path.remove_prefix(2);  // unix:///run/x.sock
        }
        if (path.empty()) {
            return invalid("give the socket's path, e.g. unix:/run/stockade.sock");
        }
        if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
            return invalid(fmt::format("a unix socket path is at most {} bytes",
                                       sizeof(sockaddr_un{}.sun_path) - 1));
        }
        if (!std::all_of(path.begin(), path.end(), printable)) {
            return invalid("the socket path has a control character");
        }
        out.unix_socket = true;
        out.socket_path = std::string(path);
        return out;
    }
    std::string_view rest = text;
    if (const auto scheme = rest.find("://"); scheme != std::string_view::npos) {
        std::string lower(rest.substr(0, scheme));
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
        if (lower == "https") {
            return invalid(
                "https is not spoken here: serve --http speaks plain HTTP behind your TLS "
                "proxy; give its own address, e.g. http://127.0.0.1:8787 or unix:/PATH");
        }
        if (lower != "http") {
            return invalid("give http://HOST:PORT or unix:/PATH");
        }
        rest.remove_prefix(scheme + 3);
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path =
        slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (authority.find('@') != std::string_view::npos) {
        return invalid("user:password@ is not used: the admin token goes in --admin-token-file");
    }
    // The host and port as the proxy reads an authority (network/address): one parser.
    auto parsed = network::parse_authority(authority, /*default_port=*/80);
    if (!parsed) {
        return invalid(parsed.error().message + "; e.g. http://127.0.0.1:8787");
    }
    out.host = std::move(parsed->host);
    out.port = std::to_string(parsed->port);
    if (path.find_first_of("?#") != std::string_view::npos) {
        return invalid("give the server's address without a query or fragment");
    }
    if (!std::all_of(path.begin(), path.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
        return invalid("the URL's path has a blank or a control character");
    }
    while (path.ends_with("/")) {
        path.remove_suffix(1);
    }
    if (path.ends_with("/mcp")) {
        path.remove_suffix(4);  // the URL serve prints: its operator endpoints are beside /mcp
    }
    out.prefix = std::string(path);
    return out;
}

Result<std::string> admin_token_from_text(std::string_view text) {
    const std::string_view line = trim(text.substr(0, text.find('\n')));
    if (line.empty()) {
        return invalid(
            "no token on the first line: put the admin token there (the one whose "
            "hash is in serve's --admin-token-file)");
    }
    if (line.starts_with("#")) {
        return invalid(
            "this looks like serve's hash file (it starts with a comment): give a "
            "file that holds the token itself, whose hash serve has");
    }
    if (!std::all_of(line.begin(), line.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
        return invalid("the token has a blank or a character outside printable ASCII");
    }
    return std::string(line);
}

Result<std::vector<SessionRow>> parse_sessions(std::string_view body) {
    if (json_nesting_depth(body, kMaxNesting) > kMaxNesting) {
        return invalid(
            fmt::format("not a session list: nested deeper than {} levels", kMaxNesting));
    }
    const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return invalid(fmt::format("not JSON: \"{}\"", excerpt(body)));
    }
    if (!doc.is_object() || !doc.contains("sessions") || !doc.at("sessions").is_array()) {
        return invalid("not a session list: no \"sessions\" array");
    }
    std::vector<SessionRow> rows;
    const json& sessions = doc.at("sessions");
    for (std::size_t i = 0; i < sessions.size(); ++i) {
        const json& session = sessions.at(i);
        if (!session.is_object()) {
            return invalid(fmt::format("not a session list: sessions[{}] is not an object", i));
        }
        rows.push_back(SessionRow{
            .id = string_of(session, "id"),
            .tenant = string_of(session, "tenant"),
            .log_id = string_of(session, "log_id"),
            .age = seconds_of(member_or_null(session, "age_seconds")),
            .idle = seconds_of(member_or_null(session, "idle_seconds")),
            .calls_made = count_of(member_or_null(session, "calls_made")),
            .running = count_of(member_or_null(session, "calls")),
        });
    }
    return rows;
}

std::string format_duration(std::chrono::seconds duration) {
    const std::int64_t s = duration.count();
    if (s <= 0) {
        return "0s";
    }
    if (s < 60) {
        return fmt::format("{}s", s);
    }
    if (s < 3600) {
        return fmt::format("{}m{:02}s", s / 60, s % 60);
    }
    if (s < 86400) {
        return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
    }
    return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string format_sessions_table(std::vector<SessionRow> rows) {
    if (rows.empty()) {
        return "";
    }
    std::sort(rows.begin(), rows.end(), [](const SessionRow& a, const SessionRow& b) {
        return std::tie(a.tenant, a.age, a.id) < std::tie(b.tenant, b.age, b.id);
    });
    constexpr std::size_t kColumns = 7;
    std::vector<std::array<std::string, kColumns>> cells;
    cells.push_back({"ID", "TENANT", "LOG", "AGE", "IDLE", "CALLS", "RUNNING"});
    for (const SessionRow& row : rows) {
        cells.push_back({safe_text(row.id, 128), safe_text(row.tenant, 64),
                         row.log_id.empty() ? std::string("-") : safe_text(row.log_id, 64),
                         format_duration(row.age), format_duration(row.idle),
                         std::to_string(row.calls_made), std::to_string(row.running)});
    }
    std::array<std::size_t, kColumns> width{};
    for (const auto& line : cells) {
        for (std::size_t c = 0; c < kColumns; ++c) {
            width.at(c) = std::max(width.at(c), line.at(c).size());
        }
    }
    std::string out;
    for (const auto& line : cells) {
        for (std::size_t c = 0; c + 1 < kColumns; ++c) {
            out += line.at(c);
            out.append(width.at(c) - line.at(c).size() + 2, ' ');
        }
        out += line.back();
        out += '\n';
    }
    return out;
}

// ---- the commands
// --------------------------------------------------------------------------------

int sessions_list_command(const SessionsOptions& options) {
    constexpr std::string_view kWho = "stockade sessions list";
    auto config = make_client(options);
    if (!config) {
        fmt::print(stderr, "{}: {}\n", kWho, config.error().message);
        return kExitUsage;
    }
    AdminClient client(std::move(*config));
    auto reply = client.request(bhttp::verb::get, "/admin/sessions");
    if (!reply) {
        fmt::print(stderr, "{}: {}\n", kWho, reply.error().message);
        return 1;
    }
    if (reply->status != 200) {
        fmt::print(stderr, "{}: {}\n", kWho, status_error(client, *reply, Request::kList).message);
        return 1;
    }
    auto rows = parse_sessions(reply->body);
    if (!rows) {
        const std::string type = reply->content_type.empty()
                                     ? std::string()
                                     : " (Content-Type " + safe_text(reply->content_type, 80) + ")";
        fmt::print(stderr,
                   "{}: {} answered GET {}/admin/sessions with something else than the sessions: "
                   "{}{}. Is it stockade serve --http?\n",
                   kWho, client.server().url(), client.server().prefix, rows.error().message, type);
        return 1;
    }
    if (options.json) {
        fmt::print("{}{}", reply->body, reply->body.ends_with('\n') ? "" : "\n");
        return 0;
    }
    if (rows->empty()) {
        fmt::print(stderr, "no sessions open on {}\n", client.server().url());
        return 0;
    }
    fmt::print("{}", format_sessions_table(std::move(*rows)));
    return 0;
}

int sessions_kill_command(const SessionsOptions& options) {
    constexpr std::string_view kWho = "stockade sessions kill";
    auto config = make_client(options);
    if (!config) {
        fmt::print(stderr, "{}: {}\n", kWho, config.error().message);
        return kExitUsage;
    }
    AdminClient client(std::move(*config));
    int status = 0;
    for (std::size_t i = 0; i < options.ids.size(); ++i) {
        const std::string& id = options.ids[i];
        const std::string shown = safe_text(id, 128);
        auto reply = client.request(bhttp::verb::delete_, "/admin/sessions/" + percent_encode(id));
        if (reply && (reply->status == 200 || reply->status == 202 || reply->status == 204)) {
            fmt::print("ended session {}\n", shown);
            continue;
        }
        status = 1;
        const Error error = reply ? status_error(client, *reply, Request::kKill) : reply.error();
        if (error.code == Errc::kNotFound) {
            fmt::print(stderr, "no session {} on this server\n", shown);
            continue;
        }
        // The connection, the token or the Host: no other id would fare better.
        if (!reply || error.code == Errc::kPermissionDenied) {
            const std::size_t untried = options.ids.size() - i - 1;
            fmt::print(stderr, "{}: {}{}\n", kWho, error.message,
                       untried == 0 ? std::string()
                                    : fmt::format(" ({} more id{} not tried)", untried,
                                                  untried == 1 ? "" : "s"));
            break;
        }
        fmt::print(stderr, "session {}: {}\n", shown, error.message);
    }
    return status;
}

}  // namespace stockade::runner
