#include "runner/mcp/listen_address.h"

#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::mcp {
namespace {

using testing::HasErrc;
using testing::IsOk;

// The TCP endpoint `text` parses to, as "ADDRESS PORT" ("" when it is not a TCP address).
std::string tcp(const std::string& text) {
    auto parsed = parse_listen_address(text);
    if (!parsed) {
        return "error: " + parsed.error().message;
    }
    const auto* address = std::get_if<TcpListenAddress>(&*parsed);
    if (address == nullptr) {
        return "";
    }
    return address->endpoint.address().to_string() + " " + std::to_string(address->endpoint.port());
}

TEST(ListenAddressTest, TcpAddresses) {
    EXPECT_EQ(tcp("127.0.0.1:8080"), "127.0.0.1 8080");
    EXPECT_EQ(tcp("0.0.0.0:65535"), "0.0.0.0 65535");
    EXPECT_EQ(tcp("127.0.0.1:0"), "127.0.0.1 0") << "port 0: the kernel picks one";
    EXPECT_EQ(tcp("[::1]:8080"), "::1 8080");
    EXPECT_EQ(tcp("[::]:9"), ":: 9");
    EXPECT_EQ(tcp("localhost:8080"), "127.0.0.1 8080");
}

TEST(ListenAddressTest, UnixSocket) {
    auto parsed = parse_listen_address("unix:/run/stockade.sock");
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, ListenAddress(UnixListenAddress{.path = "/run/stockade.sock"}));
    EXPECT_FALSE(std::holds_alternative<TcpListenAddress>(*parsed));
}

TEST(ListenAddressTest, UnixNeedsAnAbsolutePath) {
    for (const char* text : {"unix:", "unix:run/s.sock", "unix:./s.sock"}) {
        auto parsed = parse_listen_address(text);
        EXPECT_THAT(parsed, HasErrc(Errc::kInvalidArgument)) << text;
        if (!parsed) {
            EXPECT_EQ(parsed.error().message,
                      "--http unix:PATH needs an absolute path, e.g. unix:/run/stockade.sock");
        }
    }
}

TEST(ListenAddressTest, MalformedAddressesSayWhichFormToUse) {
    const std::string numeric =
        "\": give a numeric ADDRESS:PORT (e.g. 127.0.0.1:8080, 0.0.0.0:8080, [::1]:8080) or "
        "unix:/PATH";
    const struct {
        const char* text;
        std::string message;
    } cases[] = {
        {"8080", "--http \"8080\": give ADDRESS:PORT (e.g. 127.0.0.1:8080) or unix:/PATH"},
        {"", "--http \"\": give ADDRESS:PORT (e.g. 127.0.0.1:8080) or unix:/PATH"},
        {"[::1]", "--http \"[::1]\": an IPv6 address is written [ADDRESS]:PORT"},
        {"[::1:8080", "--http \"[::1:8080\": an IPv6 address is written [ADDRESS]:PORT"},
        {"127.0.0.1:65536", "--http \"127.0.0.1:65536" + numeric},
        {"127.0.0.1:", "--http \"127.0.0.1:" + numeric},
        {"127.0.0.1:80x", "--http \"127.0.0.1:80x" + numeric},
        {"127.0.0.1:-1", "--http \"127.0.0.1:-1" + numeric},
        {":8080", "--http \":8080" + numeric},
        {"example.com:8080", "--http \"example.com:8080" + numeric},
        {"127.1:8080", "--http \"127.1:8080" + numeric},
        {"::1:8080", "--http \"::1:8080" + numeric},
        {"[fe80::1%eth0]:8080", "--http \"[fe80::1%eth0]:8080" + numeric},
        {"[127.0.0.1]:8080", "--http \"[127.0.0.1]:8080" + numeric},
    };
    for (const auto& c : cases) {
        auto parsed = parse_listen_address(c.text);
        ASSERT_THAT(parsed, HasErrc(Errc::kInvalidArgument)) << c.text;
        EXPECT_EQ(parsed.error().message, c.message);
    }
}

}  // namespace
}  // namespace stockade::mcp
