#include "network/reachability.h"

#include <ifaddrs.h>

#include <algorithm>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include "network/address.h"

namespace stockade::network {

namespace ip = boost::asio::ip;

std::vector<ip::address> own_addresses() {
    std::vector<ip::address> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
        return out;
    }
    for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
        if (it->ifa_addr == nullptr) {
            continue;
        }
        if (it->ifa_addr->sa_family == AF_INET) {
            const auto* in = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
            out.emplace_back(ip::address_v4(ntohl(in->sin_addr.s_addr)));
        } else if (it->ifa_addr->sa_family == AF_INET6) {
            const auto* in6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
            ip::address_v6::bytes_type bytes{};
            std::copy_n(in6->sin6_addr.s6_addr, 16, bytes.begin());
            out.emplace_back(ip::address_v6(bytes));
        }
    }
    ::freeifaddrs(list);
    return out;
}

std::optional<Unreachable> drop_unreachable(std::vector<ip::address>& addresses,
                                            const std::vector<ip::address>& own) {
    std::optional<Unreachable> first;
    std::erase_if(addresses, [&](const ip::address& a) {
        std::optional<std::string_view> reason = private_address_reason(a);
        if (!reason && std::find(own.begin(), own.end(), a) != own.end()) {
            reason = "an address of this host";
        }
        if (reason && !first) {
            first = Unreachable{.address = a.to_string(), .why = std::string(*reason)};
        }
        return reason.has_value();
    });
    return first;
}

std::string unreachable_reason(std::string_view host, bool ip_literal, const Unreachable& first) {
    return ip_literal ? fmt::format("{} is {}, which is never reached through the proxy",
                                    first.address, first.why)
                      : fmt::format(
                            "{} resolves to {} ({}), which is never reached through the "
                            "proxy",
                            host, first.why, first.address);
}

std::string unreachable_hint(std::string_view host, bool ip_literal, const Unreachable& first) {
    if (ip_literal) {
        return {};
    }
    return fmt::format(
        "if it is meant to be reached, the user can pin it: --resolve {}={} (settings: "
        "sandbox.network.resolve)",
        host, first.address);
}

}  // namespace stockade::network
