#include "runner/mcp/listen_address.h"

#include <cstdint>

#include <boost/asio/ip/address.hpp>

#include "common/parse.h"
#include "network/address.h"

namespace stockade::mcp {

namespace {

constexpr std::string_view kUnixPrefix = "unix:";

Error malformed(std::string_view text, std::string_view what) {
    return Error{Errc::kInvalidArgument,
                 "--http \"" + std::string(text) + "\": " + std::string(what)};
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
    if (text.starts_with(kUnixPrefix)) {
        std::string path(text.substr(kUnixPrefix.size()));
        if (path.empty() || path.front() != '/') {
            return Error{Errc::kInvalidArgument,
                         "--http unix:PATH needs an absolute path, e.g. unix:/run/stockade.sock"};
        }
        return ListenAddress(UnixListenAddress{.path = std::move(path)});
    }
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return malformed(text, "give ADDRESS:PORT (e.g. 127.0.0.1:8080) or unix:/PATH");
    }
    const std::string_view host = text.substr(0, colon);
    if (text.starts_with("[") && !host.ends_with("]")) {
        return malformed(text, "an IPv6 address is written [ADDRESS]:PORT");
    }
    const auto numeric = [&] {
        return malformed(text,
                         "give a numeric ADDRESS:PORT (e.g. 127.0.0.1:8080, 0.0.0.0:8080, "
                         "[::1]:8080) or unix:/PATH");
    };
    // The port may be 0 (the kernel picks one), which a proxy's authority never is: it is parsed
    // here, the host by parse_authority (a port-less authority gets its default, unused).
    auto port = parse_uint(text.substr(colon + 1), 0, 65535);
    auto authority = network::parse_authority(host, /*default_port=*/1);
    if (!port || !authority || (!authority->ip_literal && authority->host != "localhost")) {
        return numeric();
    }
    const auto address = authority->ip_literal
                             ? boost::asio::ip::make_address(authority->host)
                             : boost::asio::ip::address(boost::asio::ip::address_v4::loopback());
    return ListenAddress(TcpListenAddress{
        .endpoint = boost::asio::ip::tcp::endpoint(address, static_cast<std::uint16_t>(*port))});
}

}  // namespace stockade::mcp
