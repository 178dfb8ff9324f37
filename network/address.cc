#include "network/address.h"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "common/quote.h"

namespace stockade::network {
namespace {

namespace ip = boost::asio::ip;

constexpr uint32_t v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return (uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | uint32_t{d};
}

// Whether `value` lies in prefix/len (len in 1..32).
constexpr bool in_v4(uint32_t value, uint32_t prefix, int len) {
    const uint32_t mask = ~uint32_t{0} << (32 - len);
    return (value & mask) == (prefix & mask);
}

std::optional<std::string_view> v4_reason(uint32_t a) {
    // Most specific first: the metadata address before link-local, the broadcast address before
    // 240/4, the unspecified address before 0/8.
    if (a == 0) {
        return "the unspecified address";
    }
    if (in_v4(a, v4(0, 0, 0, 0), 8)) {
        return "a \"this network\" address (0.0.0.0/8)";
    }
    if (in_v4(a, v4(10, 0, 0, 0), 8) || in_v4(a, v4(172, 16, 0, 0), 12) ||
        in_v4(a, v4(192, 168, 0, 0), 16)) {
        return "a private address (RFC 1918)";
    }
    if (in_v4(a, v4(100, 64, 0, 0), 10)) {
        return "a carrier-grade NAT address (100.64.0.0/10)";
    }
    if (in_v4(a, v4(127, 0, 0, 0), 8)) {
        return "a loopback address";
    }
    if (a == v4(169, 254, 169, 254)) {
        return "the cloud metadata address";
    }
    if (in_v4(a, v4(169, 254, 0, 0), 16)) {
        return "a link-local address (cloud metadata lives there)";
    }
    if (in_v4(a, v4(192, 0, 0, 0), 24)) {
        return "a reserved address (IETF protocol assignments, 192.0.0.0/24)";
    }
    if (in_v4(a, v4(192, 0, 2, 0), 24) || in_v4(a, v4(198, 51, 100, 0), 24) ||
        in_v4(a, v4(203, 0, 113, 0), 24)) {
        return "a documentation address (TEST-NET)";
    }
    if (in_v4(a, v4(198, 18, 0, 0), 15)) {
        return "a benchmarking address (198.18.0.0/15)";
    }
    if (in_v4(a, v4(224, 0, 0, 0), 4)) {
        return "a multicast address";
    }
    if (a == v4(255, 255, 255, 255)) {
        return "the broadcast address";
    }
    if (in_v4(a, v4(240, 0, 0, 0), 4)) {
        return "a reserved address (240.0.0.0/4)";
    }
    return std::nullopt;
}

using V6Bytes = ip::address_v6::bytes_type;

// Whether the first `len` bits of `b` equal those of `prefix` (given as up to 16 leading bytes).
bool in_v6(const V6Bytes& b, std::initializer_list<uint8_t> prefix, int len) {
    int bit = 0;
    for (uint8_t byte : prefix) {
        if (bit >= len) {
            break;
        }
        const int take = std::min(8, len - bit);
        const auto mask = static_cast<uint8_t>(0xff << (8 - take));
        if ((b[static_cast<size_t>(bit / 8)] & mask) != (byte & mask)) {
            return false;
        }
        bit += take;
    }
    return true;
}

bool zero_bytes(const V6Bytes& b, size_t from, size_t to) {
    return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(from),
                       b.begin() + static_cast<std::ptrdiff_t>(to),
                       [](uint8_t x) { return x == 0; });
}

uint32_t v4_at(const V6Bytes& b, size_t at) {
    return v4(b[at], b[at + 1], b[at + 2], b[at + 3]);
}

std::optional<std::string_view> v6_reason(const ip::address_v6& address) {
    const V6Bytes b = address.to_bytes();
    if (address.is_unspecified()) {
        return "the unspecified address";
    }
    if (address.is_loopback()) {
        return "a loopback address";
    }
    // Forms that carry an IPv4 address: a connection to them reaches that address (a mapped
    // address through a dual-stack socket, NAT64 and 6to4 through a translator or relay).
    if (zero_bytes(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) {  // ::ffff:a.b.c.d, mapped
        return v4_reason(v4_at(b, 12));
    }
    if (zero_bytes(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
        return v4_reason(v4_at(b, 12));  // ::ffff:0:a.b.c.d, IPv4-translated (SIIT)
    }
    if (zero_bytes(b, 0, 12)) {  // ::a.b.c.d, IPv4-compatible (deprecated)
        return v4_reason(v4_at(b, 12));
    }
    if (in_v6(b, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 96)) {  // 64:ff9b::/96
        return v4_reason(v4_at(b, 12));
    }
    if (in_v6(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48)) {
        return "a local-use NAT64 address (64:ff9b:1::/48)";
    }
    if (in_v6(b, {0x20, 0x02}, 16)) {  // 2002:aabb:ccdd::/48, 6to4
        return v4_reason(v4_at(b, 2));
    }
    // The metadata services of AWS (fd00:ec2::254) and Google Cloud (fd20:ce::254) are unique
    // local addresses; named apart so that the message says what the sandbox was reaching for.
    static const ip::address_v6 aws_metadata = ip::make_address_v6("fd00:ec2::254");
    static const ip::address_v6 google_metadata = ip::make_address_v6("fd20:ce::254");
    if (address == aws_metadata || address == google_metadata) {
        return "the cloud metadata address";
    }
    if (in_v6(b, {0xfe, 0x80}, 10)) {
        return "a link-local address";
    }
    if (in_v6(b, {0xfe, 0xc0}, 10)) {
        return "a site-local address (fec0::/10)";
    }
    if (in_v6(b, {0xfc}, 7)) {
        return "a unique local address (fc00::/7)";
    }
    if (in_v6(b, {0xff}, 8)) {
        return "a multicast address";
    }
    if (in_v6(b, {0x20, 0x01, 0x0d, 0xb8}, 32) || in_v6(b, {0x3f, 0xff}, 20)) {
        return "a documentation address";
    }
    if (in_v6(b, {0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48)) {
        return "a benchmarking address (2001:2::/48)";
    }
    if (in_v6(b, {0x20, 0x01, 0x00}, 23)) {  // Teredo, ORCHID and other non-global assignments
        return "a reserved address (IETF protocol assignments, 2001::/23)";
    }
    if (in_v6(b, {0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64)) {
        return "a discard-only address (100::/64)";
    }
    // Every global unicast address IANA has allocated is in 2000::/3; the rest is reserved.
    if (!in_v6(b, {0x20}, 3)) {
        return "a reserved address";
    }
    return std::nullopt;
}

Error invalid(std::string_view text, std::string_view problem) {
    return Error{Errc::kInvalidArgument, fmt::format("{}: {}", quote(text), problem)};
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// The host and the port text of "host", "host:port", "[v6]" or "[v6]:port".
struct HostPort {
    std::string_view host;
    std::optional<std::string_view> port;
    bool bracketed = false;
};

Result<HostPort> split_host_port(std::string_view text) {
    if (text.empty()) {
        return Error{Errc::kInvalidArgument, "the host is empty"};
    }
    HostPort out;
    if (text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos) {
            return invalid(text, "'[' without ']'");
        }
        out.host = text.substr(1, close - 1);
        out.bracketed = true;
        const std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                return invalid(text, "text after ']' that is not \":port\"");
            }
            out.port = rest.substr(1);
        }
        return out;
    }
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
        out.host = text;
    } else if (text.find(':', colon + 1) != std::string_view::npos) {
        return invalid(text, "an IPv6 address needs brackets, as in [::1]:443");
    } else {
        out.host = text.substr(0, colon);
        out.port = text.substr(colon + 1);
    }
    return out;
}

Result<uint16_t> parse_port(std::string_view whole, std::string_view port) {
    if (port.empty()) {
        return invalid(whole, "the port after ':' is empty");
    }
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit) || ec != std::errc() ||
        ptr != port.data() + port.size() || value == 0 || value > 65535) {
        return invalid(whole,
                       fmt::format("the port {} is not a number from 1 to 65535", quote(port, 16)));
    }
    return static_cast<uint16_t>(value);
}

// IPv6 text inside brackets (or a pin's bare IPv6 address): no zone id, which would name an
// interface of the supervisor's host.
Result<ip::address_v6> parse_v6(std::string_view whole, std::string_view text) {
    if (text.find('%') != std::string_view::npos) {
        return invalid(whole, "an IPv6 zone id ('%') is not allowed");
    }
    boost::system::error_code ec;
    ip::address_v6 a = ip::make_address_v6(std::string(text), ec);
    if (ec) {
        return invalid(whole, fmt::format("{} is not an IPv6 address", quote(text)));
    }
    return a;
}

// Dotted-quad IPv4 only (inet_pton: four decimal parts without leading zeros).
std::optional<ip::address_v4> parse_v4(std::string_view text) {
    if (text.empty() || text.size() > 15) {
        return std::nullopt;
    }
    boost::system::error_code ec;
    ip::address_v4 a = ip::make_address_v4(std::string(text), ec);
    if (ec) {
        return std::nullopt;
    }
    return a;
}

// The rules of normalize_host_name, with the reason a name breaks them.
Result<std::string> check_host_name(std::string_view whole, std::string_view name) {
    if (!name.empty() && name.back() == '.') {
        name.remove_suffix(1);
    }
    if (name.empty()) {
        return invalid(whole, "the host is empty");
    }
    if (name.size() > 253) {
        return invalid(whole, "the host name is longer than 253 characters");
    }
    std::string out;
    out.reserve(name.size());
    size_t label_start = 0;
    for (size_t i = 0; i <= name.size(); ++i) {
        if (i == name.size() || name[i] == '.') {
            const size_t length = i - label_start;
            if (length == 0) {
                return invalid(whole, "the host name has an empty label");
            }
            if (length > 63) {
                return invalid(whole, "a label of the host name is longer than 63 characters");
            }
            label_start = i + 1;
            if (i < name.size()) {
                out += '.';
            }
            continue;
        }
        const char c = name[i];
        if (c == '@') {
            return invalid(whole, "user information (user@host) is not allowed in the host");
        }
        const bool ok =
            is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
        if (!ok) {
            return invalid(whole, fmt::format("the host has the character {}; a host name has only "
                                              "letters, digits, '-', '_' and '.'",
                                              quote(std::string_view(&name[i], 1))));
        }
        out += lower(c);
    }
    // A name whose last label is a number is an address to getaddrinfo and to browsers (WHATWG
    // URL): "127.1", "2130706433", "0x7f.1". Only the dotted-quad form is taken as an address;
    // the others would slip a loopback address past a check that reads the text.
    const std::string_view last = std::string_view{out}.substr(out.rfind('.') + 1);
    const bool numeric = std::all_of(last.begin(), last.end(), is_digit) ||
                         (last.size() >= 2 && last[0] == '0' && last[1] == 'x' &&
                          std::all_of(last.begin() + 2, last.end(), is_hex));
    if (numeric && !parse_v4(out)) {
        return invalid(whole, "an IPv4 address must be written as four decimal numbers, a.b.c.d");
    }
    return out;
}

}  // namespace

std::optional<std::string_view> private_address_reason(const ip::address& a) {
    if (a.is_v4()) {
        return v4_reason(a.to_v4().to_uint());
    }
    return v6_reason(a.to_v6());
}

std::optional<std::string> normalize_host_name(std::string_view name) {
    auto checked = check_host_name(name, name);
    if (!checked) {
        return std::nullopt;
    }
    return std::move(checked).value();
}

Result<Authority> parse_authority(std::string_view text, uint16_t default_port) {
    if (text.find('@') != std::string_view::npos) {
        return invalid(text, "user information (user@host) is not allowed in the host");
    }
    ASSIGN_OR_RETURN(const HostPort parts, split_host_port(text));
    Authority out;
    if (parts.bracketed) {
        ASSIGN_OR_RETURN(const ip::address_v6 a, parse_v6(text, parts.host));
        out.host = a.to_string();
        out.ip_literal = true;
    } else {
        // "1.2.3.4." is the address too, as getaddrinfo would read it.
        ASSIGN_OR_RETURN(out.host, check_host_name(text, parts.host));
        out.ip_literal = parse_v4(out.host).has_value();
    }
    if (parts.port) {
        ASSIGN_OR_RETURN(out.port, parse_port(text, *parts.port));
    } else if (default_port == 0) {
        return invalid(text, "a port is required (host:port)");
    } else {
        out.port = default_port;
    }
    return out;
}

std::string format_authority(const Authority& a, uint16_t default_port) {
    const bool v6 = a.host.find(':') != std::string::npos;
    std::string out = v6 ? fmt::format("[{}]", a.host) : a.host;
    if (a.port != default_port) {
        out += fmt::format(":{}", a.port);
    }
    return out;
}

Result<ResolvePin> parse_resolve_pin(std::string_view text) {
    constexpr std::string_view kForm = "a pin is NAME[:PORT]=ADDRESS[:PORT]";
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) {
        return invalid(text, fmt::format("no '=': {}", kForm));
    }
    const std::string_view left = text.substr(0, eq);
    const std::string_view right = text.substr(eq + 1);
    ResolvePin pin;

    auto name = split_host_port(left);
    if (!name) {
        return std::move(name).error().wrap(fmt::format("--resolve {}: the name", quote(text)));
    }
    const auto address_name = [&] {
        return invalid(text,
                       fmt::format("the name {} is an address; {}", quote(name->host), kForm));
    };
    if (name->bracketed) {
        return address_name();
    }
    ASSIGN_OR_RETURN(pin.name, check_host_name(text, name->host));
    if (parse_v4(pin.name)) {
        return address_name();
    }
    if (name->port) {
        ASSIGN_OR_RETURN(pin.port, parse_port(text, *name->port));
    }

    if (right.empty()) {
        return invalid(text, fmt::format("the address is empty; {}", kForm));
    }
    // An unbracketed address with more than one ':' is IPv6 with no port.
    const size_t colons = static_cast<size_t>(std::count(right.begin(), right.end(), ':'));
    if (right.front() != '[' && colons > 1) {
        ASSIGN_OR_RETURN(pin.address, parse_v6(text, right));
        return pin;
    }
    ASSIGN_OR_RETURN(const HostPort target, split_host_port(right));
    if (target.port) {
        ASSIGN_OR_RETURN(pin.target_port, parse_port(text, *target.port));
    }
    if (target.bracketed) {
        ASSIGN_OR_RETURN(pin.address, parse_v6(text, target.host));
    } else if (auto a = parse_v4(target.host)) {
        pin.address = *a;
    } else {
        return invalid(text, fmt::format("{} is not an IP address; a pin names an address, not "
                                         "another host (IPv6 in brackets when a port follows)",
                                         quote(target.host)));
    }
    return pin;
}

std::optional<ip::tcp::endpoint> find_pin(const std::vector<ResolvePin>& pins,
                                          std::string_view host, uint16_t port) {
    const std::string name = normalize_host_name(host).value_or(std::string(host));
    const ResolvePin* best = nullptr;
    for (const ResolvePin& pin : pins) {
        if (pin.name != name || (pin.port && *pin.port != port)) {
            continue;
        }
        if (best == nullptr || (pin.port && !best->port)) {
            best = &pin;
        }
    }
    if (best == nullptr) {
        return std::nullopt;
    }
    return ip::tcp::endpoint(best->address, best->target_port.value_or(port));
}

std::string format_endpoint(const ip::tcp::endpoint& endpoint) {
    const ip::address a = endpoint.address();
    if (a.is_v6()) {
        return fmt::format("[{}]:{}", a.to_string(), endpoint.port());
    }
    return fmt::format("{}:{}", a.to_string(), endpoint.port());
}

}  // namespace stockade::network
