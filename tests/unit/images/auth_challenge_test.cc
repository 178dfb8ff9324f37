#include "images/auth_challenge.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::HasSubstr;

using Params = std::vector<std::pair<std::string, std::string>>;

TEST(AuthChallengeTest, ReadsADistributionBearerChallenge) {
    // As Docker Hub sends it.
    auto challenges = parse_auth_challenges(
        R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",)"
        R"(scope="repository:library/debian:pull")");
    ASSERT_THAT(challenges, IsOk());
    ASSERT_EQ(challenges->size(), 1U);
    EXPECT_EQ((*challenges)[0],
              (AuthChallenge{.scheme = "bearer",
                             .params = Params{{"realm", "https://auth.docker.io/token"},
                                              {"service", "registry.docker.io"},
                                              {"scope", "repository:library/debian:pull"}}}));
    EXPECT_EQ((*challenges)[0].param("Realm"), "https://auth.docker.io/token");
    EXPECT_EQ((*challenges)[0].param("error"), std::nullopt);
}

TEST(AuthChallengeTest, ReadsSeveralChallengesAndTheirForms) {
    auto challenges = parse_auth_challenges(
        "Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Basic realm=\"simple\","
        " Token abc123+/==, Negotiate ,, Other");
    ASSERT_THAT(challenges, IsOk());
    ASSERT_EQ(challenges->size(), 5U);
    EXPECT_EQ(
        (*challenges)[0],
        (AuthChallenge{
            .scheme = "newauth",
            .params = Params{{"realm", "apps"}, {"type", "1"}, {"title", "Login to \"apps\""}}}));
    EXPECT_EQ((*challenges)[1],
              (AuthChallenge{.scheme = "basic", .params = Params{{"realm", "simple"}}}));
    EXPECT_EQ((*challenges)[2], (AuthChallenge{.scheme = "token", .token68 = "abc123+/=="}));
    EXPECT_EQ((*challenges)[3], (AuthChallenge{.scheme = "negotiate"}));
    EXPECT_EQ((*challenges)[4], (AuthChallenge{.scheme = "other"}));
}

TEST(AuthChallengeTest, AllowsOptionalWhiteSpaceAndCase) {
    auto challenges =
        parse_auth_challenges("  BEARER   Realm = \"https://a/t\" ,\tScope=x  , basic");
    ASSERT_THAT(challenges, IsOk());
    ASSERT_EQ(challenges->size(), 2U);
    EXPECT_EQ((*challenges)[0].params, (Params{{"realm", "https://a/t"}, {"scope", "x"}}));
    EXPECT_EQ((*challenges)[1].scheme, "basic");
    // A quoted-pair keeps the character after the backslash, whatever it is.
    EXPECT_EQ(parse_auth_challenges(R"(Basic realm="a\\b\c")")->front().param("realm"), "a\\bc");
    EXPECT_EQ(parse_auth_challenges("Basic realm=\"caf\xc3\xa9\"")->front().param("realm"),
              "caf\xc3\xa9");
}

std::string challenge_error(std::string_view header) {
    auto challenges = parse_auth_challenges(header);
    EXPECT_THAT(challenges, HasErrc(Errc::kInvalidArgument)) << header;
    return challenges ? "" : challenges.error().message;
}

TEST(AuthChallengeTest, RefusesMalformedValues) {
    EXPECT_EQ(challenge_error(""), "WWW-Authenticate \"\": no challenge at the end");
    EXPECT_THAT(challenge_error(" , "), HasSubstr("no challenge"));
    EXPECT_EQ(challenge_error("Bearer realm=\"https://a"),
              "WWW-Authenticate \"Bearer realm=\\\"https://a\": a quoted-string without its "
              "closing '\"' at the end");
    EXPECT_THAT(challenge_error("Bearer realm=\"a\\"), HasSubstr("without its closing"));
    EXPECT_THAT(challenge_error("Bearer realm=\"a\nb\""),
                HasSubstr("a control character in a quoted-string"));
    EXPECT_THAT(challenge_error("Bearer realm=\"a\\\x01\""),
                HasSubstr("a control character after '\\'"));
    EXPECT_THAT(challenge_error("Bearer realm=\"a\" scope=\"b\""),
                HasSubstr("\"s\" where ',' or the end was expected at character 18"));
    EXPECT_THAT(challenge_error("Bearer realm=\"a\", x="),
                HasSubstr("parameter \"x\" has no value at the end"));
    EXPECT_THAT(challenge_error("Bearer realm=,x=1"), HasSubstr("\"=\" after the scheme \"x\""));
    EXPECT_THAT(challenge_error("Bearer realm=\"a\", Realm=\"b\""),
                HasSubstr("parameter \"realm\" given twice"));
    EXPECT_THAT(challenge_error("Bearer a b"), HasSubstr("parameter \"a\" without '='"));
    EXPECT_THAT(challenge_error("=x"), HasSubstr("expected an auth scheme at character 1"));
    EXPECT_THAT(challenge_error("Bearer\"x\""), HasSubstr("\"\\\"\" after the scheme \"Bearer\""));
    EXPECT_THAT(challenge_error("Bearer @x=1"), HasSubstr("expected a parameter name"));
    std::string many;
    for (int i = 0; i < 17; ++i) {
        many += "A, ";
    }
    EXPECT_THAT(challenge_error(many), HasSubstr("more than 16 challenges"));
    std::string params = "Bearer ";
    for (int i = 0; i < 33; ++i) {
        params += fmt::format("p{}=1,", i);
    }
    EXPECT_THAT(challenge_error(params), HasSubstr("more than 32 parameters"));
    EXPECT_THAT(challenge_error("Basic realm=\"" + std::string(17000, 'x') + "\""),
                HasSubstr("past the limit of 16384"));
}

TEST(AuthChallengeTest, ResolvesTheGrammarsAmbiguitiesAsRfc7235Does) {
    // A token after a parameter's ',' that no '=' follows starts the next challenge.
    auto two = parse_auth_challenges("Bearer realm=a, scope");
    ASSERT_THAT(two, IsOk());
    EXPECT_EQ(*two,
              (std::vector<AuthChallenge>{{.scheme = "bearer", .params = Params{{"realm", "a"}}},
                                          {.scheme = "scope"}}));
    // "realm=" with nothing after it is a token68, not a parameter without a value; a registry
    // client then finds no realm.
    auto token68 = parse_auth_challenges("Bearer realm=");
    ASSERT_THAT(token68, IsOk());
    EXPECT_EQ(token68->front(), (AuthChallenge{.scheme = "bearer", .token68 = "realm="}));
    EXPECT_THAT(registry_challenge(*token68), HasErrc(Errc::kInvalidArgument));
}

TEST(AuthChallengeTest, RegistryChallengePrefersBearer) {
    auto bearer = parse_registry_challenge(
        R"(Basic realm="r", Bearer realm="https://auth.example/token",service="reg",scope="s")");
    ASSERT_THAT(bearer, IsOk());
    EXPECT_EQ(*bearer, (RegistryChallenge{.scheme = AuthScheme::kBearer,
                                          .realm = "https://auth.example/token",
                                          .service = "reg",
                                          .scope = "s"}));
    auto basic = parse_registry_challenge(R"(Negotiate, Basic realm="Registry Realm")");
    ASSERT_THAT(basic, IsOk());
    EXPECT_EQ(*basic, (RegistryChallenge{.scheme = AuthScheme::kBasic, .realm = "Registry Realm"}));
    EXPECT_EQ(parse_registry_challenge("Bearer realm=\"http://127.0.0.1:5000/token\"")->realm,
              "http://127.0.0.1:5000/token");
}

TEST(AuthChallengeTest, RegistryChallengeRefusesWhatItCannotAnswer) {
    auto no_realm = parse_registry_challenge(R"(Bearer service="reg")");
    EXPECT_THAT(no_realm, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(no_realm.error().message, "WWW-Authenticate: a Bearer challenge without a realm");
    auto bad_realm = parse_registry_challenge(R"(Bearer realm="file:///etc/passwd")");
    EXPECT_THAT(bad_realm, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(bad_realm.error().message,
              "WWW-Authenticate: Bearer realm \"file:///etc/passwd\" is not an http:// or "
              "https:// URL");
    auto other = parse_registry_challenge("Negotiate, NTLM abc==");
    EXPECT_THAT(other, HasErrc(Errc::kUnavailable));
    EXPECT_EQ(other.error().message,
              "WWW-Authenticate offers \"negotiate\", \"ntlm\": only Bearer and Basic are "
              "supported");
}

}  // namespace
}  // namespace stockade::images
