#include "runner/mcp/jwt.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/jwt_signer.h"
#include "tests/testing/matchers.h"

namespace stockade::mcp::jwt {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::TestKey;
using namespace std::chrono_literals;

const auto kNow = std::chrono::sys_seconds(std::chrono::seconds(1'900'000'000));
const std::int64_t kNowSeconds = 1'900'000'000;

const Expectations kExpect{.issuer = "https://auth.example.com",
                           .audience = "https://mcp.example.com/mcp",
                           .tenant_claim = "stockade_tenant",
                           .required_scope = "mcp:tools",
                           .leeway = 60s};

// Claims that pass kExpect at kNow.
json valid_claims() {
    return {{"iss", "https://auth.example.com"},
            {"aud", "https://mcp.example.com/mcp"},
            {"sub", "alice"},
            {"jti", "j-1"},
            {"exp", kNowSeconds + 600},
            {"nbf", kNowSeconds - 10},
            {"iat", kNowSeconds - 10},
            {"stockade_tenant", "acme"},
            {"scope", "mcp:tools other"}};
}

// Keys made once by `openssl genpkey` (tests/testing/jwt_signer.h): rsa-1 and ec-1 are in the
// set; rsa-2 (RSA) and ec-2 (P-256) are not.
class JwtTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(std::filesystem::temp_directory_path() / "stockade-jwt-XXXXXX");
        if (::mkdtemp(dir_->data()) == nullptr) {
            *why_ = "mkdtemp failed";
            return;
        }
        rsa_ = TestKey::generate(TestKey::Kind::kRsa2048, *dir_, "rsa-1", why_);
        ec_ = TestKey::generate(TestKey::Kind::kP256, *dir_, "ec-1", why_);
        other_rsa_ = TestKey::generate(TestKey::Kind::kRsa2048, *dir_, "rsa-2", why_);
        other_ec_ = TestKey::generate(TestKey::Kind::kP256, *dir_, "ec-2", why_);
        small_rsa_ = TestKey::generate(TestKey::Kind::kRsa1024, *dir_, "rsa-small", why_);
        p384_ = TestKey::generate(TestKey::Kind::kP384, *dir_, "ec-384", why_);
    }

    static void TearDownTestSuite() {
        std::error_code ignored;
        std::filesystem::remove_all(*dir_, ignored);
        delete dir_;
    }

    void SetUp() override {
        if (!rsa_ || !ec_ || !other_rsa_ || !other_ec_ || !small_rsa_ || !p384_) {
            GTEST_SKIP() << *why_;
        }
        auto keys = KeySet::parse(json{{"keys", {rsa_->jwk(), ec_->jwk()}}}.dump());
        ASSERT_THAT(keys, IsOk());
        keys_ = std::move(keys).value();
    }

    [[nodiscard]] Verdict check(const std::string& token) const {
        return verify(token, keys_, kExpect, kNow);
    }

    // The reason `token` is refused (the test fails when it is let in); its detail must be fit
    // for a header's quoted-string.
    [[nodiscard]] std::optional<Refusal> refusal(const std::string& token) const {
        const Verdict verdict = check(token);
        const auto* refused = std::get_if<Refused>(&verdict);
        EXPECT_NE(refused, nullptr) << "let in: " << token;
        if (refused == nullptr) {
            return std::nullopt;
        }
        EXPECT_FALSE(refused->detail.empty());
        EXPECT_EQ(refused->detail.find_first_of("\"\\\n"), std::string::npos) << refused->detail;
        return refused->reason;
    }

    static inline std::string* dir_ = nullptr;
    static inline std::string* why_ = new std::string("no key");
    static inline std::optional<TestKey> rsa_, ec_, other_rsa_, other_ec_, small_rsa_, p384_;
    KeySet keys_;
};

// ---- base64url ---------------------------------------------------------------------------------

TEST(Base64UrlTest, DecodesTheUnpaddedUrlAlphabet) {
    EXPECT_EQ(base64url_decode(""), "");
    EXPECT_EQ(base64url_decode("Zg"), "f");
    EXPECT_EQ(base64url_decode("Zm8"), "fo");
    EXPECT_EQ(base64url_decode("Zm9v"), "foo");
    EXPECT_EQ(base64url_decode("-_8"), "\xfb\xff");
    EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
    for (const std::string text : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
        EXPECT_EQ(base64url_decode(base64url_encode(text)), text);
        EXPECT_EQ(base64url_encode(text), testing::b64url(text)) << "as OpenSSL's, unpadded";
    }
}

TEST(Base64UrlTest, RefusesPaddingOtherAlphabetsAndSecondSpellings) {
    for (const std::string& text :
         std::vector<std::string>{"Zg==", "Zm8=", "Zm9v+", "Zm9v/", "Zm 9v", "Zm9v\n", "Z", "Zm9vY",
                                  "Zh", "Zm9", "Zm9v.", std::string("Zg\0", 3)}) {
        EXPECT_EQ(base64url_decode(text), std::nullopt) << text;
    }
}

// ---- key sets ----------------------------------------------------------------------------------

TEST_F(JwtTest, AKeySetReadsRsaAndP256KeysByKid) {
    EXPECT_EQ(keys_.size(), 2U);
    EXPECT_THAT(keys_.key_ids(), ElementsAre("rsa-1", "ec-1"));
    EXPECT_TRUE(keys_.skipped().empty());
}

TEST_F(JwtTest, AKeySetSkipsKeysItCannotUseAndSaysWhy) {
    json enc = rsa_->jwk();
    enc["kid"] = "enc";
    enc["use"] = "enc";
    json ps = other_rsa_->jwk();
    ps["alg"] = "PS256";
    json no_kid = other_ec_->jwk();
    no_kid.erase("kid");
    json ops = other_ec_->jwk();
    ops["kid"] = "ops";
    ops["key_ops"] = {"encrypt"};
    const json okp = {{"kty", "OKP"}, {"kid", "ed"}, {"crv", "Ed25519"}, {"x", "AAAA"}};
    json typed = ec_->jwk();
    typed["alg"] = "ES256";
    typed["use"] = "sig";
    typed["key_ops"] = {"verify"};
    auto keys = KeySet::parse(
        json{{"keys", {enc, ps, no_kid, ops, okp, p384_->jwk(), typed}}, {"extra", 1}}.dump());
    ASSERT_THAT(keys, IsOk());
    EXPECT_THAT(keys->key_ids(), ElementsAre("ec-1"));
    EXPECT_THAT(keys->skipped(),
                ElementsAre(R"(keys[0] (kid "enc"): "use" is "enc", not "sig")",
                            R"(keys[1] (kid "rsa-2"): alg "PS256" is not RS256)",
                            "keys[2]: no kid: tokens name their key by kid",
                            R"(keys[3] (kid "ops"): key_ops does not hold "verify")",
                            R"(keys[4] (kid "ed"): kty "OKP" is not RSA or EC)",
                            R"(keys[5] (kid "ec-384"): crv is not P-256)"));
}

TEST_F(JwtTest, AKeySetRefusesPrivateMaterialRepeatedKidsWeakKeysAndBadPoints) {
    auto refused = [](const json& keys) {
        // {key} is the key itself to nlohmann, not an array of it.
        auto parsed =
            KeySet::parse(json{{"keys", keys.is_array() ? keys : json::array({keys})}}.dump());
        EXPECT_THAT(parsed, HasErrc(Errc::kInvalidArgument)) << keys;
        return parsed ? std::string() : parsed.error().message;
    };
    json with_d = ec_->jwk();
    with_d["d"] = "AAAA";
    EXPECT_THAT(refused({with_d}), HasSubstr(R"(keys[0] (kid "ec-1"): holds private)"));
    EXPECT_THAT(refused({{{"kty", "oct"}, {"kid", "h"}, {"k", "c2VjcmV0"}}}),
                HasSubstr(R"(secret key material ("k"))"));
    json twin = other_rsa_->jwk();
    twin["kid"] = "rsa-1";
    EXPECT_THAT(refused({rsa_->jwk(), twin}), HasSubstr("another key has the same kid"));
    EXPECT_THAT(refused({small_rsa_->jwk()}), HasSubstr("a 1024-bit modulus"));
    json off_curve = ec_->jwk();
    std::string y = *base64url_decode(off_curve["y"].get<std::string>());
    y[31] = static_cast<char>(y[31] ^ 1);
    off_curve["y"] = base64url_encode(y);
    EXPECT_THAT(refused({off_curve}), HasSubstr("not a point of P-256's group"));
    json short_x = ec_->jwk();
    short_x["x"] = base64url_encode(std::string(31, 'x'));
    EXPECT_THAT(refused({short_x}), HasSubstr("32 bytes each"));
    json padded = rsa_->jwk();
    padded["n"] = padded["n"].get<std::string>() + "=";
    EXPECT_THAT(refused({padded}), HasSubstr("n: not base64url"));
    json even = rsa_->jwk();
    even["e"] = "AQAA";
    EXPECT_THAT(refused({even}), HasSubstr("e: not an odd public exponent"));
    EXPECT_THAT(refused(json::array()), HasSubstr("no key to check tokens with"));
    EXPECT_THAT(KeySet::parse(R"([])"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(KeySet::parse(R"({"keys": [], "keys": []})"), HasErrc(Errc::kInvalidArgument));
}

// RFC 7515 appendices A.2 (RS256) and A.3 (ES256): the published keys, signing input and
// signatures, checked by the same code as tokens are (the kids are A.6's).
TEST(SignatureTest, TheExamplesOfRfc7515Verify) {
    const std::string input =
        "eyJhbGciOiJSUzI1NiJ9."
        "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0"
        "cnVlfQ";
    const std::string es_input =
        "eyJhbGciOiJFUzI1NiJ9."
        "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0"
        "cnVlfQ";
    const json jwks = {
        {"keys",
         {{{"kty", "RSA"},
           {"kid", "2010-12-29"},
           {"n",
            "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEz"
            "P1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf6"
            "3kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5Zw"
            "Kh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRW"
            "yuXpoQ"},
           {"e", "AQAB"}},
          {{"kty", "EC"},
           {"kid", "e9bc097a-ce51-4036-9562-d2ade882db0d"},
           {"crv", "P-256"},
           {"x", "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"},
           {"y", "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}}}}};
    auto keys = KeySet::parse(jwks.dump());
    ASSERT_THAT(keys, IsOk());
    const std::string rs = *base64url_decode(
        "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2F"
        "p5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQ"
        "BMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6Ie"
        "YI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw");
    const std::string es = *base64url_decode(
        "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q");
    const std::string ec_kid = "e9bc097a-ce51-4036-9562-d2ade882db0d";
    EXPECT_TRUE(signature_valid(*keys, "2010-12-29", Algorithm::kRs256, input, rs));
    EXPECT_TRUE(signature_valid(*keys, ec_kid, Algorithm::kEs256, es_input, es));
    std::string flipped = es;
    flipped[5] = static_cast<char>(flipped[5] ^ 1);
    EXPECT_FALSE(signature_valid(*keys, ec_kid, Algorithm::kEs256, es_input, flipped));
    EXPECT_FALSE(signature_valid(*keys, "2010-12-29", Algorithm::kRs256, input + "x", rs));
    EXPECT_FALSE(signature_valid(*keys, ec_kid, Algorithm::kRs256, es_input, es)) << "wrong alg";
    EXPECT_FALSE(signature_valid(*keys, "2010-12-29", Algorithm::kEs256, input, rs));
    EXPECT_FALSE(signature_valid(*keys, ec_kid, Algorithm::kEs256, es_input, es.substr(1)));
    EXPECT_FALSE(signature_valid(*keys, "nobody", Algorithm::kRs256, input, rs));
    // The compact form names no kid, so verify() refuses it before any signature.
    const Verdict verdict = verify(input + "." + base64url_encode(rs), *keys, kExpect, kNow);
    ASSERT_TRUE(std::holds_alternative<Refused>(verdict));
    EXPECT_EQ(std::get<Refused>(verdict).reason, Refusal::kUnknownKey);
}

// ---- tokens ------------------------------------------------------------------------------------

TEST_F(JwtTest, AValidRs256TokenIsLetInWithItsClaims) {
    const Verdict verdict = check(rsa_->token(valid_claims()));
    ASSERT_TRUE(std::holds_alternative<AccessToken>(verdict)) << std::get<Refused>(verdict).detail;
    const AccessToken& access = std::get<AccessToken>(verdict);
    EXPECT_EQ(access.tenant, "acme");
    EXPECT_EQ(access.subject, "alice");
    EXPECT_EQ(access.jwt_id, "j-1");
    EXPECT_THAT(access.scopes, ElementsAre("mcp:tools", "other"));
    EXPECT_EQ(access.expires, kNow + 600s);
    EXPECT_EQ(access.key_id, "rsa-1");
}

TEST_F(JwtTest, AValidEs256TokenIsLetIn) {
    json claims = valid_claims();
    claims["aud"] = {"https://other.example.com", "https://mcp.example.com/mcp"};
    claims.erase("scope");
    claims["scp"] = {"mcp:tools"};
    claims["exp"] = static_cast<double>(kNowSeconds) + 30.5;  // a NumericDate may be fractional
    const Verdict verdict = check(ec_->token(claims));
    ASSERT_TRUE(std::holds_alternative<AccessToken>(verdict)) << std::get<Refused>(verdict).detail;
    EXPECT_EQ(std::get<AccessToken>(verdict).key_id, "ec-1");
    EXPECT_EQ(std::get<AccessToken>(verdict).expires, kNow + 30s);
}

TEST_F(JwtTest, ASignatureThatDoesNotVerifyIsRefused) {
    // Signed by another key, under rsa-1's kid.
    const std::string forged =
        other_rsa_->token(valid_claims(), {{"alg", "RS256"}, {"kid", "rsa-1"}});
    EXPECT_EQ(refusal(forged), Refusal::kBadSignature);
    EXPECT_EQ(refusal(other_ec_->token(valid_claims(), {{"alg", "ES256"}, {"kid", "ec-1"}})),
              Refusal::kBadSignature);
    // Claims changed after signing.
    const std::string token = rsa_->token(valid_claims());
    json more = valid_claims();
    more["stockade_tenant"] = "other";
    const std::size_t dot = token.find('.');
    const std::string swapped =
        token.substr(0, dot + 1) + testing::b64url(more.dump()) + token.substr(token.rfind('.'));
    EXPECT_EQ(refusal(swapped), Refusal::kBadSignature);
    // r||s cut short, or empty.
    const std::string es = ec_->token(valid_claims());
    const std::string es_input = es.substr(0, es.rfind('.'));
    const std::string rs = *base64url_decode(es.substr(es.rfind('.') + 1));
    ASSERT_EQ(rs.size(), 64U);
    EXPECT_EQ(refusal(es_input + "." + testing::b64url(rs.substr(0, 63))), Refusal::kBadSignature);
    EXPECT_EQ(refusal(es_input + "." + testing::b64url(rs + "x")), Refusal::kBadSignature);
    EXPECT_EQ(refusal(es_input + "."), Refusal::kBadSignature);
    // A refusal before the signature verified says nothing of the claims.
    const Verdict verdict = check(forged);
    EXPECT_EQ(std::get<Refused>(verdict).subject, "");
    EXPECT_EQ(std::get<Refused>(verdict).jwt_id, "");
}

TEST_F(JwtTest, OnlyRs256AndEs256AreAcceptedAndEachOnlyWithItsKeyType) {
    EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"alg", "ES256"}, {"kid", "rsa-1"}})),
              Refusal::kKeyMismatch);
    EXPECT_EQ(refusal(ec_->token(valid_claims(), {{"alg", "RS256"}, {"kid", "ec-1"}})),
              Refusal::kKeyMismatch);
    for (const char* alg :
         {"RS384", "RS512", "PS256", "ES384", "EdDSA", "HS256", "HS512", "rs256"}) {
        EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"alg", alg}, {"kid", "rsa-1"}})),
                  Refusal::kAlgorithm)
            << alg;
    }
    // HS256 keyed with the RSA key's public modulus (the old key-confusion attack): refused on
    // its alg, whatever the MAC.
    const std::string input = testing::b64url(R"({"alg":"HS256","kid":"rsa-1"})") + "." +
                              testing::b64url(valid_claims().dump());
    EXPECT_EQ(refusal(input + "." + testing::b64url(std::string(32, 'm'))), Refusal::kAlgorithm);
    EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"kid", "rsa-1"}})), Refusal::kMalformed)
        << "no alg";
    EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"alg", 256}, {"kid", "rsa-1"}})),
              Refusal::kMalformed);
}

TEST_F(JwtTest, AnUnsignedTokenIsNeverAccepted) {
    for (const char* alg : {"none", "None", "NONE"}) {
        const std::string unsigned_token = testing::b64url(json{{"alg", alg}}.dump()) + "." +
                                           testing::b64url(valid_claims().dump()) + ".";
        EXPECT_EQ(refusal(unsigned_token), Refusal::kAlgorithm) << alg;
        const Verdict verdict = check(unsigned_token);
        EXPECT_THAT(std::get<Refused>(verdict).detail, HasSubstr("alg none"));
    }
}

TEST_F(JwtTest, AKidNotInTheSetOrNoKidIsRefused) {
    EXPECT_EQ(refusal(other_rsa_->token(valid_claims())), Refusal::kUnknownKey);
    EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"alg", "RS256"}})), Refusal::kUnknownKey);
    EXPECT_EQ(refusal(rsa_->token(valid_claims(), {{"alg", "RS256"}, {"kid", ""}})),
              Refusal::kUnknownKey);
}

TEST_F(JwtTest, AnExpiredTokenIsRefusedPastTheLeeway) {
    json claims = valid_claims();
    claims["exp"] = kNowSeconds - 61;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kExpired);
    claims["exp"] = kNowSeconds - 60;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kExpired) << "exp + leeway is past";
    claims["exp"] = kNowSeconds - 59;
    EXPECT_TRUE(std::holds_alternative<AccessToken>(check(rsa_->token(claims))));
    claims.erase("exp");
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kExpired) << "a token must expire";
    claims["exp"] = std::to_string(kNowSeconds + 600);
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kExpired) << "not a NumericDate";
    claims["exp"] = 1e300;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kExpired) << "out of range";
    // Its sub and jti are known by then, for the log.
    claims["exp"] = kNowSeconds - 61;
    const Verdict verdict = check(rsa_->token(claims));
    EXPECT_EQ(std::get<Refused>(verdict).subject, "alice");
    EXPECT_EQ(std::get<Refused>(verdict).jwt_id, "j-1");
}

TEST_F(JwtTest, ATokenNotYetValidIsRefusedPastTheLeeway) {
    json claims = valid_claims();
    claims["nbf"] = kNowSeconds + 61;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kNotYetValid);
    claims["nbf"] = kNowSeconds + 59;
    EXPECT_TRUE(std::holds_alternative<AccessToken>(check(rsa_->token(claims))));
    claims["iat"] = kNowSeconds + 3600;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kNotYetValid) << "issued in the future";
    claims["iat"] = "yesterday";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kMalformed);
}

TEST_F(JwtTest, AnotherIssuerIsRefused) {
    json claims = valid_claims();
    claims["iss"] = "https://auth.example.com/";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongIssuer) << "exactly, not nearly";
    claims.erase("iss");
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongIssuer);
}

TEST_F(JwtTest, ATokenForAnotherAudienceIsRefused) {
    json claims = valid_claims();
    claims["aud"] = "https://other.example.com/mcp";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongAudience);
    claims["aud"] = {"https://other.example.com/mcp", "https://mcp.example.com"};
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongAudience);
    claims["aud"] = json::array();
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongAudience);
    claims["aud"] = 7;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongAudience);
    claims.erase("aud");
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kWrongAudience);
}

TEST_F(JwtTest, ATokenWithoutTheRequiredScopeIsRefusedAsInsufficient) {
    json claims = valid_claims();
    claims["scope"] = "mcp:tool mcp:tools:read";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kInsufficientScope);
    claims.erase("scope");
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kInsufficientScope);
    claims["scp"] = "profile mcp:tools";  // Entra ID's scp is a string
    EXPECT_TRUE(std::holds_alternative<AccessToken>(check(rsa_->token(claims))));
    claims["scp"] = {"mcp:tools", 3};
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kMalformed);
    claims.erase("scp");
    Expectations no_scope = kExpect;
    no_scope.required_scope.clear();
    EXPECT_TRUE(
        std::holds_alternative<AccessToken>(verify(rsa_->token(claims), keys_, no_scope, kNow)));
}

TEST_F(JwtTest, ATokenThatNamesNoTenantIsRefused) {
    json claims = valid_claims();
    claims.erase("stockade_tenant");
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kMissingTenant);
    claims["stockade_tenant"] = 7;
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kMissingTenant);
    claims["stockade_tenant"] = "";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kMissingTenant);
    claims["stockade_tenant"] = "acme";
    claims["scope"] = "other";
    EXPECT_EQ(refusal(rsa_->token(claims)), Refusal::kInsufficientScope)
        << "scope is the last check";
}

TEST_F(JwtTest, MalformedTokensAreRefused) {
    const std::string token = rsa_->token(valid_claims());
    const std::string header = token.substr(0, token.find('.'));
    const std::string rest = token.substr(token.find('.'));
    for (const std::string& bad :
         {std::string(), std::string("abc"), std::string("a.b"), token + ".x", "." + rest,
          "eyJhbGciOiJSUzI1NiJ9=" + rest, header + "x" + rest, "W10" + rest /* [] */,
          testing::b64url(R"({"alg":"RS256","alg":"RS256","kid":"rsa-1"})") + rest,
          testing::b64url(R"({"alg":"RS256","kid":"rsa-1")") + rest,
          token.substr(0, token.rfind('.')) + ".a+b/"}) {
        EXPECT_EQ(refusal(bad), Refusal::kMalformed) << bad;
    }
    // Signed, but the claims are no JSON object, or nest too deep.
    const auto signed_claims = [&](const std::string& claims) {
        const std::string input = header + "." + testing::b64url(claims);
        return input + "." + testing::b64url(rsa_->sign_bytes(input));
    };
    EXPECT_EQ(refusal(signed_claims("not json")), Refusal::kMalformed);
    EXPECT_EQ(refusal(signed_claims("[1]")), Refusal::kMalformed);
    json deep = valid_claims();
    json* at = &deep["nested"];
    for (int i = 0; i < 20; ++i) {
        at = &(*at)["x"];
    }
    *at = 1;
    EXPECT_EQ(refusal(signed_claims(deep.dump())), Refusal::kMalformed);
    json dup = valid_claims();
    std::string text = dup.dump();
    text.insert(1, R"("stockade_tenant":"other",)");
    EXPECT_EQ(refusal(signed_claims(text)), Refusal::kMalformed) << "a claim given twice";
    json wrong_sub = valid_claims();
    wrong_sub["sub"] = 5;
    EXPECT_EQ(refusal(rsa_->token(wrong_sub)), Refusal::kMalformed);
    // An extension the token requires and this server does not know.
    EXPECT_EQ(refusal(rsa_->token(
                  valid_claims(),
                  {{"alg", "RS256"}, {"kid", "rsa-1"}, {"crit", {"b64"}}, {"b64", false}})),
              Refusal::kMalformed);
}

TEST_F(JwtTest, AnOversizeTokenIsRefusedUnread) {
    json claims = valid_claims();
    claims["padding"] = std::string(5000, 'p');
    const std::string large = rsa_->token(claims);
    ASSERT_LT(large.size(), kMaxTokenBytes);
    EXPECT_TRUE(std::holds_alternative<AccessToken>(check(large)));
    claims["padding"] = std::string(6500, 'p');
    const std::string over = rsa_->token(claims);
    ASSERT_GT(over.size(), kMaxTokenBytes);
    EXPECT_EQ(refusal(over), Refusal::kTooLarge);
    EXPECT_EQ(refusal(std::string(kMaxTokenBytes + 1, '.')), Refusal::kTooLarge);
}

TEST(RefusalTest, EveryReasonHasAName) {
    for (const Refusal reason :
         {Refusal::kTooLarge, Refusal::kMalformed, Refusal::kAlgorithm, Refusal::kUnknownKey,
          Refusal::kKeyMismatch, Refusal::kBadSignature, Refusal::kWrongIssuer,
          Refusal::kWrongAudience, Refusal::kExpired, Refusal::kNotYetValid,
          Refusal::kMissingTenant, Refusal::kUnknownTenant, Refusal::kInsufficientScope}) {
        EXPECT_STRNE(refusal_name(reason), "?");
    }
}

}  // namespace
}  // namespace stockade::mcp::jwt
