#include "runner/host/tenants.h"

#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using ::testing::AllOf;
using testing::HasErrc;
using ::testing::HasSubstr;
using ::testing::IsNull;
using testing::IsOk;
using ::testing::Not;

// SHA-256 of "abc" (FIPS 180-2, appendix B.1) and of "acme-token", "beta-token".
constexpr const char* kAbcHash = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const std::string kAcmeHash = token_hash_hex("acme-token");
const std::string kBetaHash = token_hash_hex("beta-token");

std::string full_json() {
    return R"({"tenants": [
  {"name": "acme", "token_sha256": [")" +
           kAcmeHash + R"x("],
   "workspace_root": "/srv/stockade/acme", "host_uid_range": "300000-365535",
   "policy": "/etc/stockade/acme.json", "network": "allowlist",
   "allow": ["Bash(git *)", "Read"], "ask": ["Bash(npm *)"], "deny": ["Bash(rm *)"],
   "limits": {"sessions": 8, "calls": 2, "calls_per_second": 20.5, "memory": "1G",
              "pids": "256", "cpu": "1.5", "cpu_weight": 300, "tmp_size": "256M", "disk": "2G",
              "idle_ttl": "30m", "max_lifetime": "7d"}},
  {"name": "beta-2", "token_sha256": [")x" +
           kBetaHash + R"("],
   "workspace_root": "/srv/stockade/beta"}
]})";
}

std::string full_toml() {
    return R"(# two tenants
[[tenants]]
name = "acme"
token_sha256 = [")" +
           kAcmeHash + R"x("]
workspace_root = "/srv/stockade/acme"
host_uid_range = "300000-365535"
policy = "/etc/stockade/acme.json"
network = "allowlist"
allow = ["Bash(git *)", "Read"]
ask = ["Bash(npm *)"]
deny = ["Bash(rm *)"]

[tenants.limits]
sessions = 8
calls = 2
calls_per_second = 20.5
memory = "1G"
pids = 256
cpu = 1.5
tmp_size = "256M"
cpu_weight = 300
disk = "2G"
idle_ttl = "30m"
max_lifetime = "7d"

[[tenants]]
name = "beta-2"
token_sha256 = [")x" +
           kBetaHash + R"("]
workspace_root = "/srv/stockade/beta"
)";
}

// A one-tenant file with `fields` added to the tenant (each starting with a comma).
std::string one_tenant(const std::string& fields, const std::string& hash = kAcmeHash) {
    return R"({"tenants": [{"name": "acme", "token_sha256": [")" + hash +
           R"("], "workspace_root": "/srv/acme")" + fields + "}]}";
}

std::string limits(const std::string& fields) {
    return one_tenant(R"(, "limits": {)" + fields + "}");
}

// The error message of a file that must be refused (kInvalidArgument).
std::string refusal(const std::string& text, bool toml = false) {
    auto config = parse_tenants(text, toml);
    EXPECT_THAT(config, HasErrc(Errc::kInvalidArgument)) << text;
    if (config) {
        return {};
    }
    EXPECT_EQ(config.error().message.find('\n'), std::string::npos) << "one line";
    return config.error().message;
}

TEST(TenantsTest, ReadsEveryKeyOfAFullFile) {
    auto config = parse_tenants(full_json(), false);
    ASSERT_THAT(config, IsOk());
    ASSERT_EQ(config->tenants.size(), 2U);
    const Tenant& acme = config->tenants[0];
    EXPECT_EQ(acme.name, "acme");
    ASSERT_EQ(acme.token_hashes.size(), 1U);
    EXPECT_EQ(hex(acme.token_hashes[0]), kAcmeHash);
    EXPECT_EQ(acme.workspace_root, "/srv/stockade/acme");
    EXPECT_EQ(acme.host_uid_range, (HostIdRange{.first = 300000, .count = 65536}));
    EXPECT_EQ(acme.policy, "/etc/stockade/acme.json");
    EXPECT_EQ(acme.network, sandbox::NetworkMode::kAllowlist);
    EXPECT_EQ(acme.allow, (std::vector<std::string>{"Bash(git *)", "Read"}));
    EXPECT_EQ(acme.ask, (std::vector<std::string>{"Bash(npm *)"}));
    EXPECT_EQ(acme.deny, (std::vector<std::string>{"Bash(rm *)"}));
    EXPECT_EQ(acme.limits.sessions, 8U);
    EXPECT_EQ(acme.limits.calls, 2U);
    EXPECT_EQ(acme.limits.calls_per_second, 20.5);
    EXPECT_EQ(acme.limits.memory_bytes, 1ULL << 30);
    EXPECT_EQ(acme.limits.pids, 256U);
    EXPECT_EQ(acme.limits.cpu, 1.5);
    EXPECT_EQ(acme.limits.tmp_bytes, 256ULL << 20);
    EXPECT_EQ(acme.limits.cpu_weight, 300U);
    EXPECT_TRUE(config->cpu_weighted());
    EXPECT_EQ(acme.limits.disk_bytes, 2ULL << 30);
    EXPECT_EQ(acme.limits.idle_ttl, std::chrono::minutes(30));
    EXPECT_EQ(acme.limits.max_lifetime, std::chrono::days(7));
}

TEST(TenantsTest, TomlGivesTheSameConfigAsJson) {
    auto from_json = parse_tenants(full_json(), false);
    auto from_toml = parse_tenants(full_toml(), true);
    ASSERT_THAT(from_json, IsOk());
    ASSERT_THAT(from_toml, IsOk());
    EXPECT_EQ(*from_json, *from_toml);
}

TEST(TenantsTest, AbsentKeysTakeTheDefaults) {
    auto config = parse_tenants(full_json(), false);
    ASSERT_THAT(config, IsOk());
    const Tenant& beta = config->tenants[1];
    EXPECT_EQ(beta.name, "beta-2");
    EXPECT_EQ(beta.host_uid_range, std::nullopt);
    EXPECT_EQ(beta.policy, "");
    EXPECT_EQ(beta.network, sandbox::NetworkMode::kNone);
    EXPECT_TRUE(beta.allow.empty() && beta.ask.empty() && beta.deny.empty());
    EXPECT_EQ(beta.limits, TenantLimits{});
    EXPECT_EQ(beta.limits.sessions, 16U);
    EXPECT_EQ(beta.limits.calls, 4U);
    EXPECT_EQ(beta.limits.calls_per_second, 0);
    EXPECT_EQ(beta.limits.idle_ttl, std::chrono::seconds(1800));
    EXPECT_EQ(beta.limits.max_lifetime, std::chrono::seconds(86400));
    EXPECT_THAT(parse_tenants(limits(""), false), IsOk()) << "an empty limits table";
}

TEST(TenantsTest, NumbersAreTakenForLimitsAndDurations) {
    auto config = parse_tenants(
        limits(
            R"("pids": 64, "cpu": 0.5, "memory": 67108864, "idle_ttl": 90, "max_lifetime": "3600")"),
        false);
    ASSERT_THAT(config, IsOk());
    const TenantLimits& l = config->tenants[0].limits;
    EXPECT_EQ(l.pids, 64U);
    EXPECT_EQ(l.cpu, 0.5);
    EXPECT_EQ(l.memory_bytes, 67108864U);
    EXPECT_EQ(l.idle_ttl, std::chrono::seconds(90));
    EXPECT_EQ(l.max_lifetime, std::chrono::hours(1));
}

TEST(TenantsTest, HashesAreReadInEitherCase) {
    std::string upper = kAbcHash;
    for (char& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    auto config = parse_tenants(one_tenant("", upper), false);
    ASSERT_THAT(config, IsOk());
    EXPECT_EQ(hex(config->tenants[0].token_hashes[0]), kAbcHash);
}

TEST(TenantsTest, RefusesAFileWithoutTenants) {
    EXPECT_THAT(refusal(R"({"tenants": []})"), HasSubstr("tenants"));
    EXPECT_THAT(refusal("{}"), HasSubstr("tenants"));
    EXPECT_THAT(refusal("[]"), HasSubstr("tenants"));
    EXPECT_THAT(refusal("", true), HasSubstr("tenants"));
    EXPECT_THAT(refusal(R"({"tenants": ["acme"]})"), HasSubstr("tenants[0]"));
}

TEST(TenantsTest, RefusesUnknownKeysAtEveryLevelNamingThemAndTheValidOnes) {
    EXPECT_THAT(refusal(R"({"tenants": [], "tenant": []})"),
                AllOf(HasSubstr("\"tenant\""), HasSubstr("tenants")));
    const std::string tenant = refusal(one_tenant(R"(, "tokens": [])"));
    EXPECT_THAT(tenant, HasSubstr("tenant \"acme\""));
    EXPECT_THAT(tenant, HasSubstr("unknown key \"tokens\""));
    EXPECT_THAT(tenant, HasSubstr("token_sha256"));
    const std::string limit = refusal(limits(R"("sesions": 4)"));
    EXPECT_THAT(limit, HasSubstr("unknown key \"limits.sesions\""));
    EXPECT_THAT(limit, HasSubstr("sessions, calls"));
    EXPECT_THAT(refusal(full_toml() + "\n[tenants.limits]\nmemroy = \"1G\"\n", true),
                HasSubstr("tenant \"beta-2\": unknown key \"limits.memroy\""));
}

TEST(TenantsTest, RefusesAKeyGivenTwice) {
    EXPECT_THAT(refusal(one_tenant(R"(, "network": "allowlist", "network": "none")")),
                HasSubstr("tenants[0].network: given twice"));
    EXPECT_THAT(refusal(limits(R"("memory": "1G", "calls": 2, "memory": "2G")")),
                HasSubstr("tenants[0].limits.memory: given twice"));
    EXPECT_THAT(refusal(R"({"tenants": [], "tenants": []})"), HasSubstr("tenants: given twice"));
    std::string beta_twice = full_json();
    const std::string root = R"("workspace_root": "/srv/stockade/beta")";
    beta_twice.replace(beta_twice.find(root), root.size(), root + ", " + root);
    EXPECT_THAT(refusal(beta_twice), HasSubstr("tenants[1].workspace_root: given twice"));
    EXPECT_THAT(refusal("[[tenants]]\nname = \"a\"\nname = \"b\"\n", true),
                HasSubstr("invalid TOML at line 3"));
}

TEST(TenantsTest, RefusesInvalidSyntaxSayingWhere) {
    EXPECT_THAT(refusal(R"({"tenants": [)"), HasSubstr("invalid JSON at line 1"));
    EXPECT_THAT(refusal("[[tenants]\n", true), HasSubstr("invalid TOML at line 1"));
    EXPECT_THAT(refusal(std::string(100, '[') + std::string(100, ']')), HasSubstr("nested deeper"));
    EXPECT_THAT(refusal(full_toml() + "idle_ttl = 07:32:00\n", true),
                HasSubstr("\"idle_ttl\" (line"));
}

TEST(TenantsTest, RefusesBadOrRepeatedNames) {
    EXPECT_THAT(refusal(R"({"tenants": [{"workspace_root": "/a"}]})"),
                HasSubstr("tenants[0]: name is missing"));
    for (const char* name : {"", "Acme", "-acme", "_acme", "ac me", "acme/../x"}) {
        EXPECT_THAT(refusal(R"({"tenants": [{"name": ")" + std::string(name) + R"("}]})"),
                    HasSubstr("tenants[0]: name"))
            << name;
    }
    EXPECT_THAT(refusal(R"({"tenants": [{"name": ")" + std::string(64, 'a') + R"("}]})"),
                HasSubstr("1 to 63"));
    EXPECT_THAT(parse_tenants(R"({"tenants": [{"name": ")" + std::string(63, 'a') +
                                  R"(", "token_sha256": [")" + kAcmeHash +
                                  R"("], "workspace_root": "/a"}]})",
                              false),
                IsOk());
    const std::string twice = R"({"tenants": [
        {"name": "acme", "token_sha256": [")" +
                              kAcmeHash +
                              R"("], "workspace_root": "/a"},
        {"name": "acme", "token_sha256": [")" +
                              kBetaHash + R"("], "workspace_root": "/b"}]})";
    EXPECT_THAT(refusal(twice), HasSubstr("both named \"acme\""));
}

TEST(TenantsTest, RefusesMissingOrMalformedTokenHashes) {
    const std::string base = R"({"tenants": [{"name": "acme", "workspace_root": "/a")";
    EXPECT_THAT(refusal(base + "}]}"), HasSubstr("tenant \"acme\": token_sha256"));
    EXPECT_THAT(refusal(base + R"(, "token_sha256": []}]})"), HasSubstr("at least one"));
    EXPECT_THAT(refusal(base + R"(, "token_sha256": ")" + kAcmeHash + R"("}]})"),
                HasSubstr("token_sha256: give a list"));
    const std::string short_hash = refusal(one_tenant("", kAcmeHash.substr(1)));
    EXPECT_THAT(short_hash, HasSubstr("tenant \"acme\": token_sha256[0]"));
    EXPECT_THAT(short_hash, HasSubstr("64 hex digits"));
    EXPECT_THAT(short_hash, Not(HasSubstr(kAcmeHash.substr(1)))) << "a token is never echoed";
    EXPECT_THAT(refusal(one_tenant("", kAcmeHash.substr(1) + "g")), HasSubstr("token_sha256[0]"));
}

TEST(TenantsTest, WithAccessTokensTenantsListNoTokenHashes) {
    const std::string without = R"({"tenants": [{"name": "acme", "workspace_root": "/a"},
                                                {"name": "beta", "workspace_root": "/b"}]})";
    auto oauth = parse_tenants(without, false, TenantAuth::kAccessTokens);
    ASSERT_THAT(oauth, IsOk());
    EXPECT_TRUE(oauth->tenants[0].token_hashes.empty());
    EXPECT_THAT(find_tenant(*oauth, "anything"), IsNull());
    auto with = parse_tenants(one_tenant(""), false, TenantAuth::kAccessTokens);
    ASSERT_THAT(with, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with.error().message,
                HasSubstr("tenant \"acme\": token_sha256: this server takes OAuth access tokens "
                          "(serve --oauth)"));
    EXPECT_THAT(with.error().message, Not(HasSubstr(kAcmeHash)));
    // stockade doctor --tenants reads either kind.
    EXPECT_THAT(parse_tenants(without, false, TenantAuth::kEither), IsOk());
    auto either = parse_tenants(one_tenant(""), false, TenantAuth::kEither);
    ASSERT_THAT(either, IsOk());
    EXPECT_EQ(either->tenants[0].token_hashes.size(), 1U);
    EXPECT_THAT(parse_tenants(one_tenant("", "bad"), false, TenantAuth::kEither),
                HasErrc(Errc::kInvalidArgument));
}

TEST(TenantsTest, RefusesATokenOfTwoTenants) {
    const std::string text = R"({"tenants": [
        {"name": "acme", "token_sha256": [")" +
                             kAcmeHash +
                             R"("], "workspace_root": "/a"},
        {"name": "beta", "token_sha256": [")" +
                             kBetaHash + R"(", ")" + kAcmeHash + R"("], "workspace_root": "/b"}]})";
    EXPECT_THAT(refusal(text),
                HasSubstr("tenant \"beta\": token_sha256[1] is also a token of tenant \"acme\""));
}

TEST(TenantsTest, RefusesAWorkspaceRootThatIsNotAbsolute) {
    const std::string base =
        R"({"tenants": [{"name": "acme", "token_sha256": [")" + kAcmeHash + R"("])";
    EXPECT_THAT(refusal(base + "}]}"), HasSubstr("tenant \"acme\": workspace_root"));
    EXPECT_THAT(refusal(base + R"(, "workspace_root": "srv/acme"}]})"),
                HasSubstr("workspace_root: give the absolute path"));
    EXPECT_THAT(refusal(base + R"(, "workspace_root": 7}]})"),
                HasSubstr("workspace_root: must be a string, not number"));
    EXPECT_THAT(refusal(base + R"(, "workspace_root": "/srv/a\u0000b"}]})"),
                HasSubstr("workspace_root: holds a NUL"));
}

TEST(TenantsTest, RefusesMalformedAndOverlappingHostIdRanges) {
    EXPECT_THAT(refusal(one_tenant(R"(, "host_uid_range": "300000")")),
                HasSubstr("tenant \"acme\": host_uid_range: \"300000\" is not FIRST-LAST"));
    EXPECT_THAT(refusal(one_tenant(R"(, "host_uid_range": "0-10")")), HasSubstr("host_uid_range"));
    auto two = [](const std::string& a, const std::string& b) {
        return R"({"tenants": [
            {"name": "acme", "token_sha256": [")" +
               kAcmeHash + R"("], "workspace_root": "/a")" + a + R"(},
            {"name": "beta", "token_sha256": [")" +
               kBetaHash + R"("], "workspace_root": "/b")" + b + "}]}";
    };
    EXPECT_THAT(refusal(two(R"(, "host_uid_range": "300000-365535")",
                            R"(, "host_uid_range": "365535-400000")")),
                HasSubstr("tenant \"beta\": host_uid_range \"365535-400000\" overlaps "
                          "\"300000-365535\" of tenant \"acme\""));
    EXPECT_THAT(refusal(two("", R"(, "host_uid_range": "1879048193-1879048200")")),
                HasSubstr("overlaps the default"));
    EXPECT_THAT(parse_tenants(two(R"(, "host_uid_range": "300000-365535")",
                                  R"(, "host_uid_range": "365536-400000")"),
                              false),
                IsOk());
    EXPECT_THAT(parse_tenants(two("", ""), false), IsOk()) << "both in the default range";
}

TEST(TenantsTest, RefusesAnUnknownNetworkMode) {
    EXPECT_THAT(refusal(one_tenant(R"(, "network": "host")")),
                HasSubstr("tenant \"acme\": network: \"host\" is not a mode"));
}

TEST(TenantsTest, ImageIsOneImageOrTheListSessionsChooseFrom) {
    auto one = parse_tenants(one_tenant(R"(, "image": "debian:12")"), false);
    ASSERT_THAT(one, IsOk());
    EXPECT_EQ(one->tenants[0].images, std::vector<std::string>{"debian:12"});
    const std::string pinned = "tools@sha256:" + std::string(64, 'a');
    auto many = parse_tenants(
        one_tenant(R"(, "image": ["python:3.12", ")" + pinned + R"(", "host"])"), false);
    ASSERT_THAT(many, IsOk());
    EXPECT_EQ(many->tenants[0].images, (std::vector<std::string>{"python:3.12", pinned, "host"}));
    auto none = parse_tenants(one_tenant(""), false);
    ASSERT_THAT(none, IsOk());
    EXPECT_TRUE(none->tenants[0].images.empty());
    EXPECT_THAT(refusal(one_tenant(R"(, "image": "../etc")")),
                HasSubstr("tenant \"acme\": image: image name \"../etc\""));
    EXPECT_THAT(refusal(one_tenant(R"(, "image": ["ok", "x@sha256:123"])")), HasSubstr("image"));
    EXPECT_THAT(refusal(one_tenant(R"(, "image": 7)")), HasSubstr("image"));
}

TEST(TenantsTest, RefusesRulesThatAreNotListsOfStrings) {
    EXPECT_THAT(refusal(one_tenant(R"x(, "allow": "Bash(git *)")x")),
                HasSubstr("tenant \"acme\": allow: must be a list of strings"));
    EXPECT_THAT(refusal(one_tenant(R"(, "deny": [1])")), HasSubstr("deny: must be a list"));
}

TEST(TenantsTest, RefusesLimitsOutOfRange) {
    struct Case {
        std::string fields;
        std::string expected;
    };
    const Case cases[] = {
        {R"("sessions": 0)", "limits.sessions: must be a whole number above 0"},
        {R"("sessions": -1)", "limits.sessions: must be a whole number above 0"},
        {R"("calls": 1.5)", "limits.calls: must be a whole number above 0"},
        {R"("calls": "4")", "limits.calls: must be a whole number above 0"},
        {R"("calls_per_second": -1)", "limits.calls_per_second: must be 0 (unlimited) or more"},
        {R"("calls_per_second": "20")", "limits.calls_per_second: must be a number"},
        {R"("memory": "1X")", "limits.memory: \"1X\" is not a size"},
        {R"("memory": "1M")", "limits.memory: at least 4M"},
        {R"("memory": true)", "limits.memory: must be a string such as \"1G\""},
        {R"("tmp_size": "0")", "limits.tmp_size: must be more than 0"},
        {R"("disk": "lots")", "limits.disk: \"lots\" is not a size"},
        {R"("pids": "1")", "limits.pids: 1 is out of range"},
        {R"("cpu": "0")", "limits.cpu: CPU fraction 0 is out of range"},
        {R"("cpu_weight": 0)", "limits.cpu_weight: must be a whole number above 0"},
        {R"("cpu_weight": 10001)", "limits.cpu_weight: must be 1 to 10000"},
        {R"("idle_ttl": "0")", "limits.idle_ttl: \"0\" is not a duration"},
        {R"("idle_ttl": 0)", "limits.idle_ttl: \"0\" is not a duration"},
        {R"("idle_ttl": "1.5h")", "limits.idle_ttl: \"1.5h\" is not a duration"},
        {R"("idle_ttl": "30 m")", "limits.idle_ttl: \"30 m\" is not a duration"},
        {R"("idle_ttl": "-5")", "limits.idle_ttl: \"-5\" is not a duration"},
        {R"("max_lifetime": "2w")", "limits.max_lifetime: \"2w\" is not a duration"},
        {R"("max_lifetime": "99999999999d")", "limits.max_lifetime: \"99999999999d\" is too long"},
        {R"("max_lifetime": 1.5)", "limits.max_lifetime: must be whole seconds"},
        {R"("max_lifetime": null)", "limits.max_lifetime: must be whole seconds"},
    };
    for (const Case& c : cases) {
        EXPECT_THAT(refusal(limits(c.fields)), HasSubstr("tenant \"acme\": " + c.expected))
            << c.fields;
    }
    EXPECT_THAT(refusal(one_tenant(R"(, "limits": 4)")), HasSubstr("limits: must be a table"));
    EXPECT_THAT(refusal(full_toml() + "[tenants.limits]\ncalls_per_second = nan\n", true),
                HasSubstr("tenant \"beta-2\": limits.calls_per_second: must be 0"));
}

TEST(TenantsTest, LoadReadsJsonOrTomlByTheNameAndNamesTheFileInErrors) {
    char tmpl[] = "/tmp/stockade-tenants-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir + "/" + name) << text;
        return dir + "/" + name;
    };
    auto from_json = load_tenants(write("tenants.json", full_json()));
    auto from_toml = load_tenants(write("tenants.toml", full_toml()));
    ASSERT_THAT(from_json, IsOk());
    ASSERT_THAT(from_toml, IsOk());
    EXPECT_EQ(*from_json, *from_toml);
    const std::string bad = write("bad.toml", full_json());  // JSON is not TOML
    auto refused = load_tenants(bad);
    ASSERT_THAT(refused, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused.error().message, HasSubstr("\"" + bad + "\""));
    auto missing = load_tenants(dir + "/none.json");
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_THAT(missing.error().message, HasSubstr(dir + "/none.json"));
    std::filesystem::remove_all(dir);
}

TEST(TenantsTest, FindTenantMatchesTheTokenOfEachTenantAndNothingElse) {
    auto config = parse_tenants(full_json(), false);
    ASSERT_THAT(config, IsOk());
    const Tenant* acme = find_tenant(*config, "acme-token");
    const Tenant* beta = find_tenant(*config, "beta-token");
    ASSERT_NE(acme, nullptr);
    ASSERT_NE(beta, nullptr);
    EXPECT_EQ(acme->name, "acme");
    EXPECT_EQ(beta->name, "beta-2");
    EXPECT_THAT(find_tenant(*config, "acme-token2"), IsNull());
    EXPECT_THAT(find_tenant(*config, "acme-toke"), IsNull());
    EXPECT_THAT(find_tenant(*config, kAcmeHash), IsNull()) << "the hash is not the token";
    EXPECT_THAT(find_tenant(*config, ""), IsNull());
    EXPECT_THAT(find_tenant(TenantsConfig{}, "acme-token"), IsNull());
}

TEST(TenantsTest, FindTenantRefusesTheEmptyTokenEvenWhenItsHashIsListed) {
    auto config = parse_tenants(one_tenant("", token_hash_hex("")), false);
    ASSERT_THAT(config, IsOk());
    EXPECT_THAT(find_tenant(*config, ""), IsNull());
}

TEST(TenantsTest, ATokenMayExpireAndIsThenRefused) {
    const std::string text = R"({"tenants": [{"name": "acme", "workspace_root": "/a",
        "token_sha256": [")" +
                             kAcmeHash + R"(",
                         {"sha256": ")" +
                             kBetaHash + R"(", "expires": "2027-01-31"},
                         {"sha256": ")" +
                             kAbcHash + R"(", "expires": "2027-01-31T18:00:00Z"}]}]})";
    auto config = parse_tenants(text, false);
    ASSERT_THAT(config, IsOk());
    using std::chrono::sys_days;
    const auto jan31 = sys_days(std::chrono::year(2027) / 1 / 31);
    ASSERT_EQ(config->tenants[0].token_expires.size(), 3U);
    EXPECT_EQ(config->tenants[0].token_expires[1], jan31);
    EXPECT_EQ(config->tenants[0].token_expires[2], jan31 + std::chrono::hours(18));
    const auto before = jan31 - std::chrono::seconds(1);
    EXPECT_NE(find_tenant(*config, "beta-token", before), nullptr);
    EXPECT_THAT(find_tenant(*config, "beta-token", jan31), IsNull()) << "expired at that instant";
    EXPECT_NE(find_tenant(*config, "abc", jan31), nullptr);
    EXPECT_THAT(find_tenant(*config, "abc", jan31 + std::chrono::hours(18)), IsNull());
    EXPECT_NE(find_tenant(*config, "acme-token", std::chrono::system_clock::time_point::max()),
              nullptr)
        << "a token without expires never expires";
    auto far = parse_tenants(R"({"tenants": [{"name": "acme", "workspace_root": "/a",
        "token_sha256": [{"sha256": ")" +
                                 kAcmeHash + R"(", "expires": "2999-12-31"}]}]})",
                             false);
    ASSERT_THAT(far, IsOk());
    EXPECT_NE(find_tenant(*far, "acme-token", jan31), nullptr) << "past 2262 too";
}

TEST(TenantsTest, RefusesAMalformedTokenEntry) {
    auto entry = [](const std::string& fields) {
        return refusal(
            R"({"tenants": [{"name": "acme", "workspace_root": "/a", "token_sha256": [)" + fields +
            "]}]}");
    };
    for (const char* when : {"\"2027-1-31\"", "\"2027-02-30\"", "\"2027-01-31 18:00:00\"",
                             "\"2027-01-31T18:00:00+01:00\"", "\"tomorrow\"", "20270131"}) {
        EXPECT_THAT(entry(R"({"sha256": ")" + kAcmeHash + R"(", "expires": )" + when + "}"),
                    HasSubstr("token_sha256[0].expires: give a UTC date or time"))
            << when;
    }
    EXPECT_THAT(entry(R"({"sha256": ")" + kAcmeHash + R"(", "expiry": "2027-01-31"})"),
                HasSubstr("token_sha256[0].expiry: is not a key of a token"));
    EXPECT_THAT(entry(R"({"expires": "2027-01-31"})"), HasSubstr("token_sha256[0]: not a SHA-256"));
}

// A pod's binding of the tenant of full_json() with `fields` (each starting with a comma).
std::string binding(const std::string& fields = "") {
    const std::string tenants = full_json();
    const std::size_t open = tenants.find("[\n  {") + 4;
    const std::size_t close = tenants.find("},\n  {\"name\": \"beta-2\"") + 1;
    return R"({"tenant": )" + tenants.substr(open, close - open) + fields + "}";
}

// The error message of a binding that must be refused (kInvalidArgument).
std::string binding_refusal(const std::string& text) {
    auto parsed = parse_pod_binding(text);
    EXPECT_THAT(parsed, HasErrc(Errc::kInvalidArgument)) << text;
    if (parsed) {
        return {};
    }
    EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos) << "one line";
    return parsed.error().message;
}

TEST(PodBindingTest, TheTenantIsReadExactlyAsATenantsFileReadsIt) {
    auto parsed = parse_pod_binding(binding());
    ASSERT_THAT(parsed, IsOk());
    auto file = parse_tenants(full_json(), false);
    ASSERT_THAT(file, IsOk());
    EXPECT_EQ(*parsed, (PodBinding{.tenant = file->tenants[0], .expires = std::nullopt}));
}

TEST(PodBindingTest, ExpiresIsAUtcDateOrTime) {
    using std::chrono::sys_days;
    const auto dec31 = sys_days(std::chrono::year(2026) / 12 / 31);
    auto at_time = parse_pod_binding(binding(R"(, "expires": "2026-12-31T18:30:05Z")"));
    ASSERT_THAT(at_time, IsOk());
    EXPECT_EQ(at_time->expires,
              dec31 + std::chrono::hours(18) + std::chrono::minutes(30) + std::chrono::seconds(5));
    auto at_day = parse_pod_binding(binding(R"(, "expires": "2026-12-31")"));
    ASSERT_THAT(at_day, IsOk());
    EXPECT_EQ(at_day->expires, dec31);
    for (const char* when : {"\"2026-12-31 18:00:00\"", "\"2026-02-30\"", "\"soon\"", "20261231",
                             "null", "\"2026-12-31T18:00:00+01:00\""}) {
        EXPECT_THAT(binding_refusal(binding(R"(, "expires": )" + std::string(when))),
                    HasSubstr("expires: give when the claim ends as a UTC date or time"))
            << when;
    }
}

TEST(PodBindingTest, RefusesUnknownKeysAtEveryLevelNamingThem) {
    const std::string top = binding_refusal(binding(R"(, "expiry": "2026-12-31")"));
    EXPECT_THAT(top, HasSubstr("unknown key \"expiry\""));
    EXPECT_THAT(top, HasSubstr("the keys are tenant, expires"));
    EXPECT_THAT(binding_refusal(R"({"tenants": [{"name": "acme"}]})"),
                HasSubstr("unknown key \"tenants\""));
    std::string extra = binding();
    extra.insert(extra.find(R"("name": "acme")"), R"("tokens": [], )");
    EXPECT_THAT(binding_refusal(extra), HasSubstr("tenant \"acme\": unknown key \"tokens\""));
    std::string limit = binding();
    limit.insert(limit.find(R"("sessions": 8)"), R"("sesions": 8, )");
    EXPECT_THAT(binding_refusal(limit),
                HasSubstr("tenant \"acme\": unknown key \"limits.sesions\""));
}

TEST(PodBindingTest, EveryCheckOfATenantHolds) {
    auto with = [](const std::string& from, const std::string& to) {
        std::string text = binding();
        text.replace(text.find(from), from.size(), to);
        return binding_refusal(text);
    };
    EXPECT_THAT(with(R"("name": "acme")", R"("name": "Acme")"), HasSubstr("tenant: name"));
    EXPECT_THAT(with(R"("name": "acme", )", ""), HasSubstr("tenant: name is missing"));
    EXPECT_THAT(with(R"("/srv/stockade/acme")", R"("srv/acme")"),
                HasSubstr("tenant \"acme\": workspace_root: give the absolute path"));
    const std::string hash = with(kAcmeHash, kAcmeHash.substr(1));
    EXPECT_THAT(hash, HasSubstr("tenant \"acme\": token_sha256[0]: not a SHA-256"));
    EXPECT_THAT(hash, Not(HasSubstr(kAcmeHash.substr(1)))) << "a hash is never echoed";
    EXPECT_THAT(with(kAcmeHash, kAcmeHash + R"(", ")" + kAcmeHash),
                HasSubstr("token_sha256[1] is also a token of tenant \"acme\""));
    EXPECT_THAT(with(R"("memory": "1G")", R"("memory": "1X")"),
                HasSubstr("tenant \"acme\": limits.memory: \"1X\" is not a size"));
    EXPECT_THAT(with(R"("network": "allowlist")", R"("network": "host")"),
                HasSubstr("network: \"host\" is not a mode"));
    EXPECT_THAT(with(R"("network": "allowlist")", R"("network": "none", "network": "none")"),
                HasSubstr("tenant.network: given twice"));
}

TEST(PodBindingTest, RefusesABodyWithoutOneTenantObject) {
    EXPECT_THAT(binding_refusal("{}"), HasSubstr("tenant: give the one tenant this pod serves"));
    EXPECT_THAT(binding_refusal(R"({"tenant": [{"name": "acme"}]})"),
                HasSubstr("tenant: give the one tenant"));
    EXPECT_THAT(binding_refusal("[]"), HasSubstr("must be an object with the key \"tenant\""));
    EXPECT_THAT(binding_refusal(""), HasSubstr("invalid JSON"));
    EXPECT_THAT(binding_refusal(R"({"tenant": {)"), HasSubstr("invalid JSON at line 1"));
    EXPECT_THAT(binding_refusal(std::string(100, '[') + std::string(100, ']')),
                HasSubstr("nested deeper"));
    EXPECT_THAT(binding_refusal(binding(", \"x\": \"" + std::string(1 << 20, 'x') + "\"")),
                HasSubstr("over the limit"));
}

TEST(DurationTextTest, ReadsWhatATenantsIdleTtlTakes) {
    EXPECT_EQ(parse_duration_text("90").value_or(std::chrono::seconds(0)),
              std::chrono::seconds(90));
    EXPECT_EQ(parse_duration_text("2s").value_or(std::chrono::seconds(0)), std::chrono::seconds(2));
    EXPECT_EQ(parse_duration_text("30m").value_or(std::chrono::seconds(0)),
              std::chrono::minutes(30));
    EXPECT_EQ(parse_duration_text("7d").value_or(std::chrono::seconds(0)), std::chrono::days(7));
    for (const char* bad : {"", "0", "1.5h", "30 m", "-5", "2w"}) {
        EXPECT_THAT(parse_duration_text(bad), HasErrc(Errc::kInvalidArgument)) << bad;
    }
}

TEST(UtcTimeTextTest, WritesWhatParsingReadsBack) {
    using std::chrono::sys_days;
    const auto when = sys_days(std::chrono::year(2026) / 3 / 4) + std::chrono::hours(5) +
                      std::chrono::minutes(6) + std::chrono::seconds(7);
    EXPECT_EQ(utc_time_text(when), "2026-03-04T05:06:07Z");
    EXPECT_EQ(utc_time_text(sys_days(std::chrono::year(1970) / 1 / 1)), "1970-01-01T00:00:00Z");
    auto parsed = parse_pod_binding(binding(R"(, "expires": ")" + utc_time_text(when) + "\""));
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(parsed->expires, when);
}

TEST(TokenHashesTest, ReadsOneHashALineSkippingCommentsAndBlankLines) {
    std::string upper = kAbcHash;
    for (char& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    const std::string text = "# the operator's tokens\n\n  " + kAcmeHash + "  \r\n" + upper +
                             "\n   # an indented comment\n\t\n" + kBetaHash;
    auto hashes = parse_token_hashes(text);
    ASSERT_THAT(hashes, IsOk());
    ASSERT_EQ(hashes->size(), 3U);
    EXPECT_EQ(hex((*hashes)[0]), kAcmeHash);
    EXPECT_EQ(hex((*hashes)[1]), kAbcHash);
    EXPECT_EQ(hex((*hashes)[2]), kBetaHash);
}

TEST(TokenHashesTest, NamesTheLineOfABadHashWithoutShowingIt) {
    const std::string text = "# tokens\n" + kAcmeHash + "\n\nmy-secret-token\n";
    auto hashes = parse_token_hashes(text);
    ASSERT_THAT(hashes, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(hashes.error().message, HasSubstr("line 4"));
    EXPECT_THAT(hashes.error().message, Not(HasSubstr("my-secret-token")));
    EXPECT_THAT(parse_token_hashes(kAcmeHash + " -\n"), HasErrc(Errc::kInvalidArgument))
        << "sha256sum's output is not a line of the file";
    EXPECT_THAT(parse_token_hashes("# nothing\n\n"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_token_hashes(""), HasErrc(Errc::kInvalidArgument));
}

TEST(TokenHashTest, IsTheLowerCaseHexSha256) {
    EXPECT_EQ(token_hash_hex("abc"), kAbcHash);
    EXPECT_EQ(token_hash_hex(""),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace stockade::runner
