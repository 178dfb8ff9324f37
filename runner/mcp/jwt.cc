#include "runner/mcp/jwt.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "common/quote.h"
#include "common/strict_json.h"

namespace stockade::mcp::jwt {

namespace {

using json = nlohmann::json;

// ---- OpenSSL handles ---------------------------------------------------------------------------

struct PkeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct PkeyCtxFree {
    void operator()(EVP_PKEY_CTX* ctx) const noexcept { EVP_PKEY_CTX_free(ctx); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
struct BnFree {
    void operator()(BIGNUM* bn) const noexcept { BN_free(bn); }
};
struct ParamBldFree {
    void operator()(OSSL_PARAM_BLD* bld) const noexcept { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
    void operator()(OSSL_PARAM* params) const noexcept { OSSL_PARAM_free(params); }
};
struct EcdsaSigFree {
    void operator()(ECDSA_SIG* sig) const noexcept { ECDSA_SIG_free(sig); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
using Bignum = std::unique_ptr<BIGNUM, BnFree>;

const unsigned char* bytes_of(std::string_view text) {
    return reinterpret_cast<const unsigned char*>(text.data());  // NOLINT: bytes, as OpenSSL takes
}

// A failed OpenSSL call leaves errors on the thread's queue; a refused token is no error of
// ours, so they are dropped rather than left for the next caller to trip over.
template <class T>
T dropping_errors(T value) {
    ERR_clear_error();
    return value;
}

Bignum bignum(std::string_view big_endian) {
    return Bignum(BN_bin2bn(bytes_of(big_endian), static_cast<int>(big_endian.size()), nullptr));
}

constexpr int kMinRsaBits = 2048;
constexpr int kMaxRsaBits = 8192;
constexpr std::size_t kP256CoordinateBytes = 32;
constexpr std::size_t kMaxKeys = 100;

// A public key from its parameters, as EVP_PKEY_fromdata builds it.
Pkey key_from_params(const char* type, const OSSL_PARAM* params) {
    PkeyCtx ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
    EVP_PKEY* key = nullptr;
    if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
        EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, const_cast<OSSL_PARAM*>(params)) !=
            1) {
        return dropping_errors(Pkey());
    }
    return Pkey(key);
}

// RSA from the JWK's n and e (big-endian, decoded).
Result<Pkey> rsa_key(std::string_view n, std::string_view e) {
    const std::size_t first = e.find_first_not_of('\0');
    const auto last = static_cast<unsigned char>(e.back());
    if (first == std::string_view::npos || e.size() - first > 8 || (last & 1U) == 0 ||
        (e.size() - first == 1 && last < 3)) {
        return Error{Errc::kInvalidArgument, "e: not an odd public exponent of at most 64 bits"};
    }
    Bignum modulus = bignum(n);
    Bignum exponent = bignum(e);
    std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> build(OSSL_PARAM_BLD_new());
    if (!modulus || !exponent || !build ||
        OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, modulus.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, exponent.get()) != 1) {
        return dropping_errors(Error{Errc::kInternal, "cannot build RSA key parameters"});
    }
    std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(build.get()));
    Pkey key = params ? key_from_params("RSA", params.get()) : Pkey();
    if (!key) {
        return Error{Errc::kInvalidArgument, "n, e: not an RSA public key"};
    }
    const int bits = EVP_PKEY_get_bits(key.get());
    if (bits < kMinRsaBits || bits > kMaxRsaBits) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("n: a {}-bit modulus; RS256 keys must have {} to {} bits", bits,
                                 kMinRsaBits, kMaxRsaBits)};
    }
    return key;
}

// P-256 from the JWK's x and y (32 bytes each), checked to be a point of the curve's group.
Result<Pkey> p256_key(std::string_view x, std::string_view y) {
    if (x.size() != kP256CoordinateBytes || y.size() != kP256CoordinateBytes) {
        return Error{Errc::kInvalidArgument, "x, y: P-256 coordinates are 32 bytes each"};
    }
    std::string point = "\x04";  // SEC 1 uncompressed: 04 || x || y
    point.append(x);
    point.append(y);
    std::string group = "P-256";
    const std::array<OSSL_PARAM, 3> params{
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group.data(), 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()),
        OSSL_PARAM_construct_end()};
    Pkey key = key_from_params("EC", params.data());
    PkeyCtx check(key ? EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr) : nullptr);
    if (!key || !check || EVP_PKEY_public_check(check.get()) != 1) {
        return dropping_errors(Error{Errc::kInvalidArgument, "x, y: not a point of P-256's group"});
    }
    return key;
}

// ES256's r||s (32 bytes each) as the DER ECDSA-Sig-Value that EVP verifies.
std::optional<std::string> ecdsa_der(std::string_view raw) {
    if (raw.size() != 2 * kP256CoordinateBytes) {
        return std::nullopt;
    }
    Bignum r = bignum(raw.substr(0, kP256CoordinateBytes));
    Bignum s = bignum(raw.substr(kP256CoordinateBytes));
    std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
    if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) {
        return dropping_errors(std::optional<std::string>());
    }
    (void)r.release();  // owned by sig now
    (void)s.release();
    const int size = i2d_ECDSA_SIG(sig.get(), nullptr);
    if (size <= 0) {
        return dropping_errors(std::optional<std::string>());
    }
    std::string der(static_cast<std::size_t>(size), '\0');
    auto* out = reinterpret_cast<unsigned char*>(der.data());  // NOLINT: i2d writes bytes
    if (i2d_ECDSA_SIG(sig.get(), &out) != size) {
        return dropping_errors(std::optional<std::string>());
    }
    return der;
}

const char* algorithm_name(Algorithm alg) {
    switch (alg) {
        case Algorithm::kRs256:
            return "RS256";
        case Algorithm::kEs256:
            return "ES256";
    }
    return "?";
}

// ---- JWKS --------------------------------------------------------------------------------------

// Members that only a private or secret key has (RFC 7518 §6.2.2, §6.3.2, §6.4).
constexpr std::string_view kPrivateMembers[] = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"};

std::string key_place(std::size_t index, const json& key) {
    const auto kid = key.find("kid");
    if (kid != key.end() && kid->is_string()) {
        return fmt::format("keys[{}] (kid {})", index, quote(kid->get_ref<const std::string&>()));
    }
    return fmt::format("keys[{}]", index);
}

// A member that must be a base64url string, decoded.
Result<std::string> member_bytes(const json& key, std::string_view name) {
    const auto it = key.find(name);
    if (it == key.end() || !it->is_string()) {
        return Error{Errc::kInvalidArgument, fmt::format("{}: missing, or not a string", name)};
    }
    auto bytes = base64url_decode(it->get_ref<const std::string&>());
    if (!bytes || bytes->empty()) {
        return Error{Errc::kInvalidArgument, fmt::format("{}: not base64url", name)};
    }
    return std::move(*bytes);
}

// The public key of a JWK of `kind`'s type.
Result<Pkey> public_key(const json& jwk, Algorithm kind) {
    if (kind == Algorithm::kRs256) {
        ASSIGN_OR_RETURN(const std::string n, member_bytes(jwk, "n"));
        ASSIGN_OR_RETURN(const std::string e, member_bytes(jwk, "e"));
        return rsa_key(n, e);
    }
    ASSIGN_OR_RETURN(const std::string x, member_bytes(jwk, "x"));
    ASSIGN_OR_RETURN(const std::string y, member_bytes(jwk, "y"));
    return p256_key(x, y);
}

std::optional<std::string> string_member(const json& object, std::string_view name) {
    const auto it = object.find(name);
    if (it == object.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

// ---- claims ------------------------------------------------------------------------------------

// 9999-12-31T23:59:59Z: later NumericDates are refused as malformed.
constexpr std::int64_t kMaxDate = 253402300799;

// A NumericDate (RFC 7519 §2): seconds since the epoch, maybe fractional; nullopt for anything
// else, or out of range.
std::optional<std::int64_t> numeric_date(const json& value) {
    if (value.is_number_unsigned()) {
        const auto seconds = value.get<std::uint64_t>();
        return seconds <= static_cast<std::uint64_t>(kMaxDate)
                   ? std::optional<std::int64_t>(static_cast<std::int64_t>(seconds))
                   : std::nullopt;
    }
    if (value.is_number_integer()) {
        const auto seconds = value.get<std::int64_t>();
        return seconds >= 0 && seconds <= kMaxDate ? std::optional<std::int64_t>(seconds)
                                                   : std::nullopt;
    }
    if (value.is_number_float()) {
        const double seconds = value.get<double>();
        if (!std::isfinite(seconds) || seconds < 0 || seconds > static_cast<double>(kMaxDate)) {
            return std::nullopt;
        }
        return static_cast<std::int64_t>(std::floor(seconds));
    }
    return std::nullopt;
}

// The scopes of a claim: a space-separated string, or an array of strings.
bool add_scopes(const json& value, std::vector<std::string>& out) {
    if (value.is_string()) {
        std::string_view text = value.get_ref<const std::string&>();
        while (!text.empty()) {
            const std::size_t end = std::min(text.find(' '), text.size());
            if (end > 0) {
                out.emplace_back(text.substr(0, end));
            }
            text.remove_prefix(std::min(end + 1, text.size()));
        }
        return true;
    }
    if (value.is_array()) {
        for (const json& item : value) {
            if (!item.is_string()) {
                return false;
            }
            out.push_back(item.get<std::string>());
        }
        return true;
    }
    return false;
}

Refused refuse(Refusal reason, std::string detail) {
    return Refused{.reason = reason, .detail = std::move(detail)};
}

// A header or the claims: strict base64url of a JSON object.
std::optional<json> json_object(std::string_view part) {
    auto text = base64url_decode(part);
    if (!text) {
        return std::nullopt;
    }
    auto parsed = parse_strict_json(*text, kMaxNesting);
    if (!parsed || !parsed->is_object()) {
        return std::nullopt;
    }
    return std::move(*parsed);
}

}  // namespace

// ---- base64url ---------------------------------------------------------------------------------

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) {
        return std::nullopt;
    }
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') {
            return c - 'A';
        }
        if (c >= 'a' && c <= 'z') {
            return c - 'a' + 26;
        }
        if (c >= '0' && c <= '9') {
            return c - '0' + 52;
        }
        if (c == '-') {
            return 62;
        }
        return c == '_' ? 63 : -1;
    };
    std::string out;
    out.reserve(text.size() / 4 * 3 + 2);
    std::uint32_t pending = 0;  // the bits read and not yet written, low `bits` of them
    unsigned bits = 0;
    for (const char c : text) {
        const int v = value(c);
        if (v < 0) {
            return std::nullopt;
        }
        pending = ((pending << 6U) | static_cast<std::uint32_t>(v)) & 0xFFFFU;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((pending >> bits) & 0xFFU));
        }
    }
    if ((pending & ((1U << bits) - 1U)) != 0) {
        return std::nullopt;  // a second text for the same bytes
    }
    return out;
}

std::string base64url_encode(std::string_view bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t n =
            (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16U) |
            (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8U) |
            static_cast<unsigned char>(bytes[i + 2]);
        out += kAlphabet[(n >> 18U) & 63U];
        out += kAlphabet[(n >> 12U) & 63U];
        out += kAlphabet[(n >> 6U) & 63U];
        out += kAlphabet[n & 63U];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16U;
        if (rest == 2) {
            n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8U;
        }
        out += kAlphabet[(n >> 18U) & 63U];
        out += kAlphabet[(n >> 12U) & 63U];
        if (rest == 2) {
            out += kAlphabet[(n >> 6U) & 63U];
        }
    }
    return out;
}

// ---- keys --------------------------------------------------------------------------------------

struct KeySet::Key {
    Key() = default;
    ~Key() { EVP_PKEY_free(pkey); }
    Key(const Key&) = delete;
    Key& operator=(const Key&) = delete;
    Key(Key&&) = delete;
    Key& operator=(Key&&) = delete;

    std::string kid;
    Algorithm alg = Algorithm::kRs256;
    EVP_PKEY* pkey = nullptr;  // owned; only read once built (EVP verifies from many threads)
};

Result<KeySet> KeySet::parse(std::string_view text) {
    auto invalid = [](std::string message) {
        return Error{Errc::kInvalidArgument, std::move(message)};
    };
    ASSIGN_OR_RETURN(const json doc, parse_strict_json(text, kMaxNesting));
    const auto list = doc.is_object() ? doc.find("keys") : doc.end();
    if (!doc.is_object() || list == doc.end() || !list->is_array()) {
        return invalid(
            "not a JWK set: give {\"keys\": [...]}, the authorization server's jwks_uri document");
    }
    if (list->size() > kMaxKeys) {
        return invalid(fmt::format("keys: {} keys, over the limit of {}", list->size(), kMaxKeys));
    }
    KeySet set;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const json& jwk = (*list)[i];
        if (!jwk.is_object()) {
            return invalid(fmt::format("keys[{}]: not a JWK object", i));
        }
        const std::string place = key_place(i, jwk);
        for (const std::string_view name : kPrivateMembers) {
            if (jwk.contains(name)) {
                return invalid(fmt::format(
                    "{}: holds private or secret key material (\"{}\"); the file must hold the "
                    "authorization server's public keys only: remove the key, and have it "
                    "replaced, as it has been exposed",
                    place, name));
            }
        }
        const auto kty = string_member(jwk, "kty");
        const auto kid = string_member(jwk, "kid");
        const auto use = string_member(jwk, "use");
        const auto alg = string_member(jwk, "alg");
        auto skip = [&](std::string_view why) {
            set.skipped_.push_back(fmt::format("{}: {}", place, why));
        };
        if (!kty) {
            return invalid(place + ": kty: missing, or not a string");
        }
        if (*kty != "RSA" && *kty != "EC") {
            skip(fmt::format("kty {} is not RSA or EC", quote(*kty)));
            continue;
        }
        const Algorithm kind = *kty == "RSA" ? Algorithm::kRs256 : Algorithm::kEs256;
        if (use && *use != "sig") {
            skip(fmt::format(R"("use" is {}, not "sig")", quote(*use)));
            continue;
        }
        if (alg && *alg != algorithm_name(kind)) {
            skip(fmt::format("alg {} is not {}", quote(*alg), algorithm_name(kind)));
            continue;
        }
        if (const auto ops = jwk.find("key_ops"); ops != jwk.end()) {
            if (!ops->is_array() ||
                std::find(ops->begin(), ops->end(), json("verify")) == ops->end()) {
                skip("key_ops does not hold \"verify\"");
                continue;
            }
        }
        if (kind == Algorithm::kEs256 && string_member(jwk, "crv") != "P-256") {
            skip("crv is not P-256");
            continue;
        }
        if (!kid || kid->empty()) {
            skip("no kid: tokens name their key by kid");
            continue;
        }
        auto key = public_key(jwk, kind);
        if (!key) {
            return std::move(key).error().wrap(place);
        }
        if (set.find(*kid) != nullptr) {
            return invalid(
                fmt::format("{}: another key has the same kid; give each its own", place));
        }
        auto entry = std::make_shared<Key>();
        entry->kid = *kid;
        entry->alg = kind;
        entry->pkey = key->release();
        set.keys_.push_back(std::move(entry));
    }
    if (set.keys_.empty()) {
        return invalid(
            "no key to check tokens with: give at least one RSA (RS256) or P-256 (ES256) public "
            "key with a kid");
    }
    return set;
}

std::vector<std::string> KeySet::key_ids() const {
    std::vector<std::string> ids;
    ids.reserve(keys_.size());
    for (const auto& key : keys_) {
        ids.push_back(key->kid);
    }
    return ids;
}

const KeySet::Key* KeySet::find(std::string_view kid) const {
    for (const auto& key : keys_) {
        if (key->kid == kid) {
            return key.get();
        }
    }
    return nullptr;
}

bool signature_valid(const KeySet& keys, std::string_view kid, Algorithm alg,
                     std::string_view signing_input, std::string_view signature) {
    const KeySet::Key* key = keys.find(kid);
    if (key == nullptr || key->alg != alg) {
        return false;
    }
    std::string der;
    if (alg == Algorithm::kEs256) {
        auto converted = ecdsa_der(signature);
        if (!converted) {
            return false;
        }
        der = std::move(*converted);
        signature = der;
    }
    std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
    EVP_PKEY_CTX* pctx = nullptr;  // owned by ctx
    if (!ctx || EVP_DigestVerifyInit_ex(ctx.get(), &pctx, "SHA256", nullptr, nullptr, key->pkey,
                                        nullptr) != 1) {
        return dropping_errors(false);
    }
    if (alg == Algorithm::kRs256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
        return dropping_errors(false);
    }
    const bool valid = EVP_DigestVerify(ctx.get(), bytes_of(signature), signature.size(),
                                        bytes_of(signing_input), signing_input.size()) == 1;
    return dropping_errors(valid);
}

// ---- tokens ------------------------------------------------------------------------------------

const char* refusal_name(Refusal reason) noexcept {
    switch (reason) {
        case Refusal::kTooLarge:
            return "too_large";
        case Refusal::kMalformed:
            return "malformed";
        case Refusal::kAlgorithm:
            return "algorithm";
        case Refusal::kUnknownKey:
            return "unknown_key";
        case Refusal::kKeyMismatch:
            return "key_mismatch";
        case Refusal::kBadSignature:
            return "signature";
        case Refusal::kWrongIssuer:
            return "issuer";
        case Refusal::kWrongAudience:
            return "audience";
        case Refusal::kExpired:
            return "expired";
        case Refusal::kNotYetValid:
            return "not_yet_valid";
        case Refusal::kMissingTenant:
            return "no_tenant";
        case Refusal::kUnknownTenant:
            return "unknown_tenant";
        case Refusal::kInsufficientScope:
            return "scope";
    }
    return "?";
}

Verdict verify(std::string_view token, const KeySet& keys, const Expectations& expect,
               std::chrono::system_clock::time_point now) {
    // 1. Size and shape.
    if (token.size() > kMaxTokenBytes) {
        return refuse(Refusal::kTooLarge,
                      fmt::format("the token is longer than {} bytes", kMaxTokenBytes));
    }
    const std::size_t first_dot = token.find('.');
    const std::size_t second_dot =
        first_dot == std::string_view::npos ? first_dot : token.find('.', first_dot + 1);
    if (second_dot == std::string_view::npos ||
        token.find('.', second_dot + 1) != std::string_view::npos) {
        return refuse(Refusal::kMalformed,
                      "the token is not a signed JWT (header.claims.signature)");
    }
    const std::string_view header_part = token.substr(0, first_dot);
    const std::string_view claims_part = token.substr(first_dot + 1, second_dot - first_dot - 1);
    const std::string_view signature_part = token.substr(second_dot + 1);

    // 2. The header: the algorithm and the key.
    const auto header = json_object(header_part);
    if (!header) {
        return refuse(Refusal::kMalformed, "the token's header is not a base64url JSON object");
    }
    const auto alg = string_member(*header, "alg");
    if (!alg) {
        return refuse(Refusal::kMalformed, "the token's header has no alg");
    }
    if (*alg != "RS256" && *alg != "ES256") {
        return refuse(Refusal::kAlgorithm, *alg == "none" || *alg == "None" || *alg == "NONE"
                                               ? "unsigned tokens (alg none) are never accepted"
                                               : "the token is not signed with RS256 or ES256");
    }
    const Algorithm algorithm = *alg == "RS256" ? Algorithm::kRs256 : Algorithm::kEs256;
    if (header->contains("crit")) {
        return refuse(Refusal::kMalformed,
                      "the token needs JWS extensions this server does not implement (crit)");
    }
    const auto kid = string_member(*header, "kid");
    if (!kid || kid->empty()) {
        return refuse(Refusal::kUnknownKey, "the token's header names no key (kid)");
    }
    const KeySet::Key* key = keys.find(*kid);
    if (key == nullptr) {
        return refuse(Refusal::kUnknownKey,
                      "the token is signed with a key the authorization server does not list "
                      "(kid)");
    }
    if (key->alg != algorithm) {
        return refuse(Refusal::kKeyMismatch,
                      "the key the token names is not a key of the token's algorithm");
    }

    // 3. The signature, over the first two parts as they were sent.
    const auto signature = base64url_decode(signature_part);
    if (!signature) {
        return refuse(Refusal::kMalformed, "the token's signature is not base64url");
    }
    if (!signature_valid(keys, *kid, algorithm, token.substr(0, second_dot), *signature)) {
        return refuse(Refusal::kBadSignature, "the token's signature does not verify");
    }

    // 4. The claims.
    const auto claims = json_object(claims_part);
    if (!claims) {
        return refuse(Refusal::kMalformed, "the token's claims are not a base64url JSON object");
    }
    AccessToken access;
    access.key_id = *kid;
    for (const auto& [name, field] :
         {std::pair{"sub", &access.subject}, std::pair{"jti", &access.jwt_id}}) {
        if (const auto it = claims->find(name); it != claims->end()) {
            if (!it->is_string()) {
                return refuse(Refusal::kMalformed,
                              fmt::format("the token's {} is not a string", name));
            }
            *field = it->get<std::string>();
        }
    }
    auto refused = [&](Refusal reason, std::string detail) {
        Refused out = refuse(reason, std::move(detail));
        out.subject = access.subject;
        out.jwt_id = access.jwt_id;
        return out;
    };
    if (string_member(*claims, "iss") != expect.issuer) {
        return refused(Refusal::kWrongIssuer,
                       "the token was not issued by this server's authorization server (iss)");
    }
    const auto aud = claims->find("aud");
    bool audience = false;
    if (aud != claims->end() && aud->is_string()) {
        audience = aud->get_ref<const std::string&>() == expect.audience;
    } else if (aud != claims->end() && aud->is_array()) {
        for (const json& item : *aud) {
            audience = audience ||
                       (item.is_string() && item.get_ref<const std::string&>() == expect.audience);
        }
    }
    if (!audience) {
        return refused(Refusal::kWrongAudience,
                       "the token was not issued for this server (aud does not name it)");
    }
    const auto second = std::chrono::floor<std::chrono::seconds>(now).time_since_epoch().count();
    const std::int64_t leeway = expect.leeway.count();
    const auto exp = claims->find("exp");
    const auto expires = exp == claims->end() ? std::nullopt : numeric_date(*exp);
    if (!expires) {
        return refused(Refusal::kExpired, "the token has no expiry (exp), so it is never taken");
    }
    if (second >= *expires + leeway) {
        return refused(Refusal::kExpired, "the token has expired");
    }
    access.expires = std::chrono::sys_seconds(std::chrono::seconds(*expires));
    for (const char* name : {"nbf", "iat"}) {
        const auto it = claims->find(name);
        if (it == claims->end()) {
            continue;
        }
        const auto date = numeric_date(*it);
        if (!date) {
            return refused(Refusal::kMalformed,
                           fmt::format("the token's {} is not a NumericDate", name));
        }
        if (*date > second + leeway) {
            return refused(Refusal::kNotYetValid,
                           std::string_view(name) == "nbf"
                               ? "the token is not valid yet (nbf)"
                               : "the token says it was issued in the future (iat)");
        }
    }
    const auto tenant = claims->find(expect.tenant_claim);
    if (tenant == claims->end() || !tenant->is_string() ||
        tenant->get_ref<const std::string&>().empty()) {
        return refused(Refusal::kMissingTenant,
                       fmt::format("the token names no tenant (claim {})", expect.tenant_claim));
    }
    access.tenant = tenant->get<std::string>();
    for (const char* name : {"scope", "scp"}) {
        if (const auto it = claims->find(name);
            it != claims->end() && !add_scopes(*it, access.scopes)) {
            return refused(
                Refusal::kMalformed,
                fmt::format("the token's {} is not a string or a list of strings", name));
        }
    }
    if (!expect.required_scope.empty() && std::find(access.scopes.begin(), access.scopes.end(),
                                                    expect.required_scope) == access.scopes.end()) {
        return refused(Refusal::kInsufficientScope,
                       fmt::format("the token does not grant the scope {}", expect.required_scope));
    }
    return access;
}

}  // namespace stockade::mcp::jwt
