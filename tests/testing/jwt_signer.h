// Keys and access tokens for the OAuth tests (runner/mcp/jwt.h, oauth.h, the HTTP server's). A
// key pair is made by the openssl command, as an operator's authorization server would have
// one made:
//   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out KEY.pem
//   openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out KEY.pem
// its public half is given as a JWK, and tokens are signed with OpenSSL's EVP interface and
// encoded with OpenSSL's base64 (not with the code under test), the ES256 signature turned from
// DER into r||s by OpenSSL's ECDSA_SIG.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace stockade::testing {

// Base64url without padding, from OpenSSL's base64.
std::string b64url(std::string_view bytes);

class TestKey {
public:
    enum class Kind { kRsa2048, kRsa1024, kP256, kP384 };

    // A new key of `kind` made by `openssl genpkey` in `dir`, or nullopt (with *why) when the
    // command is missing or fails.
    static std::optional<TestKey> generate(Kind kind, const std::string& dir, std::string kid,
                                           std::string* why);

    [[nodiscard]] const std::string& kid() const { return kid_; }
    // "RS256" for RSA, "ES256" for P-256 (and P-384, whose tokens are never accepted).
    [[nodiscard]] const char* alg() const;
    // The public JWK: kty, kid, n and e, or crv, x and y.
    [[nodiscard]] nlohmann::json jwk() const;
    // The signature of `signing_input` as a JWS carries it (r||s for EC).
    [[nodiscard]] std::string sign_bytes(std::string_view signing_input) const;
    // A compact JWS of `claims` under `header` ({"alg": alg(), "kid": kid()} when null), each
    // part dumped as given.
    [[nodiscard]] std::string token(const nlohmann::json& claims,
                                    const nlohmann::json& header = nullptr) const;

private:
    TestKey(std::shared_ptr<evp_pkey_st> key, Kind kind, std::string kid)
        : key_(std::move(key)), kind_(kind), kid_(std::move(kid)) {}

    std::shared_ptr<evp_pkey_st> key_;
    Kind kind_;
    std::string kid_;
};

}  // namespace stockade::testing
