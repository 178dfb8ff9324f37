#include "network/proxy_request.h"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <fmt/format.h>

#include "common/crypto.h"
#include "common/parse.h"
#include "common/quote.h"

namespace stockade::network {
namespace {

namespace http = boost::beast::http;

HeadParse bad(int status, std::string error) {
    HeadParse out;
    out.status = HeadParse::Status::kBad;
    out.http_status = status;
    out.error = std::move(error);
    return out;
}

template <class View>
std::string_view sv(View v) {
    return std::string_view(v.data(), v.size());
}

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                              [](char x, char y) { return lower(x) == lower(y); });
}

// Headers that concern only this hop, client to proxy: never sent on to the origin server.
constexpr std::array<std::string_view, 4> kHopByHop = {"proxy-authorization", "proxy-connection",
                                                       "connection", "keep-alive"};

// "Basic dXNlcjpwdw==" -> ("user", "pw"); nothing for another scheme or a malformed value.
void read_basic_credentials(std::string_view value, ProxyRequest& request) {
    value = trim_ows(value);
    const size_t space = value.find(' ');
    if (space == std::string_view::npos || !iequals(value.substr(0, space), "basic")) {
        return;
    }
    const std::optional<std::string> decoded = base64_decode(trim_ows(value.substr(space + 1)));
    if (!decoded) {
        return;
    }
    const size_t colon = decoded->find(':');
    if (colon == std::string::npos) {  // RFC 7617: user-pass is user-id ":" password
        return;
    }
    request.proxy_user = decoded->substr(0, colon);
    request.proxy_password = decoded->substr(colon + 1);
}

// The absolute-form target of a forwarded request: the authority and the origin-form target.
struct AbsoluteUrl {
    Authority authority;
    std::string origin_target;
};

constexpr std::string_view kNotAbsolute =
    "this is an HTTP proxy: a request names a whole URL (GET http://host/path HTTP/1.1), or is "
    "CONNECT host:port for a tunnel";

Result<AbsoluteUrl> parse_absolute_url(std::string_view target) {
    const size_t scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos) {
        return Error{Errc::kInvalidArgument, fmt::format("the request target {} is not a URL; {}",
                                                         quote(target), kNotAbsolute)};
    }
    const std::string_view scheme = target.substr(0, scheme_end);
    if (iequals(scheme, "https")) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} is an https:// URL: use CONNECT for https (the client "
                                 "encrypts end to end through the tunnel)",
                                 quote(target))};
    }
    if (!iequals(scheme, "http")) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} is not an http:// URL: only http:// is forwarded, and "
                                 "https goes through CONNECT",
                                 quote(target))};
    }
    const std::string_view rest = target.substr(scheme_end + 3);
    const size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
    auto authority = parse_authority(rest.substr(0, authority_end), 80);
    if (!authority) {
        return std::move(authority).error().wrap(fmt::format("the URL {}", quote(target)));
    }
    std::string_view path = rest.substr(authority_end);
    path = path.substr(0, path.find('#'));  // a fragment is the client's own, never sent
    std::string origin_target;
    if (path.empty() || path.front() != '/') {
        origin_target = "/";
    }
    origin_target += path;
    return AbsoluteUrl{.authority = std::move(authority).value(),
                       .origin_target = std::move(origin_target)};
}

}  // namespace

HeadParse parse_proxy_head(std::string_view bytes, size_t max_head) {
    HeadParse out;
    if (bytes.empty()) {
        return out;
    }
    http::request_parser<http::empty_body> parser;
    parser.header_limit(
        static_cast<uint32_t>(std::min<size_t>(max_head, std::numeric_limits<uint32_t>::max())));
    // The body is the proxy's to pass on: no limit here, and the parse stops after the head
    // (eager off), whatever follows it in `bytes`.
    parser.body_limit(boost::none);
    parser.eager(false);
    boost::beast::error_code ec;
    const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec == http::error::need_more) {
        if (bytes.size() >= max_head) {
            return bad(431, fmt::format("the request head is longer than {} bytes", max_head));
        }
        return out;
    }
    // Beast applies its limit to the request line and to the fields apart: the whole head is
    // checked here as well.
    if (ec == http::error::header_limit || (!ec && used > max_head)) {
        return bad(431, fmt::format("the request head is longer than {} bytes", max_head));
    }
    if (ec == http::error::bad_version) {  // also HTTP/2.0: Beast takes 1.0 and 1.1 only
        return bad(400,
                   "malformed request head: the request line does not end in HTTP/1.0 or "
                   "HTTP/1.1");
    }
    if (ec) {
        return bad(400, fmt::format("malformed request head: {}", ec.message()));
    }
    if (!parser.is_header_done()) {
        return out;
    }
    const auto& head = parser.get();

    ProxyRequest& request = out.request;
    request.method = std::string(sv(head.method_string()));
    request.head_size = used;
    if (head.count(http::field::proxy_authorization) > 1) {
        return bad(400, "the request has more than one Proxy-Authorization header");
    }
    if (auto it = head.find(http::field::proxy_authorization); it != head.end()) {
        read_basic_credentials(sv(it->value()), request);
    }

    const std::string_view target = sv(head.target());
    if (request.method == "CONNECT") {
        request.kind = ProxyRequest::Kind::kConnect;
        auto authority = parse_authority(target, 0);
        if (!authority) {
            return bad(400, fmt::format("CONNECT {}", authority.error().message));
        }
        request.target = std::move(authority).value();
        out.status = HeadParse::Status::kDone;
        return out;
    }

    request.kind = ProxyRequest::Kind::kForward;
    if (!target.empty() && (target.front() == '/' || target == "*")) {
        return bad(400, fmt::format("the request target {} is a path, not a URL; {}", quote(target),
                                    kNotAbsolute));
    }
    auto url = parse_absolute_url(target);
    if (!url) {
        return bad(400, std::move(url).error().message);
    }
    request.target = url->authority;
    request.chunked = parser.chunked();
    if (auto length = parser.content_length()) {
        request.content_length = *length;
    }

    // The Host header must name what the URL names: the proxy checks the URL's host against
    // the allowlist, and the origin (or a virtual host in front of it) reads the header.
    if (head.count(http::field::host) > 1) {
        return bad(400, "the request has more than one Host header");
    }
    const auto host_field = head.find(http::field::host);
    if (host_field != head.end()) {
        auto host = parse_authority(trim_ows(sv(host_field->value())), 80);
        if (!host) {
            return bad(400, fmt::format("the Host header: {}", host.error().message));
        }
        if (host->host != request.target.host || host->port != request.target.port) {
            return bad(400, fmt::format("the Host header names {} but the URL names {}",
                                        format_authority(*host, 80),
                                        format_authority(request.target, 80)));
        }
    }

    // The names Connection lists are hop-by-hop too (RFC 9110 §7.6.1).
    std::vector<std::string> connection_names;
    for (const auto& field : head) {
        if (!iequals(sv(field.name_string()), "connection")) {
            continue;
        }
        std::string_view list = sv(field.value());
        while (!list.empty()) {
            const size_t comma = std::min(list.find(','), list.size());
            const std::string_view name = trim_ows(list.substr(0, comma));
            if (!name.empty()) {
                std::string lowered(name);
                std::transform(lowered.begin(), lowered.end(), lowered.begin(), lower);
                connection_names.push_back(std::move(lowered));
            }
            list.remove_prefix(std::min(comma + 1, list.size()));
        }
    }
    const auto hop_by_hop = [&](std::string_view name) {
        const auto same = [&](std::string_view other) {
            return iequals(name, other);
        };
        return std::any_of(kHopByHop.begin(), kHopByHop.end(), same) ||
               std::any_of(connection_names.begin(), connection_names.end(), same);
    };

    std::string& origin = request.origin_head;
    origin =
        fmt::format("{} {} HTTP/1.{}\r\n", request.method, url->origin_target, head.version() % 10);
    if (host_field == head.end()) {
        origin += fmt::format("Host: {}\r\n", format_authority(request.target, 80));
    }
    for (const auto& field : head) {
        const std::string_view name = sv(field.name_string());
        const std::string_view value = sv(field.value());
        if (hop_by_hop(name)) {
            continue;
        }
        // Beast rejects a bare CR or LF in a value and replaces an obs-fold with spaces (as
        // RFC 9112 §5.2 asks of a proxy); checked again because a CRLF here would let a client
        // write its own headers to the origin.
        if (value.find_first_of("\r\n") != std::string_view::npos) {
            return bad(400, fmt::format("the {} header holds a line break", quote(name)));
        }
        origin += fmt::format("{}: {}\r\n", name, value);
    }
    origin += "Connection: close\r\n\r\n";
    out.status = HeadParse::Status::kDone;
    return out;
}

}  // namespace stockade::network
