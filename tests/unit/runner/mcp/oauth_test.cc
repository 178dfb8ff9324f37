#include "runner/mcp/oauth.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/jwt_signer.h"
#include "tests/testing/matchers.h"

namespace stockade::mcp {
namespace {

using nlohmann::json;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::TestKey;
using namespace std::chrono_literals;

constexpr const char* kFull = R"({
  "issuer": "https://auth.example.com",
  "resource": "https://mcp.example.com/mcp",
  "audience": "api://stockade",
  "jwks_file": "/etc/stockade/jwks.json",
  "authorization_servers": ["https://auth.example.com", "https://backup.example.com/tenant"],
  "scopes_supported": ["mcp:tools", "mcp:admin"],
  "required_scope": "mcp:tools",
  "tenant_claim": "https://example.com/tenant",
  "leeway_seconds": 30
})";

constexpr const char* kFullToml = R"(issuer = "https://auth.example.com"
resource = "https://mcp.example.com/mcp"
audience = "api://stockade"
jwks_file = "/etc/stockade/jwks.json"
authorization_servers = ["https://auth.example.com", "https://backup.example.com/tenant"]
scopes_supported = ["mcp:tools", "mcp:admin"]
required_scope = "mcp:tools"
tenant_claim = "https://example.com/tenant"
leeway_seconds = 30
)";

// A config of the three keys that have no default, and `more` (each starting with a comma).
std::string minimal(const std::string& more = "") {
    return R"({"issuer": "https://auth.example.com", "resource": "https://mcp.example.com/mcp",
               "jwks_file": "/etc/stockade/jwks.json")" +
           more + "}";
}

// The error of a config that must be refused, on one line.
std::string refusal(const std::string& text) {
    auto config = parse_oauth_config(text, false);
    EXPECT_THAT(config, HasErrc(Errc::kInvalidArgument)) << text;
    if (config) {
        return {};
    }
    EXPECT_EQ(config.error().message.find('\n'), std::string::npos);
    return config.error().message;
}

TEST(OAuthConfigTest, ReadsEveryKeyFromJsonOrToml) {
    auto config = parse_oauth_config(kFull, false);
    ASSERT_THAT(config, IsOk());
    const OAuthConfig expected{
        .issuer = "https://auth.example.com",
        .resource = "https://mcp.example.com/mcp",
        .audience = "api://stockade",
        .jwks_file = "/etc/stockade/jwks.json",
        .authorization_servers = {"https://auth.example.com", "https://backup.example.com/tenant"},
        .scopes_supported = {"mcp:tools", "mcp:admin"},
        .required_scope = "mcp:tools",
        .tenant_claim = "https://example.com/tenant",
        .leeway = 30s};
    EXPECT_EQ(*config, expected);
    auto toml = parse_oauth_config(kFullToml, true);
    ASSERT_THAT(toml, IsOk());
    EXPECT_EQ(*toml, expected);
}

TEST(OAuthConfigTest, FillsInTheDefaults) {
    auto config = parse_oauth_config(minimal(), false);
    ASSERT_THAT(config, IsOk());
    EXPECT_EQ(*config, (OAuthConfig{.issuer = "https://auth.example.com",
                                    .resource = "https://mcp.example.com/mcp",
                                    .audience = "https://mcp.example.com/mcp",
                                    .jwks_file = "/etc/stockade/jwks.json",
                                    .authorization_servers = {"https://auth.example.com"},
                                    .scopes_supported = {},
                                    .required_scope = "",
                                    .tenant_claim = "stockade_tenant",
                                    .leeway = 60s}));
    auto scoped = parse_oauth_config(minimal(R"(, "required_scope": "mcp:tools")"), false);
    ASSERT_THAT(scoped, IsOk());
    EXPECT_EQ(scoped->scopes_supported, std::vector<std::string>{"mcp:tools"});
    // The resource, when left out, is the audience that is a URL.
    auto from_audience = parse_oauth_config(
        R"({"issuer": "https://auth.example.com", "audience": "https://mcp.example.com/mcp",
            "jwks_file": "/etc/stockade/jwks.json"})",
        false);
    ASSERT_THAT(from_audience, IsOk());
    EXPECT_EQ(from_audience->resource, "https://mcp.example.com/mcp");
    auto loopback = parse_oauth_config(
        R"({"issuer": "http://127.0.0.1:9000", "resource": "http://localhost:8787/mcp",
            "jwks_file": "/j"})",
        false);
    EXPECT_THAT(loopback, IsOk()) << "http for loopback hosts";
}

TEST(OAuthConfigTest, RefusesWhatASecurityFileMustNotSay) {
    EXPECT_THAT(refusal(minimal(R"(, "audiences": ["x"])")),
                HasSubstr(R"(unknown key "audiences": the keys are issuer, resource)"));
    EXPECT_THAT(refusal(minimal(R"(, "issuer": "https://auth.example.com")")),
                HasSubstr("issuer: given twice"));
    EXPECT_THAT(refusal(R"({"resource": "https://mcp.example.com/mcp", "jwks_file": "/j"})"),
                HasSubstr("issuer: missing"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "jwks_file": "/j"})"),
                HasSubstr("resource: missing"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "audience": "api://x",
                            "jwks_file": "/j"})"),
                HasSubstr(R"(resource: missing, and audience "api://x" is not this server's URL)"));
    EXPECT_THAT(refusal(R"({"issuer": "http://auth.example.com", "resource":
                            "https://mcp.example.com/mcp", "jwks_file": "/j"})"),
                HasSubstr("issuer: \"http://auth.example.com\": give an https:// URL (http is for "
                          "localhost"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "resource":
                            "https://mcp.example.com/mcp#x", "jwks_file": "/j"})"),
                HasSubstr("no query (?) or fragment (#)"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "resource":
                            "https://user@mcp.example.com/mcp", "jwks_file": "/j"})"),
                HasSubstr("not a URL with a host"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "resource":
                            "https://mcp.example.com:http/mcp", "jwks_file": "/j"})"),
                HasSubstr("not a URL with a host"));
    EXPECT_THAT(refusal(R"({"issuer": "https://a.example.com", "resource":
                            "https://mcp.example.com/mcp", "jwks_file": "jwks.json"})"),
                HasSubstr("jwks_file: give the absolute path"));
    EXPECT_THAT(refusal(minimal(R"(, "authorization_servers": [])")),
                HasSubstr("authorization_servers: must be a list of at least one string"));
    EXPECT_THAT(refusal(minimal(R"(, "authorization_servers": ["ftp://a"])")),
                HasSubstr("authorization_servers: \"ftp://a\": give an https:// URL"));
    EXPECT_THAT(refusal(minimal(R"(, "required_scope": "mcp tools")")),
                HasSubstr("required_scope: \"mcp tools\" is not one scope"));
    EXPECT_THAT(refusal(minimal(R"(, "scopes_supported": ["a"], "required_scope": "b")")),
                HasSubstr("required_scope: \"b\" is not in scopes_supported"));
    EXPECT_THAT(refusal(minimal(R"(, "scopes_supported": ["a\"b"])")),
                HasSubstr("scopes_supported: \"a\\\"b\" is not a scope"));
    EXPECT_THAT(refusal(minimal(R"(, "tenant_claim": "")")),
                HasSubstr("tenant_claim: must be a non-empty string"));
    EXPECT_THAT(refusal(minimal(R"(, "tenant_claim": "my tenant")")),
                HasSubstr("tenant_claim: \"my tenant\" is not a claim name"));
    for (const char* leeway : {"301", "-1", "1.5", "\"60\""}) {
        EXPECT_THAT(refusal(minimal(std::string(R"(, "leeway_seconds": )") + leeway)),
                    HasSubstr("leeway_seconds: must be a whole number of seconds from 0 to 300"))
            << leeway;
    }
    EXPECT_THAT(refusal("[]"), HasSubstr("the file must hold a table of keys"));
    EXPECT_THAT(parse_oauth_config("issuer = [", true), HasErrc(Errc::kInvalidArgument));
}

TEST(OAuthConfigTest, TheMetadataUrlIsTheResourcesOriginThenTheWellKnownPathThenItsPath) {
    EXPECT_EQ(metadata_url_of("https://mcp.example.com/mcp"),
              "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    EXPECT_EQ(metadata_url_of("https://mcp.example.com"),
              "https://mcp.example.com/.well-known/oauth-protected-resource");
    EXPECT_EQ(metadata_url_of("https://mcp.example.com/"),
              "https://mcp.example.com/.well-known/oauth-protected-resource");
    EXPECT_EQ(metadata_url_of("https://mcp.example.com:8443/acme/mcp/"),
              "https://mcp.example.com:8443/.well-known/oauth-protected-resource/acme/mcp");
    EXPECT_EQ(metadata_url_of("http://[::1]:8787/mcp"),
              "http://[::1]:8787/.well-known/oauth-protected-resource/mcp");
    EXPECT_EQ(metadata_url_of("not a url"), "");
}

TEST(OAuthConfigTest, LoadNamesTheFile) {
    auto missing = load_oauth_config("/nonexistent/oauth.json");
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message, HasSubstr(R"(--oauth "/nonexistent/oauth.json")"));
}

// A resource server over a JWKS file in a temporary directory, with keys made by openssl:
// rsa-1 and ec-1 in the file at first; rsa-2 added later.
class ResourceServerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(std::filesystem::temp_directory_path() / "stockade-oauth-XXXXXX");
        if (::mkdtemp(dir_->data()) == nullptr) {
            return;
        }
        rsa_ = TestKey::generate(TestKey::Kind::kRsa2048, *dir_, "rsa-1", why_);
        ec_ = TestKey::generate(TestKey::Kind::kP256, *dir_, "ec-1", why_);
        rsa2_ = TestKey::generate(TestKey::Kind::kRsa2048, *dir_, "rsa-2", why_);
    }

    static void TearDownTestSuite() {
        std::error_code ignored;
        std::filesystem::remove_all(*dir_, ignored);
        delete dir_;
    }

    void SetUp() override {
        if (!rsa_ || !ec_ || !rsa2_) {
            GTEST_SKIP() << *why_;
        }
        jwks_ = *dir_ + "/jwks.json";
        write_jwks(json{{"keys", {rsa_->jwk(), ec_->jwk()}}}.dump());
        auto config = parse_oauth_config(
            R"({"issuer": "https://auth.example.com", "resource": "https://mcp.example.com/mcp",
                "jwks_file": ")" +
                jwks_ + R"(", "required_scope": "mcp:tools"})",
            false);
        ASSERT_THAT(config, IsOk());
        auto server = ResourceServer::open(*config, 0ms);
        ASSERT_THAT(server, IsOk());
        server_ = std::move(server).value();
    }

    // Replaces the JWKS as an operator's refresh job would: a new file renamed over the old.
    void write_jwks(const std::string& text) const {
        const std::string next = jwks_ + ".next";
        std::ofstream(next) << text;
        ASSERT_EQ(std::rename(next.c_str(), jwks_.c_str()), 0);
    }

    static json claims() {
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        return {{"iss", "https://auth.example.com"},
                {"aud", "https://mcp.example.com/mcp"},
                {"exp", now + 300},
                {"sub", "alice"},
                {"stockade_tenant", "acme"},
                {"scope", "mcp:tools"}};
    }

    bool accepted(const std::string& token) {
        return std::holds_alternative<jwt::AccessToken>(server_->check(token));
    }

    static inline std::string* dir_ = nullptr;
    static inline std::string* why_ = new std::string("no temporary directory");
    static inline std::optional<TestKey> rsa_, ec_, rsa2_;
    std::string jwks_;
    std::unique_ptr<ResourceServer> server_;
};

TEST_F(ResourceServerTest, TheMetadataNamesTheResourceItsServersAndScopes) {
    EXPECT_EQ(server_->metadata(),
              R"({"resource":"https://mcp.example.com/mcp",)"
              R"("authorization_servers":["https://auth.example.com"],)"
              R"("scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]})");
    EXPECT_EQ(server_->metadata_url(),
              "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    EXPECT_TRUE(server_->serves_metadata_at("/.well-known/oauth-protected-resource"));
    EXPECT_TRUE(server_->serves_metadata_at("/.well-known/oauth-protected-resource/mcp"));
    EXPECT_FALSE(server_->serves_metadata_at("/.well-known/oauth-protected-resource/"));
    EXPECT_FALSE(server_->serves_metadata_at("/.well-known/oauth-authorization-server"));
}

TEST_F(ResourceServerTest, ChallengesPointAtTheMetadataAndSayWhatWasWrong) {
    EXPECT_EQ(server_->challenge(nullptr),
              R"(Bearer resource_metadata="https://mcp.example.com/.well-known/)"
              R"(oauth-protected-resource/mcp", scope="mcp:tools")");
    const jwt::Refused expired{.reason = jwt::Refusal::kExpired, .detail = "the token has expired"};
    EXPECT_EQ(server_->challenge(&expired),
              R"(Bearer resource_metadata="https://mcp.example.com/.well-known/)"
              R"(oauth-protected-resource/mcp", error="invalid_token", )"
              R"(error_description="the token has expired", scope="mcp:tools")");
    const jwt::Refused scope{.reason = jwt::Refusal::kInsufficientScope,
                             .detail = "a \"quoted\"\\ detail"};
    EXPECT_EQ(server_->challenge(&scope),
              R"(Bearer resource_metadata="https://mcp.example.com/.well-known/)"
              R"(oauth-protected-resource/mcp", error="insufficient_scope", )"
              R"(error_description="a  quoted   detail", scope="mcp:tools")");
    EXPECT_THAT(server_->refusal_text(nullptr), HasSubstr("needs an OAuth access token"));
    EXPECT_THAT(server_->refusal_text(&expired),
                HasSubstr("The access token was refused: the token has expired. Get a new one"));
    EXPECT_THAT(server_->refusal_text(&scope), HasSubstr("does not grant the scope mcp:tools"));
}

TEST_F(ResourceServerTest, TheJwksIsReadAgainWhenItChangesAndKeptWhenTheNewOneIsBad) {
    EXPECT_TRUE(accepted(rsa_->token(claims())));
    EXPECT_FALSE(accepted(rsa2_->token(claims()))) << "not in the set yet";
    write_jwks(json{{"keys", {rsa2_->jwk(), ec_->jwk()}}}.dump());
    EXPECT_TRUE(accepted(rsa2_->token(claims())));
    EXPECT_FALSE(accepted(rsa_->token(claims()))) << "rotated out";
    EXPECT_EQ(server_->key_ids(), (std::vector<std::string>{"rsa-2", "ec-1"}));
    write_jwks("{\"keys\": [");  // half written: the keys before stay
    EXPECT_TRUE(accepted(rsa2_->token(claims())));
    write_jwks(json{{"keys", {{{"kty", "EC"}, {"kid", "x"}, {"d", "AAAA"}}}}}.dump());
    EXPECT_TRUE(accepted(rsa2_->token(claims())));
    ASSERT_EQ(::unlink(jwks_.c_str()), 0);
    EXPECT_TRUE(accepted(ec_->token(claims()))) << "a missing file keeps the keys too";
    write_jwks(json{{"keys", {rsa_->jwk()}}}.dump());
    EXPECT_TRUE(accepted(rsa_->token(claims())));
    EXPECT_FALSE(accepted(ec_->token(claims())));
}

TEST_F(ResourceServerTest, AChangeIsNoticedWithinTheRecheckInterval) {
    auto config = server_->config();
    auto slow = ResourceServer::open(config, std::chrono::milliseconds(300));
    ASSERT_THAT(slow, IsOk());
    EXPECT_TRUE(std::holds_alternative<jwt::AccessToken>((*slow)->check(rsa_->token(claims()))));
    write_jwks(json{{"keys", {rsa2_->jwk()}}}.dump());
    std::this_thread::sleep_for(350ms);
    EXPECT_TRUE(std::holds_alternative<jwt::AccessToken>((*slow)->check(rsa2_->token(claims()))));
}

TEST_F(ResourceServerTest, OpeningWithoutAUsableJwksIsAnError) {
    OAuthConfig config = server_->config();
    config.jwks_file = *dir_ + "/none.json";
    auto missing = ResourceServer::open(config);
    ASSERT_THAT(missing, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(missing.error().message, HasSubstr("jwks_file \"" + *dir_ + "/none.json\": "));
    EXPECT_THAT(missing.error().message, HasSubstr("put the authorization server's JWK set"));
    const std::string empty = *dir_ + "/empty.json";
    std::ofstream(empty) << R"({"keys": []})";
    config.jwks_file = empty;
    auto no_keys = ResourceServer::open(config);
    ASSERT_THAT(no_keys, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(no_keys.error().message, HasSubstr("no key to check tokens with"));
}

}  // namespace
}  // namespace stockade::mcp
