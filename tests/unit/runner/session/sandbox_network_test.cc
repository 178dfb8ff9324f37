// SandboxNetwork: the policy's verdict for each connection, the environment a command gets, and
// which command a refusal is counted against — over a real proxy on 127.0.0.1 (nothing else).
#include "runner/session/sandbox_network.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "tests/testing/golden.h"
#include "tests/testing/recording_sink.h"
#include "tools/process_output.h"

namespace stockade::runner {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

policy::Policy load_rules(const std::string& settings, policy::Mode mode = policy::Mode::kCi) {
    const std::vector<policy::SettingsSource> sources = {
        policy::SettingsSource{.layer = policy::Layer::kProject,
                               .origin = "/ws/.stockade/settings.json",
                               .text = settings,
                               .base_dir = {}}};
    auto loaded = policy::Policy::load(
        sources, policy::PolicyOptions{.mode = mode, .workspace_root = "/ws", .home = "/home/u"});
    EXPECT_TRUE(loaded.has_value()) << loaded.error().message;
    return std::move(loaded).value();
}

const char* const kRules = R"json({
  "permissions": {"allow": ["network.access(*.example.com:443)"],
                  "ask": ["network.access(ask.example.org)"],
                  "deny": ["network.access(evil.example.com)"]},
  "sandbox": {"network": {"allowedDomains": ["pypi.org"]}}
})json";

TEST(SandboxNetworkTest, TheVerdictNamesTheRuleOrWhatWouldAllowIt) {
    const policy::Policy rules = load_rules(kRules);
    auto net = SandboxNetwork::start(SandboxNetworkConfig{.policy = &rules});
    ASSERT_TRUE(net.has_value()) << net.error().message;

    network::Verdict allowed = (*net)->decide("api.example.com", 443);
    EXPECT_TRUE(allowed.allow);
    EXPECT_EQ(allowed.rule, "network.access(*.example.com:443)");
    EXPECT_TRUE((*net)->decide("pypi.org", 443).allow) << "sandbox.network.allowedDomains";

    network::Verdict other_port = (*net)->decide("api.example.com", 80);
    EXPECT_FALSE(other_port.allow);
    EXPECT_EQ(other_port.reason, "not in the allowlist");
    EXPECT_EQ(other_port.hint, "the user can add network.access(api.example.com)");

    network::Verdict asked = (*net)->decide("ask.example.org", 443);
    EXPECT_FALSE(asked.allow);
    EXPECT_EQ(asked.reason,
              "network.access(ask.example.org) asks for the user's approval, which a connection "
              "cannot wait for");
    EXPECT_EQ(asked.hint, "the user can add network.access(ask.example.org)");

    network::Verdict denied = (*net)->decide("evil.example.com", 443);
    EXPECT_FALSE(denied.allow) << "deny wins over the wildcard's allow";
    EXPECT_EQ(denied.reason, "denied by network.access(evil.example.com)");
    EXPECT_EQ(denied.hint, "");
}

TEST(SandboxNetworkTest, EveryCommandFindsTheProxyWithItsOwnTag) {
    const policy::Policy rules = load_rules("{}");
    auto net = SandboxNetwork::start(SandboxNetworkConfig{.policy = &rules, .port = 3128});
    ASSERT_TRUE(net.has_value());
    const std::vector<std::string> env = (*net)->command_env("c7");
    const std::string url = "http://stockade:c7@127.0.0.1:3128";
    for (const char* name :
         {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
          "npm_config_proxy", "npm_config_https_proxy", "CARGO_HTTP_PROXY"}) {
        EXPECT_THAT(env, Contains(std::string(name) + "=" + url)) << name;
    }
    EXPECT_THAT(env, Contains("NO_PROXY=localhost,127.0.0.1,::1"));
    EXPECT_THAT(env, Contains("no_proxy=localhost,127.0.0.1,::1"));
    EXPECT_THAT(env, Contains("GIT_HTTP_PROXY_AUTHMETHOD=basic"));
}

// A listening socket on 127.0.0.1 (an ephemeral port), as the sandbox's child hands one over.
// A socket of `type` bound on 127.0.0.1 and a port of the kernel's choice (in `port`).
UniqueFd bound_loopback(int type, uint16_t& port) {
    UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
    return fd;
}

UniqueFd listen_loopback(uint16_t& port) {
    UniqueFd fd = bound_loopback(SOCK_STREAM | SOCK_NONBLOCK, port);
    EXPECT_EQ(::listen(fd.get(), 16), 0);
    return fd;
}

// Sends `request` to the proxy and returns the first line of its answer.
std::string ask_proxy(uint16_t port, const std::string& request) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        return "connect failed";
    }
    (void)::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
    std::string answer;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0) {
        answer.append(buf, static_cast<size_t>(n));
    }
    return answer.substr(0, answer.find("\r\n"));
}

TEST(SandboxNetworkTest, RefusalsCountAgainstTheCommandThatMadeThem) {
    const policy::Policy rules = load_rules("{}");
    testing::RecordingSink events;
    auto net = SandboxNetwork::start(SandboxNetworkConfig{.policy = &rules, .events = &events});
    ASSERT_TRUE(net.has_value());
    uint16_t port = 0;
    (*net)->serve(listen_loopback(port));
    (*net)->command_started("c1", "call-1");
    (*net)->command_started("c2", "call-2");

    // "stockade:c2" in base64, as curl sends the credentials of http://stockade:c2@...
    const std::string auth = "Proxy-Authorization: Basic c3RvY2thZGU6YzI=\r\n";
    EXPECT_THAT(ask_proxy(port, "CONNECT evil.test:443 HTTP/1.1\r\n" + auth + "\r\n"),
                HasSubstr("403"));
    EXPECT_THAT(ask_proxy(port, "CONNECT evil.test:443 HTTP/1.1\r\n" + auth + "\r\n"),
                HasSubstr("403"));
    const std::vector<tools::NetworkRefusal> c2 = (*net)->refusals("c2");
    ASSERT_EQ(c2.size(), 1U);
    EXPECT_EQ(c2[0], (tools::NetworkRefusal{.host = "evil.test",
                                            .port = 443,
                                            .count = 2,
                                            .reason = "not in the allowlist",
                                            .hint = "the user can add network.access(evil.test)"}));
    EXPECT_TRUE((*net)->refusals("c1").empty());

    // No credentials while two commands run: only the session's log has it.
    EXPECT_THAT(ask_proxy(port, "CONNECT other.test:443 HTTP/1.1\r\n\r\n"), HasSubstr("403"));
    EXPECT_TRUE((*net)->refusals("c1").empty());
    EXPECT_EQ((*net)->refusals("c2").size(), 1U);
    // ...while one runs: it is that command's.
    (*net)->command_ended("c2");
    EXPECT_THAT(ask_proxy(port, "CONNECT other.test:443 HTTP/1.1\r\n\r\n"), HasSubstr("403"));
    ASSERT_EQ((*net)->refusals("c1").size(), 1U);
    EXPECT_EQ((*net)->refusals("c1")[0].host, "other.test");
    EXPECT_EQ((*net)->all_refusals().size(), 2U);

    std::vector<nlohmann::json> recorded;
    for (const auto& event : events.events()) {
        if (event.type == "NetworkConnection") {
            recorded.push_back(event.fields);
        }
    }
    ASSERT_EQ(recorded.size(), 4U);
    EXPECT_EQ(recorded[0]["call"], "call-2");
    EXPECT_EQ(recorded[0]["outcome"], "refused");
    EXPECT_EQ(recorded[0]["reason"], "not in the allowlist");
    EXPECT_EQ(recorded[2]["call"], "");
    EXPECT_EQ(recorded[3]["call"], "call-1");
    EXPECT_EQ(recorded[3]["attributed"], "the only command running");
}

// A connection the rules allow that the proxy cannot make (nothing listens where the name is
// pinned) is in the result too, with why, apart from what was refused.
TEST(SandboxNetworkTest, AnAllowedConnectionThatCannotBeMadeIsSaidApart) {
    const policy::Policy rules =
        load_rules(R"json({"permissions": {"allow": ["network.access(closed.test)"]}})json");
    // A port nothing listens on: bound, then closed.
    uint16_t closed = 0;
    bound_loopback(SOCK_STREAM, closed).reset();
    auto pin = network::parse_resolve_pin("closed.test:443=127.0.0.1:" + std::to_string(closed));
    ASSERT_TRUE(pin.has_value());
    auto net = SandboxNetwork::start(SandboxNetworkConfig{.policy = &rules, .pins = {*pin}});
    ASSERT_TRUE(net.has_value());
    uint16_t port = 0;
    (*net)->serve(listen_loopback(port));
    (*net)->command_started("c1", "call-1");
    EXPECT_THAT(ask_proxy(port, "CONNECT closed.test:443 HTTP/1.1\r\n\r\n"), HasSubstr("502"));
    EXPECT_THAT(ask_proxy(port, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n"), HasSubstr("403"));
    const std::vector<tools::NetworkRefusal> c1 = (*net)->refusals("c1");
    ASSERT_EQ(c1.size(), 2U);
    EXPECT_TRUE(c1[0].unreached);
    EXPECT_FALSE(c1[1].unreached);
    EXPECT_EQ(tools::network_refusals_line(c1),
              "network: refused 1 connection to evil.test:443 (not in the allowlist; the user can "
              "add network.access(evil.test)); could not make 1 connection to closed.test:443 "
              "(could not connect to closed.test:443 (Connection refused))");
}

// A query for `host` (type A, or AAAA) sent to the resolver at `port`; true once answered.
bool lookup(uint16_t port, const std::string& host, bool aaaa = false) {
    std::string query("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
    size_t start = 0;
    while (start < host.size()) {
        const size_t dot = std::min(host.find('.', start), host.size());
        query += static_cast<char>(dot - start);
        query += host.substr(start, dot - start);
        start = dot + 1;
    }
    query += std::string("\0\0", 2) + (aaaa ? '\x1c' : '\x01') + std::string("\0\1", 2);
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{5, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd.get(), query.data(), query.size(), 0) < 0) {
        return false;
    }
    char reply[512];
    return ::recv(fd.get(), reply, sizeof reply, 0) > 3 && (reply[3] & 0x0f) == 5;
}

// The resolver socket a sandbox's child would hand over, on 127.0.0.1 and a free port.
UniqueFd resolver_socket(uint16_t& port) {
    return bound_loopback(SOCK_DGRAM, port);
}

// What the resolver counted (it counts before it answers; the wait is a guard).
std::vector<tools::NetworkRefusal> refusals_after(const SandboxNetwork& net, const std::string& tag,
                                                  uint32_t count) {
    for (int i = 0; i < 500; ++i) {
        auto got = tag.empty() ? net.all_refusals() : net.refusals(tag);
        uint32_t seen = 0;
        for (const auto& r : got) {
            seen += r.count;
        }
        if (seen >= count) {
            return got;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return tag.empty() ? net.all_refusals() : net.refusals(tag);
}

TEST(SandboxNetworkTest, WithoutANetworkEveryLookupIsRefusedAndTheResultSaysHowToGetOne) {
    testing::RecordingSink events;
    auto net = SandboxNetwork::start(
        SandboxNetworkConfig{.mode = sandbox::NetworkMode::kNone, .events = &events});
    ASSERT_TRUE(net.has_value()) << net.error().message;
    EXPECT_TRUE((*net)->command_env("c1").empty()) << "no proxy to point at";
    uint16_t port = 0;
    ASSERT_TRUE((*net)->serve_resolver(resolver_socket(port)));
    (*net)->command_started("c1", "call-1", "npm install");

    // getaddrinfo asks for A and AAAA; both are refused at once.
    EXPECT_TRUE(lookup(port, "registry.npmjs.org"));
    EXPECT_TRUE(lookup(port, "registry.npmjs.org", true));
    const std::vector<tools::NetworkRefusal> c1 = refusals_after(**net, "c1", 2);
    ASSERT_EQ(c1.size(), 1U);
    EXPECT_TRUE(c1[0].dns);
    EXPECT_EQ(c1[0].count, 2U);
    testing::expect_golden("network", "dns_refused_no_network.txt",
                           tools::network_refusals_line(c1));

    // A second command running at the same time: a query carries no tag, so it counts against
    // both (the line says it was refused while each ran).
    (*net)->command_started("c2", "call-2", "pip install x");
    EXPECT_TRUE(lookup(port, "pypi.org"));
    EXPECT_EQ(refusals_after(**net, "c2", 1).size(), 1U);
    EXPECT_EQ(refusals_after(**net, "c1", 3).size(), 2U);
    EXPECT_EQ(refusals_after(**net, "", 3).size(), 2U);

    // Recorded before the answer too (the wait is a guard).
    std::vector<nlohmann::json> recorded;
    for (int i = 0; i < 500 && recorded.size() < 3; ++i) {
        recorded.clear();
        for (const auto& event : events.events()) {
            if (event.type == "NetworkLookup") {
                recorded.push_back(event.fields);
            }
        }
        if (recorded.size() < 3) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    ASSERT_EQ(recorded.size(), 3U) << "once per name and command, not per query";
    EXPECT_EQ(recorded[0]["call"], "call-1");
    EXPECT_EQ(recorded[0]["host"], "registry.npmjs.org");
    EXPECT_EQ(recorded[0]["query_type"], "A");
    EXPECT_EQ(recorded[0]["outcome"], "refused");
}

TEST(SandboxNetworkTest, WithTheAllowlistALookupIsPointedAtTheProxy) {
    const policy::Policy rules = load_rules("{}");
    auto net = SandboxNetwork::start(SandboxNetworkConfig{.policy = &rules});
    ASSERT_TRUE(net.has_value());
    uint16_t port = 0;
    ASSERT_TRUE((*net)->serve_resolver(resolver_socket(port)));
    EXPECT_TRUE(lookup(port, "github.com"));
    const std::vector<tools::NetworkRefusal> all = refusals_after(**net, "", 1);
    ASSERT_EQ(all.size(), 1U);
    EXPECT_EQ(tools::network_refusals_line(all),
              "network: refused 1 DNS query for github.com (names are resolved by Stockade's "
              "proxy, outside the sandbox; connect through the proxy in $HTTPS_PROXY, which every "
              "command's environment names)");
}

}  // namespace
}  // namespace stockade::runner
