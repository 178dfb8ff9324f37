// Which of the addresses a name resolves to the allowlist proxy will connect to, and what it
// says when it will not: the one check the proxy makes after its rules allowed a connection,
// shared with `stockade policy explain network`, so that the explanation says what the proxy
// would do. Private, loopback, link-local, reserved and metadata addresses
// (private_address_reason), and this host's own addresses, are never reached except through a
// name the operator pins (--resolve NAME=ADDRESS, settings sandbox.network.resolve).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace stockade::network {

// This host's own addresses (getifaddrs): a name that resolves to one of them reaches the
// host's services as surely as loopback does.
std::vector<boost::asio::ip::address> own_addresses();

// The first address of those removed, and why ("a loopback address", "an address of this
// host").
struct Unreachable {
    std::string address;
    std::string why;
};

// Removes from `addresses` every one the proxy never connects to; the first removed, when any.
// The proxy refuses the connection when none is left.
std::optional<Unreachable> drop_unreachable(std::vector<boost::asio::ip::address>& addresses,
                                            const std::vector<boost::asio::ip::address>& own);

// The refusal's reason: "10.1.2.3 is a private address (RFC 1918), which is never reached
// through the proxy" for an address, "x.test resolves to a loopback address (127.0.0.1),
// which …" for a name.
std::string unreachable_reason(std::string_view host, bool ip_literal, const Unreachable& first);

// What would allow it: for a name, the exact pin ("if it is meant to be reached, the user can
// pin it: --resolve x.test=127.0.0.1 (settings: sandbox.network.resolve)"); for an address,
// nothing ("": no pin applies to an address).
std::string unreachable_hint(std::string_view host, bool ip_literal, const Unreachable& first);

}  // namespace stockade::network
