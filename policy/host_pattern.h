// The host side of network.access rules: `DOMAIN[:PORT]` specifiers and the hosts and ports
// they are matched against (docs/policy.md, "Network rules").
//   pypi.org            that name, any port
//   pypi.org:443        that name, port 443
//   *.example.com       any subdomain of example.com (not example.com itself), any port
//   *  /  *:443         any host (any port / port 443)
//   10.0.0.1:5432       an IPv4 literal;  [2001:db8::1]:443 / 2001:db8::1  an IPv6 literal
// Names are compared without case and without one trailing dot; IP literals in their canonical
// form (an IPv4-mapped IPv6 address is its IPv4 address). Pure: no syscalls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace stockade::policy {

// A host as matched: lower case, one trailing dot removed, the brackets of an IPv6 literal
// removed and IP literals canonical (inet_ntop's form; "::ffff:1.2.3.4" → "1.2.3.4"). Anything
// else is kept as it is (lower-cased): the result is compared, never trusted as a name.
std::string normalise_host(std::string_view host);
// True when `host` (normalised) is an IPv4 or IPv6 literal.
bool is_ip_literal(std::string_view host);

struct HostPort {
    std::string host{};  // normalised
    uint16_t port = 0;   // 0: not given
};
// "pypi.org", "pypi.org:443", "[::1]:8080", "::1", "10.0.0.1:22" (what `stockade policy
// explain network` takes). A bare IPv6 literal has no port: write "[::1]:443".
Result<HostPort> parse_host_port(std::string_view text);

class HostPattern {
public:
    enum class Kind : uint8_t {
        kAny,         // "*": every host, including one that is not known
        kExact,       // a name or an IP literal
        kSubdomains,  // "*.example.com": names that end in ".example.com"
    };

    // `spec` is a rule's specifier; Claude Code's "domain:" prefix (WebFetch) is accepted.
    // Errors say what is wrong with it: "https://x.io/" is not a host name, "*x*" is not a
    // pattern we have, "x:99999" is not a port.
    static Result<HostPattern> parse(std::string_view spec);

    // Whether `host` (normalised: see normalise_host) is one of the pattern's hosts. The port
    // is the caller's business (Rule::matches): it depends on the rule's decision.
    [[nodiscard]] bool matches_host(std::string_view host) const;

    [[nodiscard]] Kind kind() const { return kind_; }
    [[nodiscard]] const std::string& host() const { return host_; }  // for kSubdomains, the base
    [[nodiscard]] uint16_t port() const { return port_; }            // 0: any port

private:
    Kind kind_ = Kind::kAny;
    std::string host_;
    std::string suffix_;  // kSubdomains: "." + host_
    uint16_t port_ = 0;
};

}  // namespace stockade::policy
