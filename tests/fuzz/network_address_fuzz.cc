// Fuzzes the authority and --resolve parsers (untrusted: request targets, Host headers) and the
// address classification: no crash; an accepted authority is in normal form and reads back the
// same; a pin is found under its own name; an IPv4-mapped address is judged like its IPv4.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "network/address.h"

namespace network = stockade::network;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    for (uint16_t default_port : {uint16_t{0}, uint16_t{80}}) {
        auto a = network::parse_authority(text, default_port);
        if (!a) {
            continue;
        }
        if (a->host.empty() || a->host.size() > 253 || a->port == 0) {
            std::abort();
        }
        auto again = network::parse_authority(network::format_authority(*a), 0);
        if (!again || !(*again == *a)) {
            std::abort();
        }
    }

    if (auto pin = network::parse_resolve_pin(text)) {
        if (network::normalize_host_name(pin->name) != pin->name) {
            std::abort();
        }
        const uint16_t port = pin->port.value_or(443);
        auto endpoint = network::find_pin({*pin}, pin->name, port);
        if (!endpoint || endpoint->address() != pin->address ||
            endpoint->port() != pin->target_port.value_or(port)) {
            std::abort();
        }
        (void)network::private_address_reason(pin->address);
    }

    // The first 16 bytes as an IPv6 address, the first 4 as IPv4.
    if (size >= 16) {
        boost::asio::ip::address_v6::bytes_type b{};
        std::memcpy(b.data(), data, 16);
        (void)network::private_address_reason(boost::asio::ip::address_v6(b));
    }
    if (size >= 4) {
        boost::asio::ip::address_v4::bytes_type b4{};
        std::memcpy(b4.data(), data, 4);
        const boost::asio::ip::address_v4 v4(b4);
        const auto mapped = boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, v4);
        if (network::private_address_reason(v4) != network::private_address_reason(mapped)) {
            std::abort();
        }
    }
    return 0;
}
