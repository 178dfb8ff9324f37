// Addresses and names as the sandbox's proxy meets them: which IP addresses a sandbox must never
// reach (loopback, private, link-local — the cloud metadata service lives there), the authority
// of a request ("host:port"), and the operator's --resolve pins. Pure: nothing here resolves a
// name or opens a socket, so every rule is unit-tested with literal text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"

namespace stockade::network {

// nullopt when `a` is a public unicast address; otherwise why the proxy refuses to connect to
// it, a phrase that completes "<address> is ...": "a loopback address", "a private address
// (RFC 1918)", "the cloud metadata address". An IPv6 address that embeds an IPv4 one
// (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4
// address it reaches. IPv6 outside 2000::/3 (global unicast) is refused as reserved.
std::optional<std::string_view> private_address_reason(const boost::asio::ip::address& a);

// The host and port a request names. `host` is normalised: a name in lower case without its
// trailing dot, or an IP literal in canonical text form (IPv6 without brackets).
struct Authority {
    std::string host;
    uint16_t port = 0;
    bool ip_literal = false;
    friend bool operator==(const Authority&, const Authority&) = default;
};

// "host:port", "host", "[v6]:port", "[v6]", "1.2.3.4:443". Without a port the port is
// `default_port`; a `default_port` of 0 means the port is required (CONNECT's authority-form).
// Names: letters, digits, '-', '_' and '.', labels of 1 to 63 characters, at most 253 in all,
// one trailing dot dropped, and not all-numeric ("127.1" and "0x7f000001" are addresses to
// getaddrinfo; only dotted-quad IPv4 is accepted). IPv6 needs brackets and has no zone id.
// No userinfo ("user@host"). Errors are kInvalidArgument with a message naming the problem.
Result<Authority> parse_authority(std::string_view text, uint16_t default_port);

// "host" or "[v6]", then ":port" unless the port is `default_port`: the text of a Host header
// for `a`, and (default_port 0) the text for a log line or a model-facing message.
std::string format_authority(const Authority& a, uint16_t default_port = 0);

// `name` as a host name: lower case, one trailing dot dropped, the characters and lengths
// parse_authority accepts; nullopt when it is not one. An IP address in dotted-quad text is a
// valid host name here: the caller decides whether it wants one.
std::optional<std::string> normalize_host_name(std::string_view name);

// One operator pin, `--resolve NAME[:PORT]=ADDRESS[:PORT]`: connections to NAME (on PORT, or on
// any port) go to ADDRESS (on the second PORT, or on the port asked for), without DNS and
// whatever the address is: pinning a name to a loopback test server is what pins are for.
struct ResolvePin {
    std::string name;  // normalised like Authority::host; never an IP literal
    std::optional<uint16_t> port;
    boost::asio::ip::address address;
    std::optional<uint16_t> target_port;
    friend bool operator==(const ResolvePin&, const ResolvePin&) = default;
};

// "pypi.org=127.0.0.1", "pypi.org:443=127.0.0.1:8443", "example.com=[::1]:8080",
// "example.com=::1" (brackets are needed only when a port follows an IPv6 address).
Result<ResolvePin> parse_resolve_pin(std::string_view text);

// Where a pin sends a connection to host:port, or nullopt when no pin names host. A pin with a
// port that matches wins over one without; among equals, the first. The target port defaults
// to `port`. `host` is compared as parse_authority normalises it.
std::optional<boost::asio::ip::tcp::endpoint> find_pin(const std::vector<ResolvePin>& pins,
                                                       std::string_view host, uint16_t port);

// "1.2.3.4:80", "[::1]:443".
std::string format_endpoint(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace stockade::network
