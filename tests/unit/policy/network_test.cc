// Network rules as the allowlist proxy uses them: network.access(DOMAIN[:PORT]) specifiers,
// matching by host and port, Claude Code's sandbox.network lists and WebFetch rules, the managed
// lock (allowManagedDomainsOnly), network presets and `policy explain network`.
#include <algorithm>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/explain.h"
#include "policy/host_pattern.h"
#include "policy/network_preset.h"
#include "policy/policy.h"
#include "policy/rule.h"
#include "policy/settings.h"
#include "tests/testing/golden.h"
#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

const RuleAnchors kAnchors{.workspace_root = "/ws", .home = "/home/u", .settings_dir = "/ws"};

Rule rule(std::string_view text, Decision decision = Decision::kAllow) {
    std::string warning;
    auto parsed = Rule::parse(text, decision, kAnchors, warning);
    EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
    EXPECT_TRUE(parsed.has_value() && parsed->has_value()) << text << ": " << warning;
    return std::move(**parsed);
}

// What the proxy asks: the bash tool connects to `host` on `port`.
CapabilityRequest connect(std::string host, uint16_t port) {
    return {.kind = CapabilityKind::kNetworkAccess,
            .tool = "bash",
            .host = std::move(host),
            .port = port};
}

bool matches(const Rule& r, const CapabilityRequest& request) {
    return r.matches(request, nullptr);
}

// ---- specifiers ------------------------------------------------------------------------------

struct PatternCase {
    const char* spec;
    HostPattern::Kind kind;
    const char* host;
    uint16_t port;
};

class HostPatternParseTest : public ::testing::TestWithParam<PatternCase> {};

TEST_P(HostPatternParseTest, ReadsTheHostAndThePort) {
    auto pattern = HostPattern::parse(GetParam().spec);
    ASSERT_THAT(pattern, IsOk()) << GetParam().spec;
    EXPECT_EQ(pattern->kind(), GetParam().kind) << GetParam().spec;
    EXPECT_EQ(pattern->host(), GetParam().host) << GetParam().spec;
    EXPECT_EQ(pattern->port(), GetParam().port) << GetParam().spec;
}

using enum HostPattern::Kind;
INSTANTIATE_TEST_SUITE_P(
    Specifiers, HostPatternParseTest,
    ::testing::Values(PatternCase{"pypi.org", kExact, "pypi.org", 0},
                      PatternCase{"PyPI.org.", kExact, "pypi.org", 0},
                      PatternCase{"pypi.org:443", kExact, "pypi.org", 443},
                      PatternCase{"domain:example.com", kExact, "example.com", 0},
                      PatternCase{"domain:example.com:8443", kExact, "example.com", 8443},
                      PatternCase{"*.Example.com", kSubdomains, "example.com", 0},
                      PatternCase{"*.example.com:443", kSubdomains, "example.com", 443},
                      PatternCase{"*", kAny, "", 0}, PatternCase{"*:443", kAny, "", 443},
                      PatternCase{"localhost", kExact, "localhost", 0},
                      PatternCase{"my_host-1.internal", kExact, "my_host-1.internal", 0},
                      PatternCase{"10.0.0.1", kExact, "10.0.0.1", 0},
                      PatternCase{"10.0.0.1:5432", kExact, "10.0.0.1", 5432},
                      PatternCase{"[2001:DB8::1]:443", kExact, "2001:db8::1", 443},
                      PatternCase{"[::1]", kExact, "::1", 0},
                      PatternCase{"2001:db8:0:0:0:0:0:1", kExact, "2001:db8::1", 0},
                      PatternCase{"[::ffff:10.0.0.1]:80", kExact, "10.0.0.1", 80}));

struct BadCase {
    const char* spec;
    const char* message;
};

class HostPatternMalformedTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(HostPatternMalformedTest, IsAnErrorSayingWhy) {
    auto pattern = HostPattern::parse(GetParam().spec);
    ASSERT_THAT(pattern, HasErrc(Errc::kInvalidArgument)) << GetParam().spec;
    EXPECT_THAT(pattern.error().message, HasSubstr(GetParam().message)) << GetParam().spec;
}

INSTANTIATE_TEST_SUITE_P(
    Specifiers, HostPatternMalformedTest,
    ::testing::Values(
        BadCase{"", "an empty host"}, BadCase{"domain:", "an empty host"},
        BadCase{"https://pypi.org/simple",
                "is not a host name or a host pattern: write the host "
                "alone"},
        BadCase{"user@pypi.org", "write the host alone"},
        BadCase{"pypi.org:", "a \":\" with no port after it"},
        BadCase{"pypi.org:0", "the port must be a number from 1 to 65535, got \"0\""},
        BadCase{"pypi.org:65536", "the port must be a number from 1 to 65535"},
        BadCase{"pypi.org:https", "the port must be a number from 1 to 65535, got \"https\""},
        BadCase{"*github*", "a host pattern is \"*\" (any host) or starts with \"*.\""},
        BadCase{"api.*.github.com", "no other \"*\""}, BadCase{"*.*.github.com", "no other \"*\""},
        BadCase{"*.", "is not a host name or a host pattern such as \"*.github.com\""},
        BadCase{"a..b", "is not a host name or a host pattern"},
        BadCase{"pypi org", "is not a host name or a host pattern"},
        BadCase{"10.0.0.256", "is not an IPv4 address"}, BadCase{"10.1", "is not an IPv4 address"},
        BadCase{"*.10.0.0.1", "covers the subdomains of a name, not an address"},
        BadCase{"*.0.1", "covers the subdomains of a name, not an address"},
        BadCase{"[pypi.org]:443", "in brackets is not an IPv6 address"},
        BadCase{"[::1", "needs its \"]\""}, BadCase{"[::1]443", "after \"]\" comes \":PORT\""},
        BadCase{"1:2:3", "is not a host name, a host pattern or an IP address"}));

TEST(NetworkRuleTest, RuleErrorsNameTheRule) {
    std::string warning;
    auto bad = Rule::parse("network.access(pypi.org:99999)", Decision::kAllow, kAnchors, warning);
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, HasSubstr("\"pypi.org:99999\": the port must be a number"));
    EXPECT_THAT(Rule::network_access("https://x.io", Decision::kDeny),
                HasErrc(Errc::kInvalidArgument));
}

// ---- matching -------------------------------------------------------------------------------

struct MatchCase {
    const char* rule;
    const char* host;
    uint16_t port;
    bool matches;
};

class NetworkMatchTest : public ::testing::TestWithParam<MatchCase> {};

TEST_P(NetworkMatchTest, MatchesByHostAndPort) {
    for (Decision decision : {Decision::kAllow, Decision::kAsk, Decision::kDeny}) {
        EXPECT_EQ(
            matches(rule(GetParam().rule, decision), connect(GetParam().host, GetParam().port)),
            GetParam().matches)
            << GetParam().rule << " vs " << GetParam().host << ":" << GetParam().port << " ("
            << decision_name(decision) << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, NetworkMatchTest,
    ::testing::Values(
        // Exact names, any port; case and one trailing dot do not matter.
        MatchCase{"network.access(pypi.org)", "pypi.org", 443, true},
        MatchCase{"network.access(pypi.org)", "pypi.org", 8080, true},
        MatchCase{"network.access(PyPI.org)", "pypi.org", 443, true},
        MatchCase{"network.access(pypi.org)", "PYPI.ORG.", 443, true},
        MatchCase{"network.access(pypi.org.)", "pypi.org", 443, true},
        MatchCase{"network.access(pypi.org)", "pypi.org..", 443, false},
        MatchCase{"network.access(pypi.org)", "files.pypi.org", 443, false},
        MatchCase{"network.access(pypi.org)", "evilpypi.org", 443, false},
        MatchCase{"network.access(pypi.org)", "pypi.org.evil.example", 443, false},
        // "*.x": every subdomain, at any depth, never x itself (Claude Code's allowedDomains).
        MatchCase{"network.access(*.github.com)", "api.github.com", 443, true},
        MatchCase{"network.access(*.github.com)", "a.b.github.com", 443, true},
        MatchCase{"network.access(*.GitHub.com)", "API.GITHUB.COM.", 443, true},
        MatchCase{"network.access(*.github.com)", "github.com", 443, false},
        MatchCase{"network.access(*.github.com)", "evilgithub.com", 443, false},
        MatchCase{"network.access(*.github.com)", "github.com.evil.example", 443, false},
        // Ports.
        MatchCase{"network.access(pypi.org:443)", "pypi.org", 443, true},
        MatchCase{"network.access(pypi.org:443)", "pypi.org", 80, false},
        MatchCase{"network.access(*.github.com:443)", "api.github.com", 22, false},
        MatchCase{"network.access(*:443)", "anything.example", 443, true},
        MatchCase{"network.access(*:443)", "anything.example", 22, false},
        MatchCase{"network.access(*)", "anything.example", 22, true},
        MatchCase{"network.access", "anything.example", 22, true},
        // IP literals: canonical spelling, IPv6 with or without brackets, v4-mapped is v4.
        MatchCase{"network.access(10.0.0.1)", "10.0.0.1", 5432, true},
        MatchCase{"network.access(10.0.0.1:5432)", "10.0.0.1", 5432, true},
        MatchCase{"network.access(10.0.0.1)", "10.0.0.2", 5432, false},
        MatchCase{"network.access(10.0.0.1)", "::ffff:10.0.0.1", 80, true},
        MatchCase{"network.access([2001:db8::1]:443)", "2001:db8::1", 443, true},
        MatchCase{"network.access([2001:db8::1]:443)", "2001:DB8:0:0:0:0:0:1", 443, true},
        MatchCase{"network.access([2001:db8::1]:443)", "[2001:db8::1]", 443, true},
        MatchCase{"network.access([2001:db8::1]:443)", "2001:db8::1", 80, false},
        MatchCase{"network.access(2001:db8::1)", "2001:db8::1", 80, true},
        MatchCase{"network.access(2001:db8::1)", "2001:db8::2", 80, false},
        // A subdomain pattern never covers an address.
        MatchCase{"network.access(*.example)", "10.0.0.1", 80, false},
        // Claude Code's WebFetch domain rules are network.access rules.
        MatchCase{"WebFetch(domain:example.com)", "example.com", 443, true},
        MatchCase{"WebFetch(domain:example.com)", "docs.example.com", 443, false},
        MatchCase{"WebFetch(domain:*.example.com)", "docs.example.com", 443, true},
        MatchCase{"WebFetch", "anything.example", 80, true},
        MatchCase{"WebFetch(*)", "anything.example", 80, true}));

TEST(NetworkMatchTest, AnUnknownPortIsMatchedByAPortRuleOnlyAsAnAllowOfAKnownHost) {
    // Port 0: a command's analysis, before it connects. An allow limited to a port lets the
    // command through (the proxy holds each connection to the port); a deny or an ask limited
    // to a port is about that port's connections only.
    const CapabilityRequest analysed = connect("pypi.org", 0);
    EXPECT_TRUE(matches(rule("network.access(pypi.org:443)", Decision::kAllow), analysed));
    EXPECT_FALSE(matches(rule("network.access(pypi.org:443)", Decision::kAsk), analysed));
    EXPECT_FALSE(matches(rule("network.access(pypi.org:22)", Decision::kDeny), analysed));
    EXPECT_TRUE(matches(rule("network.access(pypi.org)", Decision::kDeny), analysed));
    // The host must still match.
    EXPECT_FALSE(matches(rule("network.access(github.com:443)", Decision::kAllow), analysed));
    // An unknown host ("curl $URL", or the session asking whether the network is allowed
    // outright) is matched only by rules for every host on every port.
    const CapabilityRequest unknown = connect("", 0);
    EXPECT_FALSE(matches(rule("network.access(*:443)", Decision::kAllow), unknown));
    EXPECT_FALSE(matches(rule("network.access(pypi.org)", Decision::kAllow), unknown));
    EXPECT_FALSE(matches(rule("network.access(*.pypi.org)", Decision::kDeny), unknown));
    EXPECT_TRUE(matches(rule("network.access(*)", Decision::kAllow), unknown));
    EXPECT_TRUE(matches(rule("WebFetch", Decision::kDeny), unknown));
    EXPECT_TRUE(rule("network.access(domain:*)").whole());
    EXPECT_FALSE(rule("network.access(*:443)").whole());
}

TEST(NetworkMatchTest, WebFetchRulesKeepTheirTextAndAreNetworkAccess) {
    const Rule fetch = rule("WebFetch(domain:example.com)", Decision::kDeny);
    EXPECT_EQ(fetch.subject(), Subject::kNetworkAccess);
    EXPECT_EQ(fetch.text(), "WebFetch(domain:example.com)");
    EXPECT_TRUE(fetch.covers(CapabilityKind::kNetworkAccess));
    EXPECT_FALSE(fetch.covers(CapabilityKind::kProcessExecute));
    EXPECT_STREQ(subject_name(Subject::kNetworkAccess), "network.access");
    EXPECT_TRUE(rule("WebFetch").whole());
}

TEST(HostTest, NormalisesCaseDotsBracketsAndAddresses) {
    EXPECT_EQ(normalise_host("PyPI.Org."), "pypi.org");
    EXPECT_EQ(normalise_host("[2001:DB8:0::1]"), "2001:db8::1");
    EXPECT_EQ(normalise_host("::FFFF:192.0.2.1"), "192.0.2.1");
    EXPECT_EQ(normalise_host("fe80::1%eth0"), "fe80::1%eth0");  // not an address: kept
    EXPECT_TRUE(is_ip_literal("192.0.2.1"));
    EXPECT_TRUE(is_ip_literal("::1"));
    EXPECT_FALSE(is_ip_literal("pypi.org"));

    auto target = parse_host_port("PyPI.org:443");
    ASSERT_THAT(target, IsOk());
    EXPECT_EQ(target->host, "pypi.org");
    EXPECT_EQ(target->port, 443);
    ASSERT_THAT(parse_host_port("[::1]:8080"), IsOk());
    EXPECT_EQ(parse_host_port("[::1]:8080")->host, "::1");
    EXPECT_EQ(parse_host_port("::1")->port, 0);
    EXPECT_THAT(parse_host_port("https://pypi.org"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_host_port("*.pypi.org"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_host_port("pypi.org:0"), HasErrc(Errc::kInvalidArgument));
}

// ---- settings -------------------------------------------------------------------------------

constexpr const char* kOrigin = "/ws/.claude/settings.json";

Result<Settings> parse(std::string text, Layer layer = Layer::kProject) {
    return parse_settings(
        SettingsSource{.layer = layer, .origin = kOrigin, .text = std::move(text)}, kAnchors);
}

std::vector<std::string> rule_lines(const std::vector<Rule>& rules) {
    std::vector<std::string> out;
    for (const Rule& r : rules) {
        out.push_back(fmt::format("{} {} {} {}", decision_name(r.decision()), r.text(), r.origin,
                                  layer_name(r.layer)));
    }
    return out;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& line : lines) {
        out += line + "\n";
    }
    return out;
}

TEST(NetworkSettingsTest, AllowedAndDeniedDomainsAreRulesOfTheFilesLayer) {
    auto settings = parse(R"json({
  "sandbox": {
    "network": {
      "allowedDomains": ["pypi.org", "*.npmjs.org:443", "[::1]:8080"],
      "deniedDomains": ["evil.example"]
    }
  },
  "permissions": {"allow": ["WebFetch(domain:docs.example.com)"], "deny": ["WebFetch"]}
})json",
                          Layer::kUser);
    ASSERT_THAT(settings, IsOk());
    EXPECT_THAT(
        rule_lines(settings->rules),
        ElementsAre("allow network.access(pypi.org) /ws/.claude/settings.json:4 user",
                    "allow network.access(*.npmjs.org:443) /ws/.claude/settings.json:4 user",
                    "allow network.access([::1]:8080) /ws/.claude/settings.json:4 user",
                    "deny network.access(evil.example) /ws/.claude/settings.json:5 user",
                    "allow WebFetch(domain:docs.example.com) /ws/.claude/settings.json:8 "
                    "user",
                    "deny WebFetch /ws/.claude/settings.json:8 user"));
    EXPECT_TRUE(settings->warnings.empty()) << joined(settings->warnings);
}

TEST(NetworkSettingsTest, ClaudeCodesOtherNetworkKeysAreWarningsThatSayWhatWeDoInstead) {
    auto settings = parse(R"json({"sandbox": {"network": {
  "allowUnixSockets": ["~/.ssh/agent.sock"],
  "allowAllUnixSockets": true,
  "allowLocalBinding": true,
  "httpProxyPort": 8080,
  "socksProxyPort": 8081,
  "allowMachLookup": ["x"],
  "allowManagedDomainsOnly": true,
  "somethingNew": 1
}}})json");
    ASSERT_THAT(settings, IsOk());
    EXPECT_TRUE(settings->rules.empty());
    EXPECT_FALSE(settings->managed_domains_only);  // not the managed layer
    EXPECT_THAT(
        settings->warnings,
        ElementsAre(
            HasSubstr("settings.json:3: \"sandbox.network.allowAllUnixSockets\" is ignored: a "
                      "host socket is reachable in the sandbox only when its path is mounted"),
            HasSubstr("settings.json:4: \"sandbox.network.allowLocalBinding\" is ignored: "
                      "commands may always listen on the sandbox's loopback"),
            HasSubstr("settings.json:7: \"sandbox.network.allowMachLookup\" is for macOS"),
            HasSubstr("settings.json:8: \"sandbox.network.allowManagedDomainsOnly\" counts only "
                      "in the managed settings file; ignored"),
            HasSubstr("settings.json:2: \"sandbox.network.allowUnixSockets\" is ignored"),
            HasSubstr("settings.json:5: \"sandbox.network.httpProxyPort\" is ignored: with "
                      "--network allowlist stockade's own proxy decides each connection"),
            HasSubstr("settings.json:6: \"sandbox.network.socksProxyPort\" is ignored"),
            HasSubstr("settings.json:9: \"sandbox.network.somethingNew\" is not used by "
                      "stockade; ignored")));
}

TEST(NetworkSettingsTest, MalformedEntriesAreErrorsAtTheirPosition) {
    auto bad = parse(R"json({"sandbox": {"network": {
  "allowedDomains": ["pypi.org", "https://files.pythonhosted.org/"]}}})json");
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message,
                HasSubstr("settings.json:2:34: sandbox.network.allowedDomains: "
                          "\"https://files.pythonhosted.org/\" is not a host name"));
    auto not_array = parse(R"json({"sandbox": {"network": {"deniedDomains": "x.io"}}})json");
    ASSERT_THAT(not_array, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(not_array.error().message,
                HasSubstr("\"sandbox.network.deniedDomains\" must be an array of strings"));
    EXPECT_THAT(parse(R"json({"sandbox": {"network": ["x.io"]}})json"),
                HasErrc(Errc::kInvalidArgument));
    auto lock = parse(R"json({"sandbox": {"network": {"allowManagedDomainsOnly": "yes"}}})json",
                      Layer::kManaged);
    ASSERT_THAT(lock, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(lock.error().message, HasSubstr("must be true or false, got string"));
}

// ---- policies -------------------------------------------------------------------------------

SettingsSource source(Layer layer, std::string origin, std::string text) {
    return SettingsSource{.layer = layer, .origin = std::move(origin), .text = std::move(text)};
}

Result<Policy> load(std::vector<SettingsSource> sources, Mode mode = Mode::kLocal,
                    std::vector<std::string> presets = {},
                    std::optional<Preset> preset = std::nullopt) {
    return Policy::load(sources, PolicyOptions{.preset = preset,
                                               .mode = mode,
                                               .workspace_root = "/ws",
                                               .home = "/home/u",
                                               .allow_presets = std::move(presets)});
}

constexpr const char* kManagedPath = "/etc/stockade/settings.json";
constexpr const char* kProjectPath = "/ws/.stockade/settings.json";
constexpr const char* kUserPath = "/home/u/.config/stockade/settings.json";

TEST(NetworkPolicyTest, DenyWinsOverAllowWhateverTheLayer) {
    auto p = load({source(Layer::kUser, kUserPath,
                          R"({"sandbox": {"network": {"deniedDomains": ["*.evil.example"]}}})"),
                   source(Layer::kProject, kProjectPath,
                          R"({"sandbox": {"network": {"allowedDomains": ["*"]}}})")});
    ASSERT_THAT(p, IsOk());
    const RequestOutcome denied = p->evaluate_one(connect("cdn.evil.example", 443));
    EXPECT_EQ(denied.decision, Decision::kDeny);
    ASSERT_TRUE(denied.rule.has_value());
    EXPECT_EQ(denied.rule->origin, std::string(kUserPath) + ":1");
    EXPECT_EQ(p->evaluate_one(connect("evil.example", 443)).decision, Decision::kAllow);
}

TEST(NetworkPolicyTest, NoRuleFallsBackToThePresetThenTheMode) {
    auto local = load({});
    ASSERT_THAT(local, IsOk());
    EXPECT_EQ(local->evaluate_one(connect("pypi.org", 443)).decision, Decision::kAsk);
    auto ci = load({}, Mode::kCi);
    ASSERT_THAT(ci, IsOk());
    EXPECT_EQ(ci->evaluate_one(connect("pypi.org", 443)).decision, Decision::kDeny);
    auto hosted = load({}, Mode::kHosted, {"registries"});
    ASSERT_THAT(hosted, IsOk());
    EXPECT_EQ(hosted->evaluate_one(connect("pypi.org", 443)).decision, Decision::kAllow);
    EXPECT_EQ(hosted->evaluate_one(connect("pypi.org", 22)).decision, Decision::kDeny);
}

TEST(NetworkPolicyTest, ThePresetsRulesComeFromThePreset) {
    auto p = load({}, Mode::kCi, {"registries"});
    ASSERT_THAT(p, IsOk());
    const RequestOutcome npm = p->evaluate_one(connect("registry.npmjs.org", 443));
    EXPECT_EQ(npm.decision, Decision::kAllow);
    ASSERT_TRUE(npm.rule.has_value());
    EXPECT_EQ(npm.rule->text, "network.access(registry.npmjs.org:443)");
    EXPECT_EQ(npm.rule->origin, "preset registries");
    EXPECT_EQ(npm.rule->layer, Layer::kCommandLine);
    // Debian's archive on plain HTTP too; GitHub on HTTPS only.
    EXPECT_EQ(p->evaluate_one(connect("deb.debian.org", 80)).decision, Decision::kAllow);
    EXPECT_EQ(p->evaluate_one(connect("github.com", 80)).decision, Decision::kDeny);
    EXPECT_EQ(p->evaluate_one(connect("gist.github.com", 443)).decision, Decision::kDeny);
    // A command's analysis (no port yet) of `npm ci` is let through in ci.
    EXPECT_EQ(p->evaluate_one(connect("registry.npmjs.org", 0)).decision, Decision::kAllow);
    // The preset is not the network outright.
    EXPECT_EQ(p->evaluate_one(connect("", 0)).decision, Decision::kDeny);

    auto unknown = load({}, Mode::kLocal, {"everything"});
    ASSERT_THAT(unknown, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(unknown.error().message,
                HasSubstr("no network preset \"everything\" (known: registries)"));
}

TEST(NetworkPresetTest, ListsAreValidRulesOnHttpsOrHttp) {
    EXPECT_THAT(network_preset_names(), ElementsAre("registries"));
    EXPECT_FALSE(network_preset("nope").has_value());
    const auto registries = network_preset("registries");
    ASSERT_TRUE(registries.has_value());
    std::vector<std::string> hosts;
    for (std::string_view entry : *registries) {
        auto pattern = HostPattern::parse(entry);
        ASSERT_THAT(pattern, IsOk()) << entry;
        EXPECT_EQ(pattern->kind(), HostPattern::Kind::kExact) << entry;
        EXPECT_TRUE(pattern->port() == 443 || pattern->port() == 80) << entry;
        hosts.push_back(pattern->host());
    }
    for (const char* host :
         {"registry.npmjs.org", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org",
          "crates.io", "index.crates.io", "static.crates.io", "proxy.golang.org", "sum.golang.org",
          "storage.googleapis.com", "deb.debian.org", "security.debian.org", "github.com",
          "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
          "raw.githubusercontent.com", "release-assets.githubusercontent.com"}) {
        EXPECT_NE(std::find(hosts.begin(), hosts.end(), host), hosts.end()) << host;
    }
}

TEST(NetworkPolicyTest, TheManagedLockLeavesOnlyTheManagedLayersAllows) {
    auto p = load({source(Layer::kManaged, kManagedPath, R"json({
  "sandbox": {"network": {"allowManagedDomainsOnly": true,
                          "allowedDomains": ["pypi.org"]}},
  "permissions": {"allow": ["WebFetch(domain:docs.example.com)"], "ask": ["network.access(ask.example)"]}
})json"),
                   source(Layer::kProject, kProjectPath, R"json({
  "sandbox": {"network": {"allowedDomains": ["github.com"], "deniedDomains": ["pypi.org:22"]}},
  "permissions": {"allow": ["network.access", "Bash(ls)"], "ask": ["WebFetch(domain:x.io)"]}
})json")},
                  Mode::kLocal, {"registries"});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(p->managed_domains_only(), std::string(kManagedPath) + ":2");
    // The managed allows and asks count; deny rules of every layer too.
    EXPECT_EQ(p->evaluate_one(connect("pypi.org", 443)).decision, Decision::kAllow);
    EXPECT_EQ(p->evaluate_one(connect("docs.example.com", 443)).decision, Decision::kAllow);
    EXPECT_EQ(p->evaluate_one(connect("ask.example", 443)).decision, Decision::kAsk);
    EXPECT_EQ(p->evaluate_one(connect("pypi.org", 22)).decision, Decision::kDeny);
    // Every other layer's allow and ask is gone, the preset's too; no rule: deny, even locally.
    for (const char* host : {"github.com", "x.io", "registry.npmjs.org", "other.example"}) {
        const RequestOutcome out = p->evaluate_one(connect(host, 443));
        EXPECT_EQ(out.decision, Decision::kDeny) << host;
        EXPECT_FALSE(out.rule.has_value()) << host;
        EXPECT_THAT(out.reason, HasSubstr("the managed settings allow only the hosts they list"));
    }
    EXPECT_EQ(p->evaluate_one(connect("", 0)).decision, Decision::kDeny);
    // Other rules are untouched.
    EXPECT_TRUE(std::any_of(p->rules().begin(), p->rules().end(),
                            [](const Rule& r) { return r.text() == "Bash(ls)"; }));
    const std::string warnings = joined(p->warnings());
    EXPECT_THAT(warnings, HasSubstr(std::string(kProjectPath) +
                                    ":2: rule \"network.access(github.com)\" ignored: the managed "
                                    "settings allow only their own hosts"));
    EXPECT_THAT(warnings, HasSubstr("rule \"network.access\" ignored"));
    EXPECT_THAT(warnings, HasSubstr("rule \"WebFetch(domain:x.io)\" ignored"));
    EXPECT_THAT(warnings,
                HasSubstr("preset registries: rule \"network.access(registry.npmjs.org:443)"
                          "\" and the rest of the preset ignored"));
    EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 4) << warnings;
}

TEST(NetworkPolicyTest, PinsComeOnlyFromTheOperatorsSettings) {
    // A pin may lead a name to a private address: a project's file (it comes with the
    // repository) must not, the managed and user files may.
    auto p = load({source(Layer::kManaged, kManagedPath,
                          R"({"sandbox": {"network": {"resolve": ["pypi.org=10.0.0.5"]}}})"),
                   source(Layer::kProject, kProjectPath,
                          R"({"sandbox": {"network": {"resolve": ["github.com=127.0.0.1"]}}})")},
                  Mode::kCi, {});
    ASSERT_THAT(p, IsOk());
    ASSERT_EQ(p->sandbox().resolve.size(), 1U);
    EXPECT_EQ(p->sandbox().resolve[0].value, "pypi.org=10.0.0.5");
    EXPECT_EQ(p->sandbox().resolve[0].origin, std::string(kManagedPath) + ":1");
    EXPECT_THAT(joined(p->warnings()),
                HasSubstr(std::string(kProjectPath) +
                          ":1: a project settings file cannot mount host paths, set variables or "
                          "pin names in the sandbox (it comes with the repository); "
                          "\"github.com=127.0.0.1\" ignored"));
    auto bad = load({source(Layer::kManaged, kManagedPath,
                            R"({"sandbox": {"network": {"resolve": ["pypi.org"]}}})")},
                    Mode::kCi, {});
    EXPECT_THAT(bad, HasErrc(Errc::kInvalidArgument));
}

TEST(NetworkPolicyTest, TheLockBeatsAPermissivePreset) {
    auto p = load({source(Layer::kManaged, kManagedPath,
                          R"({"sandbox": {"network": {"allowManagedDomainsOnly": true}}})")},
                  Mode::kLocal, {}, Preset::kDangerFullAccess);
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(p->evaluate_one(connect("pypi.org", 443)).decision, Decision::kDeny);
    // Set to false, or outside the managed layer, it locks nothing.
    auto off = load({source(Layer::kManaged, kManagedPath,
                            R"({"sandbox": {"network": {"allowManagedDomainsOnly": false}}})"),
                     source(Layer::kUser, kUserPath,
                            R"({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                "allowedDomains": ["pypi.org"]}}})")});
    ASSERT_THAT(off, IsOk());
    EXPECT_TRUE(off->managed_domains_only().empty());
    EXPECT_EQ(off->evaluate_one(connect("pypi.org", 443)).decision, Decision::kAllow);
}

// ---- explain --------------------------------------------------------------------------------

ConnectionExplanation explain(const Policy& p, std::string_view target) {
    auto request = connection_request(target);
    EXPECT_THAT(request, IsOk()) << target;
    return explain_connection(p, *request);
}

// The text without its final newline (the golden file adds one).
std::string text_of(const ConnectionExplanation& explanation) {
    std::string text = connection_text(explanation);
    if (text.ends_with('\n')) {
        text.pop_back();
    }
    return text;
}

Policy explained_policy(Mode mode = Mode::kLocal) {
    auto p = load({source(Layer::kProject, kProjectPath, R"json({
  "sandbox": {"network": {"deniedDomains": ["*.evil.example"]}},
  "permissions": {"ask": ["WebFetch(domain:uploads.example.com)"]}
})json")},
                  mode, {"registries"});
    EXPECT_THAT(p, IsOk());
    return std::move(p).value();
}

TEST(ExplainNetworkTest, TextNamesTheDecisionTheRuleAndItsSource) {
    const Policy p = explained_policy();
    stockade::testing::expect_golden("policy", "explain_network_preset.txt",
                                     text_of(explain(p, "PyPI.org:443")));
    stockade::testing::expect_golden("policy", "explain_network_deny.txt",
                                     text_of(explain(p, "cdn.evil.example:443")));
    stockade::testing::expect_golden("policy", "explain_network_default.txt",
                                     text_of(explain(p, "[2001:db8::1]:8443")));
    stockade::testing::expect_golden("policy", "explain_network_no_port.txt",
                                     text_of(explain(p, "files.pythonhosted.org")));
    const Policy ci = explained_policy(Mode::kCi);
    stockade::testing::expect_golden("policy", "explain_network_ask_in_ci.txt",
                                     text_of(explain(ci, "uploads.example.com:443")));
}

TEST(ExplainNetworkTest, TextSaysWhenTheManagedSettingsLockTheHosts) {
    auto p = load({source(Layer::kManaged, kManagedPath,
                          R"({"sandbox": {"network": {"allowManagedDomainsOnly": true}}})")},
                  Mode::kLocal, {"registries"});
    ASSERT_THAT(p, IsOk());
    stockade::testing::expect_golden("policy", "explain_network_locked.txt",
                                     text_of(explain(*p, "pypi.org:443")));
}

TEST(ExplainNetworkTest, JsonHasTheSameContent) {
    const Policy p = explained_policy();
    stockade::testing::expect_golden("policy", "explain_network_preset.json",
                                     connection_json(explain(p, "pypi.org:443")).dump(2));
    stockade::testing::expect_golden("policy", "explain_network_default.json",
                                     connection_json(explain(p, "example.org")).dump(2));
}

TEST(ExplainNetworkTest, TargetsAreHostAndOptionalPort) {
    EXPECT_THAT(connection_request("https://pypi.org/"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(connection_request(""), HasErrc(Errc::kInvalidArgument));
    auto request = connection_request("Example.ORG.");
    ASSERT_THAT(request, IsOk());
    EXPECT_EQ(*request, connect("example.org", 0));
    EXPECT_EQ(describe_request(connect("pypi.org", 443)), "pypi.org:443");
    EXPECT_EQ(describe_request(connect("2001:db8::1", 443)), "[2001:db8::1]:443");
    EXPECT_EQ(describe_request(connect("pypi.org", 0)), "pypi.org");
}

TEST(ExplainNetworkTest, ACallsNetworkRequestShowsItsPortInJson) {
    const Policy p = explained_policy();
    const std::vector<CapabilityRequest> requests = {connect("pypi.org", 443)};
    const nlohmann::json out = explain_json(explain_call(p, "bash", requests, {}));
    EXPECT_EQ(out["requests"][0]["port"], 443);
    EXPECT_EQ(out["requests"][0]["origin"], "preset registries");
    EXPECT_THAT(explain_text(explain_call(p, "bash", requests, {})),
                HasSubstr("allow network.access pypi.org:443"));
}

}  // namespace
}  // namespace stockade::policy
