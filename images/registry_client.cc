#include "images/registry_client.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/ssl.h>

#include "common/crypto.h"
#include "common/log.h"
#include "common/quote.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "common/version.h"
#include "images/auth_challenge.h"

namespace stockade::images {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace urls = boost::urls;
using tcp = asio::ip::tcp;

// Bounds on what a registry may send besides the documents and blobs themselves.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxErrorBody = std::size_t{64} << 10;
constexpr std::size_t kMaxTokenResponse = std::size_t{1} << 20;
constexpr int kMaxRedirects = 5;
constexpr std::size_t kChunk = std::size_t{1} << 20;

constexpr std::string_view kRefNameAnnotation = "org.opencontainers.image.ref.name";

template <class S>
std::string str(const S& view) {
    return std::string(view.data(), view.size());
}

std::shared_ptr<spdlog::logger> logger() {
    static const auto log = log::get("images");
    return log;
}

// An absolute http(s) URL taken apart, with the forms each use needs.
struct Url {
    bool https = true;
    std::string host;  // for resolving and TLS: no brackets around an IPv6 address
    std::string
        authority;  // host[:port] as written (brackets kept): "Host:", and the
                    // insecure_registries entries and reference registries it is compared with
    uint16_t port = 443;
    std::string target;  // path and query, encoded
    // For messages and logs: scheme, authority and path, without the query (a storage
    // redirect's query holds a signature) and without user information.
    std::string display;
};

Result<Url> parse_url(std::string_view text) {
    auto parsed = urls::parse_uri(urls::string_view(text.data(), text.size()));
    if (!parsed) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("URL {}: {}", quote(text), parsed.error().message())};
    }
    const urls::url_view& u = *parsed;
    Url out;
    const std::string scheme = str(u.scheme());
    if (scheme == "https") {
        out.https = true;
    } else if (scheme == "http") {
        out.https = false;
    } else {
        return Error{Errc::kInvalidArgument, fmt::format("URL {}: not http or https", quote(text))};
    }
    if (!u.has_authority() || u.encoded_host().empty()) {
        return Error{Errc::kInvalidArgument, fmt::format("URL {}: no host", quote(text))};
    }
    if (u.has_userinfo()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("URL {}: user information in a URL is not sent", quote(text))};
    }
    out.host = str(u.encoded_host_address());
    out.authority = str(u.encoded_host());
    out.port = out.https ? 443 : 80;
    if (u.has_port()) {
        if (u.port_number() == 0) {
            return Error{Errc::kInvalidArgument, fmt::format("URL {}: bad port", quote(text))};
        }
        out.port = u.port_number();
        out.authority += ":" + str(u.port());
    }
    out.target = str(u.encoded_path());
    if (out.target.empty()) {
        out.target = "/";
    }
    if (u.has_query()) {
        out.target += "?" + str(u.encoded_query());
    }
    out.display = fmt::format("{}://{}{}", scheme, out.authority, str(u.encoded_path()));
    return out;
}

// A Location header resolved against the URL it answered.
Result<Url> resolve_location(std::string_view base, std::string_view location) {
    auto base_view = urls::parse_uri(urls::string_view(base.data(), base.size()));
    auto ref = urls::parse_uri_reference(urls::string_view(location.data(), location.size()));
    if (!base_view || !ref) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("redirect to a malformed location {}", quote(location))};
    }
    urls::url resolved;
    if (auto r = urls::resolve(*base_view, *ref, resolved); !r) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("redirect to a malformed location {}", quote(location))};
    }
    return parse_url(str(resolved.buffer()));
}

std::string full_url(const Url& url) {
    return fmt::format("{}://{}{}", url.https ? "https" : "http", url.authority, url.target);
}

bool is_ip_literal(const std::string& host) {
    boost::system::error_code ec;
    (void)asio::ip::make_address(host, ec);
    return !ec;
}

using Sink = std::function<Status(std::string_view)>;
using Headers = std::vector<std::pair<http::field, std::string>>;

struct Response {
    unsigned status = 0;
    std::string reason;
    std::string content_type;
    std::string location;
    std::string www_authenticate;  // every WWW-Authenticate field, joined with ", "
    std::string docker_content_digest;
    std::string error_body;  // a response that is not 2xx: its first kMaxErrorBody bytes
    uint64_t body_bytes = 0;
};

// What a 2xx response's body must be.
struct BodyBound {
    uint64_t limit = 0;     // more is an error, and reading stops there
    bool exact = false;     // a blob: Content-Length, when sent, must equal `limit`
    std::string_view what;  // "manifest", "blob", for messages
};

// One request on one connection (Connection: close), with a timeout on every step. Thread: the
// caller's; the io_context is run only inside run().
class HttpClient {
public:
    explicit HttpClient(const PullOptions& options) : options_(options) {}

    Status init() {
        try {
            ssl_.set_default_verify_paths();
            if (options_.ca_file) {
                ssl_.load_verify_file(*options_.ca_file);
            }
            ssl_.set_verify_mode(asio::ssl::verify_peer);
            if (SSL_CTX_set_min_proto_version(ssl_.native_handle(), TLS1_2_VERSION) != 1) {
                return Error{Errc::kInternal, "set the lowest TLS version to 1.2"};
            }
        } catch (const boost::system::system_error& e) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("load CA certificates{}: {}",
                                     options_.ca_file ? " \"" + *options_.ca_file + "\"" : "",
                                     e.code().message())};
        }
        return {};
    }

    // `sink` receives a 2xx response's body; any other response's body goes to error_body.
    Result<Response> exchange(http::verb method, const Url& url, const Headers& headers,
                              const std::string& body, const BodyBound& bound, const Sink& sink) {
        ASSIGN_OR_RETURN(tcp::resolver::results_type endpoints, resolve(url));
        http::request<http::string_body> request(method, url.target, 11);
        request.set(http::field::host, url.authority);
        request.set(http::field::user_agent, fmt::format("stockade/{}", kVersion));
        for (const auto& [name, value] : headers) {
            request.set(name, value);
        }
        request.keep_alive(false);
        if (!body.empty()) {
            request.body() = body;
            request.prepare_payload();
        }
        if (url.https) {
            beast::ssl_stream<beast::tcp_stream> stream(ioc_, ssl_);
            RETURN_IF_ERROR(connect(beast::get_lowest_layer(stream), url, endpoints));
            if (!is_ip_literal(url.host)) {
                // SNI: the name the certificate is chosen by.
                // SSL_set_tlsext_host_name, whose macro casts in the old style.
                if (SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                             TLSEXT_NAMETYPE_host_name,
                             const_cast<char*>(url.host.c_str())) != 1) {  // NOLINT
                    return Error{Errc::kInternal, "set the TLS server name"};
                }
            }
            stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
            beast::get_lowest_layer(stream).expires_after(options_.io_timeout);
            auto ec = run([&](auto handler) {
                stream.async_handshake(asio::ssl::stream_base::client, handler);
            });
            if (ec) {
                return Error{
                    ec == beast::error::timeout ? Errc::kDeadlineExceeded : Errc::kUnavailable,
                    fmt::format("TLS handshake with {}: {}. If the registry's "
                                "certificate is from a private CA, add the CA with "
                                "--ca-file; if it serves plain HTTP on this host's loopback, "
                                "name it with --insecure-registry {}",
                                url.authority, ec.message(), url.authority)};
            }
            return transact(stream, request, bound, sink);
        }
        beast::tcp_stream stream(ioc_);
        RETURN_IF_ERROR(connect(stream, url, endpoints));
        return transact(stream, request, bound, sink);
    }

private:
    template <class Init>
    beast::error_code run(Init&& init) {
        beast::error_code result = asio::error::would_block;
        std::forward<Init>(init)([&result](beast::error_code ec, auto&&...) { result = ec; });
        ioc_.restart();
        ioc_.run();
        return result;
    }

    Result<tcp::resolver::results_type> resolve(const Url& url) {
        tcp::resolver resolver(ioc_);
        beast::error_code ec;
        auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
        if (ec) {
            return Error{Errc::kUnavailable,
                         fmt::format("resolve {}: {}. Check the registry's name and this host's "
                                     "DNS",
                                     quote(url.host), ec.message())};
        }
        if (!url.https) {
            // Plain HTTP: only to loopback, where no one else is on the path.
            std::vector<std::string> addresses;
            for (const auto& entry : endpoints) {
                addresses.push_back(entry.endpoint().address().to_string());
            }
            RETURN_IF_ERROR(check_plain_http_addresses(url.authority, addresses));
        }
        return endpoints;
    }

    Status connect(beast::tcp_stream& stream, const Url& url,
                   const tcp::resolver::results_type& endpoints) {
        stream.expires_after(options_.connect_timeout);
        auto ec = run([&](auto handler) { stream.async_connect(endpoints, handler); });
        if (ec) {
            return Error{ec == beast::error::timeout ? Errc::kDeadlineExceeded : Errc::kUnavailable,
                         fmt::format("connect to {}: {}. Check that the registry is up and "
                                     "reachable from this host",
                                     url.authority, ec.message())};
        }
        return {};
    }

    static Error read_error(const beast::error_code& ec, std::string_view step) {
        if (ec == beast::error::timeout) {
            return Error{Errc::kDeadlineExceeded,
                         fmt::format("{}: timed out; the registry stalled", step)};
        }
        if (ec == http::error::header_limit) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("{}: the response header is larger than {} bytes", step,
                                     kMaxHeaderBytes)};
        }
        return Error{Errc::kUnavailable, fmt::format("{}: {}", step, ec.message())};
    }

    template <class Stream>
    Result<Response> transact(Stream& stream, http::request<http::string_body>& request,
                              const BodyBound& bound, const Sink& sink) {
        auto& lowest = beast::get_lowest_layer(stream);
        lowest.expires_after(options_.io_timeout);
        auto ec = run([&](auto handler) { http::async_write(stream, request, handler); });
        if (ec) {
            return read_error(ec, "send the request");
        }
        beast::flat_buffer buffer;
        http::response_parser<http::buffer_body> parser;
        parser.header_limit(kMaxHeaderBytes);
        parser.body_limit(boost::none);  // bounded below, with messages of our own
        lowest.expires_after(options_.io_timeout);
        ec = run([&](auto handler) { http::async_read_header(stream, buffer, parser, handler); });
        if (ec) {
            return read_error(ec, "read the response header");
        }
        Response response;
        const auto& head = parser.get();
        response.status = head.result_int();
        response.reason = str(head.reason());
        response.content_type = str(head[http::field::content_type]);
        response.location = str(head[http::field::location]);
        response.docker_content_digest = str(head["Docker-Content-Digest"]);
        const auto [first, last] = head.equal_range(http::field::www_authenticate);
        for (auto it = first; it != last; ++it) {
            if (!response.www_authenticate.empty()) {
                response.www_authenticate += ", ";
            }
            response.www_authenticate += str(it->value());
        }
        const bool success = response.status >= 200 && response.status < 300;
        if (response.status >= 300 && response.status < 400) {
            return response;  // a redirect: its body is of no use
        }
        const uint64_t limit = success ? bound.limit : kMaxErrorBody;
        if (success && parser.content_length()) {
            const uint64_t announced = *parser.content_length();
            if (announced > bound.limit || (bound.exact && announced != bound.limit)) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("the response announces {} bytes (Content-Length) for "
                                         "a {} of {} bytes",
                                         announced, bound.what, bound.limit)};
            }
        }
        // Beast reads what the socket has into `buffer` and copies it into the chunk: with the
        // buffer at its header's size, a 100 MB blob took 200,000 reads of ~500 bytes.
        buffer.reserve(kChunk);
        std::vector<char> chunk(kChunk);  // on the heap: a megabyte per read
        while (!parser.is_done()) {
            parser.get().body().data = chunk.data();
            parser.get().body().size = chunk.size();
            lowest.expires_after(options_.io_timeout);
            ec = run([&](auto handler) { http::async_read(stream, buffer, parser, handler); });
            if (ec == http::error::need_buffer) {
                ec = {};
            }
            if (ec) {
                return read_error(
                    ec, fmt::format("read the response body after {} bytes", response.body_bytes));
            }
            const std::size_t n = chunk.size() - parser.get().body().size;
            const std::string_view piece(chunk.data(), n);
            if (!success) {
                const std::size_t room = kMaxErrorBody - response.error_body.size();
                response.error_body.append(piece.substr(0, room));
                if (response.error_body.size() >= kMaxErrorBody) {
                    break;  // enough to say what went wrong
                }
                continue;
            }
            response.body_bytes += n;
            if (response.body_bytes > limit) {
                return Error{Errc::kResourceExhausted,
                             fmt::format("the {} is larger than the {} bytes allowed; stopped "
                                         "reading",
                                         bound.what, limit)};
            }
            if (sink && n > 0) {
                RETURN_IF_ERROR(sink(piece));
            }
        }
        return response;
    }

    const PullOptions& options_;
    asio::io_context ioc_;
    asio::ssl::context ssl_{asio::ssl::context::tls_client};
};

// The distribution spec's error body: {"errors":[{"code":"…","message":"…"}]}, as a phrase.
std::string registry_says(std::string_view body) {
    const auto doc = nlohmann::json::parse(body, nullptr, false);
    if (!doc.is_object() || !doc.contains("errors") || !doc["errors"].is_array() ||
        doc["errors"].empty() || !doc["errors"][0].is_object()) {
        return {};
    }
    const auto& first = doc["errors"][0];
    auto text = [&first](const char* key) {
        return first.contains(key) && first[key].is_string() ? first[key].get<std::string>()
                                                             : std::string();
    };
    const std::string code = text("code");
    const std::string message = text("message");
    return fmt::format(" (the registry says {}: {})", quote(code, 40), quote(message, 120));
}

// Files beneath the layout's descriptor, by openat and renameat; names come from parsed digests.
Result<UniqueFd> open_dir_at(int parent, const char* name) {
    if (::mkdirat(parent, name, 0755) != 0 && errno != EEXIST) {
        return errno_error(fmt::format("mkdir \"{}\"", name), errno);
    }
    const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return errno_error(fmt::format("open \"{}\"", name), errno);
    }
    return UniqueFd(fd);
}

Result<UniqueFd> create_temp_at(int dir, const std::string& name) {
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) {
        return errno_error(fmt::format("remove \"{}\"", name), errno);
    }
    const int fd =
        ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return errno_error(fmt::format("create \"{}\"", name), errno);
    }
    return UniqueFd(fd);
}

Status rename_at(int dir, const std::string& from, const std::string& to) {
    if (::renameat(dir, from.c_str(), dir, to.c_str()) != 0) {
        return errno_error(fmt::format("rename \"{}\" to \"{}\"", from, to), errno);
    }
    return {};
}

Status write_file_at(int dir, const std::string& name, std::string_view bytes) {
    const std::string temp = ".tmp-" + name;
    ASSIGN_OR_RETURN(UniqueFd fd, create_temp_at(dir, temp));
    if (auto st = write_all(fd.get(), bytes); !st) {
        (void)::unlinkat(dir, temp.c_str(), 0);
        return st.error().wrap(fmt::format("write \"{}\"", name));
    }
    return rename_at(dir, temp, name);
}

bool is_redirect(unsigned status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

class Puller {
public:
    Puller(const Reference& reference, const PullOptions& options, int layout_dir_fd)
        : ref_(reference), options_(options), layout_fd_(layout_dir_fd), http_(options) {}

    Result<PullResult> pull();

private:
    // GET on the registry: a 401 answered once, redirects followed, any other status an error.
    Result<Response> registry_get(const std::string& path, const Headers& headers,
                                  const BodyBound& bound, const Sink& sink);
    // One request and the redirects it leads to. `auth` goes only to `auth_authority`.
    Result<Response> follow(Url url, http::verb method, const Headers& headers,
                            const std::string& body, const std::string& auth,
                            const std::string& auth_authority, const BodyBound& bound,
                            const Sink& sink);
    Status authenticate(const Response& response, const Url& url);
    Error status_error(const Url& url, const Response& response, std::string_view what) const;
    Status check_scheme(const Url& url) const;

    Result<std::string> get_document(const std::string& path, std::string_view accept,
                                     std::string_view what, uint64_t limit, bool exact,
                                     Response* response);
    Status fetch_blob(const Descriptor& descriptor, int blobs_fd);
    // The URL of a path on the registry, for messages.
    std::string url_of(const std::string& path) const {
        return registry_base_url(ref_, plain_http_) + path;
    }

    const Reference& ref_;
    const PullOptions& options_;
    int layout_fd_;
    HttpClient http_;
    Url base_;
    std::string authorization_;  // the header value for the registry, once authenticated
    bool plain_http_ = false;
    uint64_t bytes_ = 0;
};

Status Puller::check_scheme(const Url& url) const {
    if (url.https) {
        return {};
    }
    if (!insecure_listed(url.authority, options_.insecure_registries)) {
        return Error{Errc::kPolicyDenied,
                     fmt::format("plain HTTP to {} refused: it is not an insecure registry. "
                                 "Serve it over HTTPS, or, for a registry on this host's "
                                 "loopback, name it with --insecure-registry {}",
                                 url.display, url.authority)};
    }
    return {};
}

Result<Response> Puller::follow(Url url, http::verb method, const Headers& headers,
                                const std::string& body, const std::string& auth,
                                const std::string& auth_authority, const BodyBound& bound,
                                const Sink& sink) {
    const bool first_https = url.https;
    for (int redirects = 0;; ++redirects) {
        RETURN_IF_ERROR(check_scheme(url));
        Headers all = headers;
        if (!auth.empty() && url.authority == auth_authority && url.https == first_https) {
            all.emplace_back(http::field::authorization, auth);
        }
        const char* verb = method == http::verb::post ? "POST" : "GET";
        auto response = http_.exchange(method, url, all, body, bound, sink);
        if (!response) {
            return response.error().wrap(fmt::format("{} {}", verb, url.display));
        }
        SPDLOG_LOGGER_DEBUG(logger(), "registry request method={} url={} status={} bytes={}", verb,
                            url.display, response->status, response->body_bytes);
        bytes_ += response->body_bytes;
        if (!is_redirect(response->status)) {
            return response;
        }
        if (redirects == kMaxRedirects) {
            return Error{Errc::kUnavailable,
                         fmt::format("{} {}: more than {} redirects; the registry is "
                                     "misconfigured",
                                     verb, url.display, kMaxRedirects)};
        }
        if (response->location.empty()) {
            return Error{Errc::kUnavailable, fmt::format("{} {}: a redirect ({}) without a "
                                                         "Location",
                                                         verb, url.display, response->status)};
        }
        auto next = resolve_location(full_url(url), response->location);
        if (!next) {
            return next.error().wrap(fmt::format("{} {}", verb, url.display));
        }
        if (first_https && !next->https) {
            return Error{Errc::kPolicyDenied,
                         fmt::format("{} {}: redirected from HTTPS to plain HTTP ({}); refused",
                                     verb, url.display, next->display)};
        }
        url = std::move(*next);
    }
}

Error Puller::status_error(const Url& url, const Response& response, std::string_view what) const {
    const std::string head =
        fmt::format("GET {}: {} {}{}", url.display, response.status, quote(response.reason, 60),
                    registry_says(response.error_body));
    switch (response.status) {
        case 401:
            if (options_.credentials) {
                return Error{Errc::kPermissionDenied,
                             fmt::format("{}: the registry refused the credentials for {}. Check "
                                         "the entry for it in the auth file (--authfile, "
                                         "$REGISTRY_AUTH_FILE), or log in again",
                                         head, ref_.registry)};
            }
            return Error{Errc::kPermissionDenied,
                         fmt::format("{}: the registry wants credentials for {} and none were "
                                     "found. Log in (podman login / docker login) or pass "
                                     "--authfile",
                                     head, ref_.registry)};
        case 403:
            return Error{Errc::kPermissionDenied,
                         fmt::format("{}: access denied; check that these credentials may pull {}",
                                     head, ref_.name())};
        case 404:
            return Error{Errc::kNotFound,
                         fmt::format("{}: no such {}; check the repository and the tag or digest "
                                     "of {}",
                                     head, what, quote(ref_.str()))};
        case 429:
            return Error{Errc::kUnavailable,
                         fmt::format("{}: the registry limits the rate of requests; try again "
                                     "later, or log in for a higher limit",
                                     head)};
        default:
            break;
    }
    return Error{Errc::kUnavailable,
                 fmt::format("{}: the registry failed; try again later, or check that {} is a "
                             "registry (OCI distribution API v2)",
                             head, ref_.registry)};
}

Status Puller::authenticate(const Response& response, const Url& url) {
    if (response.www_authenticate.empty()) {
        return status_error(url, response, "resource").wrap("no WWW-Authenticate challenge");
    }
    auto challenge = parse_registry_challenge(response.www_authenticate);
    if (!challenge) {
        return challenge.error().wrap(fmt::format(
            "GET {}: 401 with a WWW-Authenticate challenge we cannot answer", url.display));
    }
    const auto& credentials = options_.credentials;
    switch (challenge->scheme) {
        case AuthScheme::kBasic:
            if (!credentials || credentials->username.empty()) {
                return status_error(url, response, "resource");
            }
            authorization_ =
                "Basic " + base64_encode(credentials->username + ":" + credentials->password);
            return {};
        case AuthScheme::kBearer:
            break;
    }
    const std::string scope = challenge->scope.empty()
                                  ? fmt::format("repository:{}:pull", ref_.repository)
                                  : challenge->scope;
    ASSIGN_OR_RETURN(const std::string token_url,
                     token_request_url(challenge->realm, challenge->service, scope));
    ASSIGN_OR_RETURN(Url realm, parse_url(token_url));
    std::string body;
    std::string auth;
    http::verb method = http::verb::get;
    Headers headers;
    if (credentials && !credentials->identity_token.empty()) {
        // docker's OAuth2 refresh-token grant: the identity token never goes in a URL.
        method = http::verb::post;
        ASSIGN_OR_RETURN(realm, parse_url(challenge->realm));
        urls::url form("x:");
        form.params().append({"grant_type", "refresh_token"});
        form.params().append({"service", challenge->service});
        form.params().append({"scope", scope});
        form.params().append({"client_id", "stockade"});
        form.params().append({"refresh_token", credentials->identity_token});
        body = str(form.encoded_query());
        headers.emplace_back(http::field::content_type, "application/x-www-form-urlencoded");
    } else if (credentials && !credentials->username.empty()) {
        auth = "Basic " + base64_encode(credentials->username + ":" + credentials->password);
    }
    std::string reply;
    const BodyBound bound{.limit = kMaxTokenResponse, .what = "token response"};
    auto token_response = follow(realm, method, headers, body, auth, realm.authority, bound,
                                 [&reply](std::string_view piece) -> Status {
                                     reply.append(piece);
                                     return {};
                                 });
    if (!token_response) {
        return std::move(token_response).error().wrap("get a registry token");
    }
    if (token_response->status != 200) {
        return status_error(realm, *token_response, "token endpoint").wrap("get a registry token");
    }
    const auto doc = nlohmann::json::parse(reply, nullptr, false);
    std::string token;
    if (doc.is_object()) {
        for (const char* key : {"token", "access_token"}) {
            if (doc.contains(key) && doc[key].is_string() && !doc[key].get<std::string>().empty()) {
                token = doc[key].get<std::string>();
                break;
            }
        }
    }
    if (token.empty() || token.find_first_of("\r\n") != std::string::npos) {
        return Error{Errc::kUnavailable,
                     fmt::format("get a registry token: POST/GET {}: the answer holds no token "
                                 "(a JSON object with \"token\" or \"access_token\"); the token "
                                 "service is misconfigured",
                                 realm.display)};
    }
    authorization_ = "Bearer " + token;
    return {};
}

Result<Response> Puller::registry_get(const std::string& path, const Headers& headers,
                                      const BodyBound& bound, const Sink& sink) {
    ASSIGN_OR_RETURN(Url url, parse_url(registry_base_url(ref_, plain_http_) + path));
    for (int attempt = 0;; ++attempt) {
        ASSIGN_OR_RETURN(Response response, follow(url, http::verb::get, headers, {},
                                                   authorization_, url.authority, bound, sink));
        if (response.status == 401 && attempt == 0) {
            RETURN_IF_ERROR(authenticate(response, url));
            continue;
        }
        if (response.status >= 200 && response.status < 300) {
            return response;
        }
        return status_error(url, response, bound.what);
    }
}

Result<std::string> Puller::get_document(const std::string& path, std::string_view accept,
                                         std::string_view what, uint64_t limit, bool exact,
                                         Response* response) {
    std::string bytes;
    Headers headers;
    if (!accept.empty()) {
        headers.emplace_back(http::field::accept, std::string(accept));
    }
    ASSIGN_OR_RETURN(
        *response,
        registry_get(path, headers, BodyBound{.limit = limit, .exact = exact, .what = what},
                     [&bytes](std::string_view piece) -> Status {
                         bytes.append(piece);
                         return {};
                     }));
    return bytes;
}

Status Puller::fetch_blob(const Descriptor& descriptor, int blobs_fd) {
    const std::string name(descriptor.digest.hex());
    const std::string temp = ".tmp-" + name;
    ASSIGN_OR_RETURN(UniqueFd fd, create_temp_at(blobs_fd, temp));
    DigestVerifier verifier(descriptor.digest, descriptor.size);
    auto fetched = registry_get(blob_path(ref_, descriptor.digest), {},
                                BodyBound{.limit = descriptor.size, .exact = true, .what = "blob"},
                                [&](std::string_view piece) -> Status {
                                    RETURN_IF_ERROR(verifier.update(piece));
                                    return write_all(fd.get(), piece);
                                });
    Status status;
    if (!fetched) {
        status = std::move(fetched).error();  // names the URL, and so the blob
    } else if (auto finished = verifier.finish(); !finished) {
        status = std::move(finished).error().wrap(
            fmt::format("GET {}", url_of(blob_path(ref_, descriptor.digest))));
    }
    if (!status) {
        (void)::unlinkat(blobs_fd, temp.c_str(), 0);
        return std::move(status).error();
    }
    fd.reset();
    return rename_at(blobs_fd, temp, name);
}

Result<PullResult> Puller::pull() {
    RETURN_IF_ERROR(http_.init());
    plain_http_ = insecure_listed(ref_.registry, options_.insecure_registries);
    PullResult result;
    // A layout an earlier pull completed is not one this pull has completed.
    if (::unlinkat(layout_fd_, "index.json", 0) != 0 && errno != ENOENT) {
        return errno_error("pull: remove the layout's old \"index.json\"", errno);
    }

    // 1. The manifest the reference names, which may be an index.
    Response response;
    ASSIGN_OR_RETURN(std::string top,
                     get_document(manifest_path(ref_), manifest_accept(), "manifest",
                                  kMaxDocumentBytes, false, &response));
    const Digest top_digest = Digest::of(top);
    if (ref_.digest && *ref_.digest != top_digest) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("pull {}: {} sent a manifest of digest {}, not the pinned "
                                 "{}; refused. Check the digest, or pull by tag",
                                 ref_.str(), url_of(manifest_path(ref_)), top_digest.str(),
                                 ref_.digest->str())};
    }
    if (!response.docker_content_digest.empty()) {
        auto announced = Digest::parse(response.docker_content_digest);
        if (announced && *announced != top_digest) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("pull {}: {} announces digest {} "
                                     "(Docker-Content-Digest) but sent content of digest {}; "
                                     "refused",
                                     ref_.str(), url_of(manifest_path(ref_)), announced->str(),
                                     top_digest.str())};
        }
    }
    auto document = parse_manifest_document(top, response.content_type);
    if (!document) {
        return document.error().wrap(fmt::format("pull {}: manifest {} from {}", ref_.str(),
                                                 top_digest.str(), url_of(manifest_path(ref_))));
    }
    std::string manifest_bytes = std::move(top);
    Descriptor manifest_descriptor{
        .media_type = "", .digest = top_digest, .size = manifest_bytes.size()};
    std::string manifest_content_type = response.content_type;
    if (auto* index = std::get_if<ImageIndex>(&*document)) {
        // 2. An index: the manifest for our platform, fetched by its digest.
        result.index_digest = top_digest;
        auto chosen = select_manifest(*index, options_.platform);
        if (!chosen) {
            return chosen.error().wrap(fmt::format("pull {}", ref_.str()));
        }
        Reference by_digest = ref_;
        by_digest.digest = chosen->digest;
        ASSIGN_OR_RETURN(manifest_bytes, get_document(manifest_path(by_digest), manifest_accept(),
                                                      "manifest", chosen->size, true, &response));
        const std::string what =
            fmt::format("pull {}: manifest {} for {} from {}", ref_.str(), chosen->digest.str(),
                        options_.platform.str(), url_of(manifest_path(by_digest)));
        if (auto st = verify(manifest_bytes, chosen->digest); !st) {
            return st.error().wrap(what);
        }
        auto inner = parse_manifest_document(manifest_bytes, response.content_type);
        if (!inner) {
            return inner.error().wrap(what);
        }
        if (!std::holds_alternative<ImageManifest>(*inner)) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("pull {}: manifest {} is an index inside an index; "
                                     "refused",
                                     ref_.str(), chosen->digest.str())};
        }
        document = std::move(inner);
        manifest_descriptor = *chosen;
        manifest_descriptor.annotations.clear();
        manifest_descriptor.platform.reset();
        manifest_content_type = response.content_type;
    }
    const auto& manifest = std::get<ImageManifest>(*document);
    if (manifest_descriptor.media_type.empty()) {
        manifest_descriptor.media_type = !manifest.media_type.empty() ? manifest.media_type
                                         : manifest_content_type == media_type::kDockerManifest
                                             ? std::string(media_type::kDockerManifest)
                                             : std::string(media_type::kOciManifest);
    }
    manifest_descriptor.annotations[std::string(kRefNameAnnotation)] =
        ref_.tag ? *ref_.tag : manifest_descriptor.digest.str();

    // 3. The blobs: the manifest, the config, the layers.
    ASSIGN_OR_RETURN(UniqueFd blobs, open_dir_at(layout_fd_, "blobs"));
    ASSIGN_OR_RETURN(UniqueFd sha256, open_dir_at(blobs.get(), "sha256"));
    RETURN_IF_ERROR(
        write_file_at(sha256.get(), std::string(manifest_descriptor.digest.hex()), manifest_bytes));
    auto have = [&](const Digest& digest) {
        return options_.have_blob && options_.have_blob(digest);
    };
    const Descriptor& config = manifest.config;
    if (have(config.digest)) {
        ++result.blobs_skipped;
    } else {
        if (config.size > kMaxDocumentBytes) {
            return Error{
                Errc::kResourceExhausted,
                fmt::format("pull {}: config {} is {} bytes, past the {} allowed", ref_.str(),
                            config.digest.str(), config.size, kMaxDocumentBytes)};
        }
        ASSIGN_OR_RETURN(const std::string config_bytes,
                         get_document(blob_path(ref_, config.digest), {}, "config", config.size,
                                      true, &response));
        const std::string what =
            fmt::format("pull {}: config {} from {}", ref_.str(), config.digest.str(),
                        url_of(blob_path(ref_, config.digest)));
        if (auto st = verify(config_bytes, config.digest); !st) {
            return st.error().wrap(what);
        }
        auto parsed = parse_image_config(config_bytes);
        if (!parsed) {
            return parsed.error().wrap(what);
        }
        if (auto st = check_manifest_config(manifest, *parsed); !st) {
            return st.error().wrap(what);
        }
        if (!platform_matches(parsed->platform, options_.platform)) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{}: the image is for {}, not {}; pull an image built for "
                                     "this host",
                                     what, parsed->platform.str(), options_.platform.str())};
        }
        RETURN_IF_ERROR(
            write_file_at(sha256.get(), std::string(config.digest.hex()), config_bytes));
    }
    std::vector<Digest> fetched;
    for (const auto& layer : manifest.layers) {
        if (have(layer.digest)) {
            ++result.blobs_skipped;
            continue;
        }
        if (std::find(fetched.begin(), fetched.end(), layer.digest) != fetched.end()) {
            continue;  // a layer listed twice
        }
        if (auto st = fetch_blob(layer, sha256.get()); !st) {
            return st.error().wrap(fmt::format("pull {}", ref_.str()));
        }
        fetched.push_back(layer.digest);
    }

    // 4. The layout's own files, last: a layout with an index.json is complete.
    nlohmann::ordered_json entry = {{"mediaType", manifest_descriptor.media_type},
                                    {"digest", manifest_descriptor.digest.str()},
                                    {"size", manifest_descriptor.size},
                                    {"annotations", manifest_descriptor.annotations}};
    const nlohmann::ordered_json index_json = {
        {"schemaVersion", 2},
        {"mediaType", media_type::kOciIndex},
        {"manifests", nlohmann::ordered_json::array({entry})}};
    RETURN_IF_ERROR(write_file_at(layout_fd_, "oci-layout", R"({"imageLayoutVersion":"1.0.0"})"));
    RETURN_IF_ERROR(write_file_at(layout_fd_, "index.json", index_json.dump()));

    result.manifest = std::move(manifest_descriptor);
    result.config_digest = config.digest;
    result.layers = manifest.layers;
    result.bytes_fetched = bytes_;
    SPDLOG_LOGGER_INFO(logger(), "image pulled ref={} manifest={} layers={} bytes={} skipped={}",
                       ref_.str(), result.manifest.digest.str(), result.layers.size(),
                       result.bytes_fetched, result.blobs_skipped);
    return result;
}

}  // namespace

std::string registry_base_url(const Reference& reference, bool plain_http) {
    return fmt::format("{}://{}", plain_http ? "http" : "https",
                       registry_api_host(reference.registry));
}

std::string manifest_path(const Reference& reference) {
    return fmt::format("/v2/{}/manifests/{}", reference.repository, reference.tag_or_digest());
}

std::string blob_path(const Reference& reference, const Digest& digest) {
    return fmt::format("/v2/{}/blobs/{}", reference.repository, digest.str());
}

std::string manifest_accept() {
    return fmt::format("{}, {}, {}, {}", media_type::kOciManifest, media_type::kOciIndex,
                       media_type::kDockerManifest, media_type::kDockerManifestList);
}

Result<std::string> token_request_url(std::string_view realm, std::string_view service,
                                      std::string_view scope) {
    auto parsed = urls::parse_uri(urls::string_view(realm.data(), realm.size()));
    if (!parsed || (parsed->scheme() != "https" && parsed->scheme() != "http") ||
        parsed->encoded_host().empty()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("token realm {}: not an absolute http(s) URL", quote(realm))};
    }
    urls::url url(*parsed);
    url.remove_fragment();
    if (!service.empty()) {
        url.params().append({"service", urls::string_view(service.data(), service.size())});
    }
    if (!scope.empty()) {
        url.params().append({"scope", urls::string_view(scope.data(), scope.size())});
    }
    return str(url.buffer());
}

bool insecure_listed(std::string_view registry,
                     const std::vector<std::string>& insecure_registries) {
    for (const auto& entry : insecure_registries) {
        if (entry == registry) {
            return true;
        }
    }
    return false;
}

Status check_plain_http_addresses(std::string_view authority,
                                  const std::vector<std::string>& addresses) {
    if (addresses.empty()) {
        return Error{Errc::kPolicyDenied,
                     fmt::format("plain HTTP to {} refused: it has no address", authority)};
    }
    for (const auto& text : addresses) {
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(text, ec);
        if (ec || !address.is_loopback()) {
            return Error{Errc::kPolicyDenied,
                         fmt::format("plain HTTP to {} refused: it resolves to {}, which is not "
                                     "a loopback address. Plain HTTP is allowed only to "
                                     "127.0.0.0/8 or ::1; serve the registry over HTTPS "
                                     "(--ca-file for a private CA)",
                                     authority, quote(text, 64))};
        }
    }
    return {};
}

Result<PullResult> pull_to_layout(const Reference& reference, const PullOptions& options,
                                  int layout_dir_fd) {
    Puller puller(reference, options, layout_dir_fd);
    try {
        return puller.pull();
    } catch (const std::exception& e) {
        // Asio and Beast report through error codes here; anything thrown is unexpected.
        return Error{Errc::kInternal, fmt::format("pull {}: {}", reference.str(), e.what())};
    }
}

}  // namespace stockade::images
