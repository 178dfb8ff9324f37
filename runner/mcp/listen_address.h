// Where `stockade serve --http` listens (HttpOptions::listen): "ADDRESS:PORT" with a numeric
// IPv4 address or "localhost", "[V6]:PORT", or "unix:/PATH". Parsed into a typed value before
// anything binds; pure, so every form is unit-tested with literal text.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"

namespace stockade::mcp {

// A TCP address and port. Port 0: the kernel picks one (HttpServer::endpoint says which).
struct TcpListenAddress {
    boost::asio::ip::tcp::endpoint endpoint;
    friend bool operator==(const TcpListenAddress&, const TcpListenAddress&) = default;
};

// A unix socket at an absolute path.
struct UnixListenAddress {
    std::string path;
    friend bool operator==(const UnixListenAddress&, const UnixListenAddress&) = default;
};

using ListenAddress = std::variant<TcpListenAddress, UnixListenAddress>;

// "127.0.0.1:8080", "0.0.0.0:0", "localhost:8080" (127.0.0.1), "[::1]:8080", "unix:/run/s.sock".
// The address is numeric (no name is resolved; IPv6 needs brackets and has no zone id); the
// port is 0 to 65535. Errors are kInvalidArgument with a message that shows the forms.
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace stockade::mcp
