// Access tokens as JWTs (RFC 7519, RFC 9068) in the compact JWS serialization (RFC 7515): what an
// OAuth 2.1 resource server checks of a bearer token before it lets a request in (serve --http
// --oauth, runner/mcp/oauth.h). Pure: a token, the authorization server's public keys (a JWKS,
// RFC 7517) and the time in; the token's claims, or why it is refused, out.
//
//   BASE64URL(header) . BASE64URL(claims) . BASE64URL(signature)
//   1 size: at most kMaxTokenBytes; three parts, each strict base64url (no padding, no other
//     alphabet, unused bits zero); header and claims JSON objects nested at most kMaxNesting
//     deep, no key given twice
//   2 header: alg RS256 or ES256 (none, HS256 and every other alg are refused), a kid naming a
//     key of the set whose type is that alg's, and no crit (no extension is understood)
//   3 signature over "header.claims" as sent: RSASSA-PKCS1-v1_5 with SHA-256, or ECDSA P-256
//     with SHA-256 (r||s in the JWS, DER for OpenSSL)
//   4 claims: iss is the issuer; aud (a string or an array) holds the audience; exp is in the
//     future and nbf, when present, in the past, iat not in the future (each give or take the
//     leeway); the tenant claim is a string; scope (space-separated) or scp (an array, or a
//     space-separated string) holds the required scope
// Keys, signatures and big numbers are OpenSSL's (EVP_PKEY_fromdata, EVP_DigestVerify,
// ECDSA_SIG): nothing here does arithmetic on them. A refusal's detail is fixed text that
// never quotes the token, so that it can go into a WWW-Authenticate header and a log as it is.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace stockade::mcp::jwt {

// Longer tokens are refused unread (a JWT access token is 1-3 KiB; the HTTP head is 16 KiB).
inline constexpr std::size_t kMaxTokenBytes = 8192;
// The deepest nesting of objects and arrays a token's header or claims may have.
inline constexpr std::size_t kMaxNesting = 16;

// Base64url (RFC 4648 §5) without padding, strictly: nullopt for '=', '+', '/', white space, a
// length that leaves 6 bits over, or unused trailing bits that are not zero (so that one value
// has one text).
std::optional<std::string> base64url_decode(std::string_view text);
std::string base64url_encode(std::string_view bytes);

enum class Algorithm { kRs256, kEs256 };

// The verification keys of a JWKS: RSA keys (2048 to 8192 bits) for RS256 and P-256 keys for
// ES256, by kid. Copies share the keys.
class KeySet {
public:
    // {"keys": [{"kty": "RSA", "kid": "k1", "n": "...", "e": "AQAB"},
    //           {"kty": "EC", "kid": "k2", "crv": "P-256", "x": "...", "y": "..."}]}
    // A key that is not for signing with RS256 or ES256 ("use": "enc", an "alg" or "key_ops"
    // that says otherwise, a kty or crv not read here, no kid) is skipped and noted in
    // skipped(). Errors (kInvalidArgument, naming the key): a key to use that is malformed (bad
    // base64url, a point not on the curve, an RSA modulus under 2048 bits), two keys with one
    // kid, private or secret key material ("d", "k", ...: the file must hold public keys only),
    // or no key left to use.
    static Result<KeySet> parse(std::string_view text);

    [[nodiscard]] std::size_t size() const noexcept { return keys_.size(); }
    [[nodiscard]] std::vector<std::string> key_ids() const;
    // What parse() skipped, one line each: `keys[2] (kid "e1"): "use" is "enc", not "sig"`.
    [[nodiscard]] const std::vector<std::string>& skipped() const noexcept { return skipped_; }

    struct Key;  // an OpenSSL public key, its kid and its algorithm (jwt.cc)
    // The key `kid`, or null.
    [[nodiscard]] const Key* find(std::string_view kid) const;

private:
    std::vector<std::shared_ptr<const Key>> keys_;
    std::vector<std::string> skipped_;
};

// Whether `signature` (decoded: the RSA signature, or r||s for ES256) signs `signing_input` with
// the key `kid` of `keys` under `alg`; false too when `keys` has no such key, or not one of that
// algorithm's type.
bool signature_valid(const KeySet& keys, std::string_view kid, Algorithm alg,
                     std::string_view signing_input, std::string_view signature);

// What a token must say to be let in.
struct Expectations {
    std::string issuer;          // iss, exactly
    std::string audience;        // one of aud, exactly (RFC 8707: the resource's identifier)
    std::string tenant_claim;    // the claim that names the tenant, e.g. "stockade_tenant"
    std::string required_scope;  // empty: none
    std::chrono::seconds leeway{60};
};

// A token let in.
struct AccessToken {
    std::string tenant;   // the tenant claim's value (the caller checks that it is a tenant)
    std::string subject;  // sub, or empty
    std::string jwt_id;   // jti, or empty
    std::vector<std::string> scopes;
    std::chrono::sys_seconds expires;
    std::string key_id;
};

enum class Refusal {
    kTooLarge,           // over kMaxTokenBytes
    kMalformed,          // not a JWS of JSON objects, a claim of the wrong type, crit
    kAlgorithm,          // alg none, HS*, or any alg but RS256 and ES256
    kUnknownKey,         // no kid, or a kid not in the key set
    kKeyMismatch,        // the kid's key is not of the alg's type
    kBadSignature,       // the signature does not verify
    kWrongIssuer,        // iss
    kWrongAudience,      // aud
    kExpired,            // exp (or none)
    kNotYetValid,        // nbf, or iat in the future
    kMissingTenant,      // no tenant claim, or not a string
    kUnknownTenant,      // the tenant claim names no tenant (decided by the caller)
    kInsufficientScope,  // the required scope is not granted (403; all else is 401)
};

// A token refused: why, in a code and in fixed text (RFC 6750's error_description). `subject`
// and `jwt_id` are set only once the signature verified, for the log.
struct Refused {
    Refusal reason = Refusal::kMalformed;
    std::string detail;
    std::string subject{};
    std::string jwt_id{};
};

// "too_large", "malformed", "algorithm", ... for logs and metrics.
const char* refusal_name(Refusal reason) noexcept;

using Verdict = std::variant<AccessToken, Refused>;

// Checks `token` as the steps above say, against `keys` and `expect`, at `now`.
Verdict verify(std::string_view token, const KeySet& keys, const Expectations& expect,
               std::chrono::system_clock::time_point now);

}  // namespace stockade::mcp::jwt
