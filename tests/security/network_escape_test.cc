// Escapes through --network allowlist, tried from a serve session's bash (the path agents use):
// the proxy must refuse what no rule may open — the cloud metadata address, loopback and the
// host's own services, a name allowed by the rules that leads to an internal address, a TLS
// name other than the one asked for, raw addresses — and nothing may leave the sandbox except
// through it: no direct connection, no DNS.
//
// Every address here is loopback, the sandbox's own, or one that is never routed (link-local,
// TEST-NET): nothing can leave the machine even if a check failed.
//
// Under ctest the suite runs again with the sessions on the test image (STOCKADE_TEST_IMAGE=1,
// tests/testing/test_image.h), which carries the host's curl, getent and python3.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"
#include "tests/testing/test_image.h"
#include "tests/testing/upstreams.h"

namespace stockade::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class NetworkEscapeTest : public AllowlistTest {
protected:
    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        AllowlistTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        std::vector<std::string> flags = {
            "--network", "allowlist", "--mode", "ci", "--no-user-settings",
            // Rules that would open these if the proxy took the rules' word for it.
            "--allow", "network.access(example.test)", "--allow", "network.access(localhost)",
            "--allow", "network.access(169.254.169.254)", "--allow", "network.access(10.1.2.3)",
            "--allow", "network.access(127.0.0.1)"};
        for (auto& flag : upstreams_->resolve_flags({"example.test"})) {
            flags.push_back(std::move(flag));
        }
        const std::vector<std::string> image = test_image_flags();
        flags.insert(flags.end(), image.begin(), image.end());
        ServeLaunch launch;
        launch.env = test_image_env();
        serve_ = std::make_unique<ServeProcess>(workspace_.path(), state_.path(), flags, launch);
        ASSERT_TRUE(serve_->initialize().contains("result"));
    }

    std::string bash(const std::string& command) {
        return text_of(serve_->call("bash", {{"command", command}, {"timeout_ms", 60000}}, nullptr,
                                    std::chrono::seconds(90)));
    }

    std::unique_ptr<ServeProcess> serve_;
};

TEST_F(NetworkEscapeTest, TheMetadataAddressIsRefusedWhateverTheRulesSay) {
    const std::string out = bash("curl -sSf -m 10 http://169.254.169.254/latest/meta-data/");
    EXPECT_THAT(out, HasSubstr("network: refused 1 connection to 169.254.169.254:80 "
                               "(169.254.169.254 is the cloud metadata address, which is never "
                               "reached through the proxy)"));
    EXPECT_THAT(out, Not(HasSubstr("exit code 0")));
}

TEST_F(NetworkEscapeTest, AnAllowedNameThatLeadsToLoopbackIsRefused) {
    // localhost resolves (from the host's /etc/hosts) to loopback: the host's own services.
    const std::string by_name = bash("curl -sS -m 10 --noproxy '' http://localhost:" +
                                     std::to_string(upstreams_->http_port()) + "/");
    EXPECT_THAT(by_name,
                AllOf(HasSubstr("network: refused 1 connection to localhost:"),
                      HasSubstr("resolves to a loopback address"), Not(HasSubstr("hello from"))));
    const std::string by_address = bash("curl -sS -m 10 --noproxy '' http://127.0.0.1:" +
                                        std::to_string(upstreams_->http_port()) + "/");
    EXPECT_THAT(by_address, AllOf(HasSubstr("network: refused 1 connection to 127.0.0.1:"),
                                  Not(HasSubstr("hello from"))));
    const std::string private_address = bash("curl -sS -m 10 http://10.1.2.3/");
    EXPECT_THAT(private_address, HasSubstr("network: refused 1 connection to 10.1.2.3:80 "
                                           "(10.1.2.3 is a private address"));
}

TEST_F(NetworkEscapeTest, ATlsNameOtherThanTheOneAskedForIsRefused) {
    // CONNECT to an allowed name, then a ClientHello for another: domain fronting.
    const std::string out = bash(
        "python3 -c '\n"
        "import socket, ssl\n"
        "s = socket.create_connection((\"127.0.0.1\", 3128))\n"
        "s.sendall(b\"CONNECT example.test:443 HTTP/1.1\\r\\nHost: "
        "example.test:443\\r\\n\\r\\n\")\n"
        "print(s.recv(4096).split(b\"\\r\\n\")[0].decode())\n"
        "c = ssl.create_default_context(cafile=\"" +
        workspace_.sub("ca.pem") +
        "\")\n"
        "try:\n"
        "    t = c.wrap_socket(s, server_hostname=\"other.test\")\n"
        "    print(\"handshake completed\")\n"
        "except (OSError, ssl.SSLError) as e:\n"
        "    print(\"handshake failed\")\n"
        "'");
    EXPECT_THAT(out, AllOf(HasSubstr("HTTP/1.1 200"), HasSubstr("handshake failed"),
                           HasSubstr("network: refused 1 connection to example.test:443 (its TLS "
                                     "server name \"other.test\" is not example.test)")));
}

TEST_F(NetworkEscapeTest, NothingLeavesExceptThroughTheProxy) {
    // A direct connection: the sandbox's network namespace has only its own loopback.
    const std::string direct = bash(
        "curl -sS -m 5 --noproxy '*' http://192.0.2.1/; echo status=$?; curl -sS -m 5 --noproxy "
        "'*' http://127.0.0.1:" +
        std::to_string(upstreams_->http_port()) + "/; echo status=$?");
    EXPECT_THAT(direct, AllOf(Not(HasSubstr("status=0")), Not(HasSubstr("hello from"))));
    // No DNS: no name resolves inside, so nothing can be tunnelled through queries.
    const std::string dns = bash(
        "getent hosts example.test; echo getent=$?; python3 -c '\n"
        "import socket\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        "    s.sendto(b\"\\x00\" * 32, (\"192.0.2.1\", 53)); print(\"sent\")\n"
        "except OSError as e:\n"
        "    print(\"udp\", e.strerror)\n"
        "'");
    EXPECT_THAT(dns, AllOf(Not(HasSubstr("getent=0")), HasSubstr("udp Network is unreachable")));
    // The proxy itself does not speak for raw addresses no rule names.
    const std::string raw = bash("curl -sS -m 10 http://192.0.2.1/");
    EXPECT_THAT(raw, HasSubstr("network: refused 1 connection to 192.0.2.1:80 (not in the "
                               "allowlist; the user can add network.access(192.0.2.1))"));
}

// The sandbox's resolver (127.0.0.1:53) is a socket the supervisor holds: a command can neither
// take its place nor get an answer out of it — not even for a name the rules allow — and a
// flood of queries for distinct names is answered and counted in bounded space.
TEST_F(NetworkEscapeTest, TheResolverAnswersNothingAndCannotBeReplaced) {
    const std::string out = bash(
        "python3 -c '\n"
        "import socket, struct\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        "    s.bind((\"127.0.0.1\", 53)); print(\"bound\")\n"
        "except OSError as e:\n"
        "    print(\"bind\", e.strerror)\n"
        "def q(i, name):\n"
        "    body = b\"\".join(bytes([len(p)]) + p.encode() for p in name.split(\".\"))\n"
        "    return struct.pack(\">HHHHHH\", i, 0x0100, 1, 0, 0, 0) + body + b\"\\0\\0\\1\\0\\1\"\n"
        "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "c.settimeout(5)\n"
        "c.sendto(q(7, \"example.test\"), (\"127.0.0.1\", 53))\n"
        "r = c.recv(512)\n"
        "print(\"rcode\", r[3] & 15, \"answers\", struct.unpack(\">H\", r[6:8])[0])\n"
        "answered = 0\n"
        "for i in range(2000):\n"
        "    c.sendto(q(i, \"n%d.flood.test\" % i), (\"127.0.0.1\", 53))\n"
        "    answered += c.recv(512)[3] & 15 == 5\n"
        "print(\"answered\", answered)\n"
        "'");
    EXPECT_THAT(out, AllOf(Not(HasSubstr("bound")), HasSubstr("bind "),
                           HasSubstr("rcode 5 answers 0"), HasSubstr("answered 2000")))
        << out;
    // What the result says of 2,001 names is a few of them and a count.
    EXPECT_THAT(out, AllOf(HasSubstr("network: refused "), HasSubstr(" DNS queries: "),
                           HasSubstr(" other targets")))
        << out;
    EXPECT_LT(out.size(), 4096U) << out;
}

}  // namespace
}  // namespace stockade::testing
