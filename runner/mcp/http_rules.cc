#include "runner/mcp/http_rules.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <random>

#include "common/crypto.h"

namespace stockade::mcp::http {

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

bool all_digits(std::string_view text) {
    return !text.empty() && text.size() <= 5 &&
           std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The name of "name[:port]" or "[v6][:port]", lower case; nullopt when malformed.
std::optional<std::string> host_name(std::string_view authority) {
    if (authority.empty()) {
        return std::nullopt;
    }
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        std::string_view rest = authority.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) {
            return std::nullopt;
        }
        return lower(authority.substr(1, close - 1));
    }
    const auto colon = authority.find(':');
    if (colon != std::string_view::npos) {
        if (authority.find(':', colon + 1) != std::string_view::npos ||
            !all_digits(authority.substr(colon + 1))) {
            return std::nullopt;
        }
        authority = authority.substr(0, colon);
    }
    if (authority.empty()) {
        return std::nullopt;
    }
    return lower(authority);
}

bool is_loopback_name(std::string_view name) {
    if (name == "localhost" || name == "::1") {
        return true;
    }
    // 127.0.0.0/8 written as a dotted quad.
    if (!name.starts_with("127.")) {
        return false;
    }
    int parts = 0;
    for (std::size_t start = 0; start <= name.size();) {
        auto dot = name.find('.', start);
        if (dot == std::string_view::npos) {
            dot = name.size();
        }
        std::string_view part = name.substr(start, dot - start);
        unsigned value = 0;
        auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || part.size() > 3 || ec != std::errc() ||
            end != part.data() + part.size() || value > 255) {
            return false;
        }
        ++parts;
        start = dot + 1;
    }
    return parts == 4;
}

bool listed(const std::vector<std::string>& list, std::string_view value) {
    return std::any_of(list.begin(), list.end(),
                       [&](const std::string& entry) { return iequals(entry, value); });
}

}  // namespace

bool host_allowed(std::string_view host, const HostRules& rules) {
    host = trim_ows(host);
    if (!rules.loopback) {
        return true;
    }
    auto name = host_name(host);
    return name.has_value() && (is_loopback_name(*name) || listed(rules.hosts, host));
}

bool origin_allowed(std::string_view origin, const HostRules& rules) {
    origin = trim_ows(origin);
    if (origin.empty()) {
        return true;
    }
    while (origin.size() > 1 && origin.back() == '/') {
        origin.remove_suffix(1);
    }
    if (listed(rules.origins, origin)) {
        return true;
    }
    if (!rules.loopback) {
        return false;
    }
    const auto scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos) {
        return false;  // "null" and anything else that names no site
    }
    const std::string scheme = lower(origin.substr(0, scheme_end));
    if (scheme != "http" && scheme != "https") {
        return false;
    }
    auto name = host_name(origin.substr(scheme_end + 3));
    return name.has_value() && is_loopback_name(*name);
}

Accepts parse_accept(std::string_view accept) {
    accept = trim_ows(accept);
    if (accept.empty()) {
        return {.json = true, .event_stream = true};
    }
    Accepts out;
    while (!accept.empty()) {
        const auto comma = accept.find(',');
        std::string_view range = accept.substr(0, comma);
        accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
        std::string_view params;
        if (const auto semi = range.find(';'); semi != std::string_view::npos) {
            params = range.substr(semi + 1);
            range = range.substr(0, semi);
        }
        const std::string type = lower(trim_ows(range));
        // "q=0" means "not acceptable".
        const std::string p = lower(params);
        if (const auto q = p.find("q=");
            q != std::string::npos && std::strtod(p.c_str() + q + 2, nullptr) <= 0.0) {
            continue;
        }
        if (type == "*/*") {
            out.json = out.event_stream = true;
        } else if (type == "application/json" || type == "application/*") {
            out.json = true;
        } else if (type == "text/event-stream" || type == "text/*") {
            out.event_stream = true;
        }
    }
    return out;
}

std::optional<std::string> bearer_token(std::string_view authorization) {
    authorization = trim_ows(authorization);
    constexpr std::string_view kScheme = "bearer";
    if (authorization.size() <= kScheme.size() ||
        !iequals(authorization.substr(0, kScheme.size()), kScheme) ||
        (authorization[kScheme.size()] != ' ' && authorization[kScheme.size()] != '\t')) {
        return std::nullopt;
    }
    std::string_view token = trim_ows(authorization.substr(kScheme.size()));
    if (token.empty() || std::any_of(token.begin(), token.end(),
                                     [](unsigned char c) { return c <= ' ' || c == 0x7f; })) {
        return std::nullopt;
    }
    return std::string(token);
}

std::optional<std::string> request_name(const jsonrpc::Request& request) {
    const char* key = nullptr;
    if (request.method == "tools/call" || request.method == "prompts/get") {
        key = "name";
    } else if (request.method == "resources/read" || request.method == "resources/subscribe" ||
               request.method == "resources/unsubscribe") {
        key = "uri";
    } else {
        return std::nullopt;
    }
    if (!request.params.is_object()) {
        return std::nullopt;
    }
    auto it = request.params.find(key);
    if (it == request.params.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

std::optional<std::string> modern_header_mismatch(std::optional<std::string_view> protocol_header,
                                                  std::optional<std::string_view> method_header,
                                                  std::optional<std::string_view> name_header,
                                                  std::string_view protocol_version,
                                                  const jsonrpc::Request& request) {
    auto check = [](std::optional<std::string_view> header, std::string_view header_name,
                    std::string_view expected,
                    std::string_view what) -> std::optional<std::string> {
        if (!header.has_value()) {
            return "the " + std::string(header_name) + " header is missing; it must be \"" +
                   std::string(expected) + "\" (" + std::string(what) + ")";
        }
        if (trim_ows(*header) != expected) {
            return "the " + std::string(header_name) + " header is \"" +
                   std::string(trim_ows(*header)) + "\" but " + std::string(what) + " is \"" +
                   std::string(expected) + "\"";
        }
        return std::nullopt;
    };
    if (auto bad = check(protocol_header, "MCP-Protocol-Version", protocol_version,
                         "the protocol version in params._meta")) {
        return bad;
    }
    if (auto bad = check(method_header, "Mcp-Method", request.method, "the body's method")) {
        return bad;
    }
    if (auto name = request_name(request)) {
        return check(name_header, "Mcp-Name", *name,
                     request.method.starts_with("resources/") ? "params.uri" : "params.name");
    }
    return std::nullopt;
}

unsigned error_status(int code, bool modern) {
    if (!modern) {
        return 200;
    }
    switch (static_cast<jsonrpc::ErrorCode>(code)) {
        case jsonrpc::ErrorCode::kMethodNotFound:
            return 404;
        case jsonrpc::ErrorCode::kInternalError:
            return 500;
        default:
            // Every other code the JSON-RPC and MCP specifications reserve names a request the
            // client must change; a code of the application's own is a normal answer.
            return code >= -32768 && code <= -32000 ? 400 : 200;
    }
}

std::string new_session_id() {
    std::array<unsigned char, 32> bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        std::random_device device;  // getrandom cannot fail for 32 bytes on Linux >= 3.17
        for (auto& byte : bytes) {
            byte = static_cast<unsigned char>(device());
        }
    }
    Sha256Digest digest{};
    std::copy(bytes.begin(), bytes.end(), digest.begin());
    return hex(digest);
}

bool is_session_id(std::string_view id) {
    return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::string sse_event(std::string_view id, std::string_view data, unsigned retry_ms) {
    std::string out;
    out.reserve(data.size() + id.size() + 32);
    out += "id: ";
    out += id;
    out += '\n';
    if (retry_ms > 0) {
        out += "retry: " + std::to_string(retry_ms) + "\n";
    }
    // One data line per line of the message (a JSON-RPC message has none, but a raw newline
    // must never end the event early).
    do {
        const auto nl = data.find('\n');
        out += "data: ";
        out += data.substr(0, nl);
        out += '\n';
        data = nl == std::string_view::npos ? std::string_view() : data.substr(nl + 1);
    } while (!data.empty());
    out += '\n';
    return out;
}

std::string event_id(EventId id) {
    return std::to_string(id.stream) + "-" + std::to_string(id.seq);
}

std::optional<EventId> parse_event_id(std::string_view text) {
    text = trim_ows(text);
    const auto dash = text.find('-');
    if (dash == std::string_view::npos) {
        return std::nullopt;
    }
    EventId id;
    auto parse = [](std::string_view part, std::uint64_t& value) {
        auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        return !part.empty() && ec == std::errc() && end == part.data() + part.size();
    };
    if (!parse(text.substr(0, dash), id.stream) || !parse(text.substr(dash + 1), id.seq)) {
        return std::nullopt;
    }
    return id;
}

}  // namespace stockade::mcp::http
