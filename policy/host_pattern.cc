#include "policy/host_pattern.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

namespace stockade::policy {
namespace {

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

std::string lower_copy(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), lower);
    return out;
}

// inet_pton and inet_ntop read and write memory only: no syscall.
std::optional<std::string> canonical_ipv4(const std::string& text) {
    in_addr addr{};
    if (::inet_pton(AF_INET, text.c_str(), &addr) != 1) {
        return std::nullopt;
    }
    std::array<char, INET_ADDRSTRLEN> buf{};
    if (::inet_ntop(AF_INET, &addr, buf.data(), buf.size()) == nullptr) {
        return std::nullopt;
    }
    return std::string(buf.data());
}

std::optional<std::string> canonical_ipv6(const std::string& text) {
    in6_addr addr{};
    if (::inet_pton(AF_INET6, text.c_str(), &addr) != 1) {
        return std::nullopt;
    }
    if (IN6_IS_ADDR_V4MAPPED(&addr)) {
        in_addr v4{};
        std::memcpy(&v4, &addr.s6_addr[12], sizeof v4);
        std::array<char, INET_ADDRSTRLEN> buf{};
        if (::inet_ntop(AF_INET, &v4, buf.data(), buf.size()) == nullptr) {
            return std::nullopt;
        }
        return std::string(buf.data());
    }
    std::array<char, INET6_ADDRSTRLEN> buf{};
    if (::inet_ntop(AF_INET6, &addr, buf.data(), buf.size()) == nullptr) {
        return std::nullopt;
    }
    return std::string(buf.data());
}

bool digits_and_dots(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(),
                                        [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// "443" → 443; anything but 1..65535 in decimal is an error.
Result<uint16_t> parse_port(std::string_view text, std::string_view whole) {
    uint32_t port = 0;
    bool ok = !text.empty() && text.size() <= 5;
    for (char c : text) {
        if (c < '0' || c > '9') {
            ok = false;
            break;
        }
        port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (!ok || port == 0 || port > 65535) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\": the port must be a number from 1 to 65535, got \"{}\"",
                                 whole, text)};
    }
    return static_cast<uint16_t>(port);
}

// Splits "host:port", "[v6]:port", "[v6]" and a bare "v6" (no port: its colons are the
// address's). The host keeps its case and trailing dot; the brackets are removed.
struct Split {
    std::string_view host;
    std::string_view port;  // empty: none
    bool bracketed = false;
};

Result<Split> split_host_port(std::string_view text) {
    if (text.starts_with('[')) {
        const size_t close = text.find(']');
        if (close == std::string_view::npos) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("\"{}\": an IPv6 address in brackets needs its \"]\"", text)};
        }
        const std::string_view rest = text.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("\"{}\": after \"]\" comes \":PORT\" or nothing", text)};
        }
        return Split{.host = text.substr(1, close - 1),
                     .port = rest.empty() ? rest : rest.substr(1),
                     .bracketed = true};
    }
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
        return Split{.host = text, .port = {}, .bracketed = false};  // none, or a bare IPv6
    }
    if (colon + 1 == text.size()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\": a \":\" with no port after it", text)};
    }
    return Split{.host = text.substr(0, colon), .port = text.substr(colon + 1), .bracketed = false};
}

bool valid_label_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A host name as rules write it (lower-cased, trailing dot gone): dot-separated labels of
// letters, digits, '-' and '_'.
bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 253) {
        return false;
    }
    size_t label = 0;
    for (char c : name) {
        if (c == '.') {
            if (label == 0) {
                return false;
            }
            label = 0;
        } else if (valid_label_char(c) && ++label <= 63) {
            continue;
        } else {
            return false;
        }
    }
    return label > 0;
}

std::string_view strip_one_dot(std::string_view host) {
    if (host.size() > 1 && host.back() == '.') {
        host.remove_suffix(1);
    }
    return host;
}

}  // namespace

std::string normalise_host(std::string_view host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    std::string out = lower_copy(strip_one_dot(host));
    if (out.find(':') != std::string::npos) {
        if (auto v6 = canonical_ipv6(out)) {
            return std::move(*v6);
        }
    } else if (digits_and_dots(out)) {
        if (auto v4 = canonical_ipv4(out)) {
            return std::move(*v4);
        }
    }
    return out;
}

bool is_ip_literal(std::string_view host) {
    const std::string text(host);
    in6_addr v6{};
    in_addr v4{};
    return ::inet_pton(AF_INET, text.c_str(), &v4) == 1 ||
           ::inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

Result<HostPort> parse_host_port(std::string_view text) {
    if (text.empty()) {
        return Error{Errc::kInvalidArgument, "an empty host"};
    }
    if (text.find('/') != std::string_view::npos) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is not a host name: write the host alone, as in "
                                 "pypi.org or pypi.org:443",
                                 text)};
    }
    ASSIGN_OR_RETURN(Split split, split_host_port(text));
    HostPort out;
    if (!split.port.empty()) {
        ASSIGN_OR_RETURN(out.port, parse_port(split.port, text));
    }
    if (split.bracketed && !canonical_ipv6(std::string(split.host))) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("\"{}\": \"{}\" in brackets is not an IPv6 address", text, split.host)};
    }
    out.host = normalise_host(split.host);
    if (!is_ip_literal(out.host) && !valid_name(out.host)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is not a host name or an IP address", text)};
    }
    return out;
}

Result<HostPattern> HostPattern::parse(std::string_view spec) {
    const std::string_view written = spec;
    if (spec.starts_with("domain:")) {
        spec.remove_prefix(7);
    }
    if (spec.empty()) {
        return Error{Errc::kInvalidArgument, "an empty host"};
    }
    if (spec.find('/') != std::string_view::npos || spec.find('@') != std::string_view::npos) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is not a host name or a host pattern: write the host "
                                 "alone, as in \"pypi.org\", \"*.github.com\" or \"pypi.org:443\"",
                                 written)};
    }
    ASSIGN_OR_RETURN(Split split, split_host_port(spec));
    HostPattern out;
    if (!split.port.empty()) {
        ASSIGN_OR_RETURN(out.port_, parse_port(split.port, written));
    }
    // One trailing dot is the root, not part of a pattern: "*." is no pattern at all.
    const std::string host =
        lower_copy(split.host == "*." ? split.host : strip_one_dot(split.host));
    if (split.bracketed) {
        auto v6 = canonical_ipv6(host);
        if (!v6) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("\"{}\": \"{}\" in brackets is not an IPv6 address", written,
                                     split.host)};
        }
        out.kind_ = Kind::kExact;
        out.host_ = std::move(*v6);
        return out;
    }
    if (host == "*") {
        out.kind_ = Kind::kAny;
        return out;
    }
    if (host.find(':') != std::string::npos) {
        auto v6 = canonical_ipv6(host);
        if (!v6) {
            return Error{
                Errc::kInvalidArgument,
                fmt::format("\"{}\" is not a host name, a host pattern or an IP address", written)};
        }
        out.kind_ = Kind::kExact;
        out.host_ = std::move(*v6);
        return out;
    }
    std::string_view name = host;
    if (name.starts_with("*.")) {
        out.kind_ = Kind::kSubdomains;
        name.remove_prefix(2);
    } else {
        out.kind_ = Kind::kExact;
    }
    if (name.find('*') != std::string_view::npos) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\": a host pattern is \"*\" (any host) or starts with "
                                 "\"*.\" (any subdomain, as in \"*.github.com\"); no other \"*\"",
                                 written)};
    }
    if (digits_and_dots(name)) {
        if (out.kind_ == Kind::kSubdomains) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("\"{}\": \"*.\" covers the subdomains of a name, not an "
                                     "address",
                                     written)};
        }
        auto v4 = canonical_ipv4(std::string(name));
        if (!v4) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("\"{}\" is not an IPv4 address (four numbers from 0 to 255, "
                                     "as in 10.0.0.1)",
                                     written)};
        }
        out.host_ = std::move(*v4);
        return out;
    }
    if (!valid_name(name)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("\"{}\" is not a host name or a host pattern such as "
                                 "\"*.github.com\" (letters, digits, '-', '_' and dots)",
                                 written)};
    }
    out.host_ = std::string(name);
    if (out.kind_ == Kind::kSubdomains) {
        out.suffix_ = "." + out.host_;
    }
    return out;
}

bool HostPattern::matches_host(std::string_view host) const {
    switch (kind_) {
        case Kind::kAny:
            return true;
        case Kind::kExact:
            return host == host_;
        case Kind::kSubdomains:
            return host.size() > suffix_.size() && host.ends_with(suffix_) && !is_ip_literal(host);
    }
    return false;
}

}  // namespace stockade::policy
