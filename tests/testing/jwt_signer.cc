#include "tests/testing/jwt_signer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "common/crypto.h"

namespace stockade::testing {

namespace {

std::string big_endian(const EVP_PKEY* key, const char* name, int width) {
    BIGNUM* bn = nullptr;
    if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) {
        return {};
    }
    const int size = width > 0 ? width : BN_num_bytes(bn);
    std::string out(static_cast<std::size_t>(size), '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), size);  // NOLINT: bytes
    BN_free(bn);
    return out;
}

}  // namespace

std::string b64url(std::string_view bytes) {
    std::string text = base64_encode(bytes);
    std::replace(text.begin(), text.end(), '+', '-');
    std::replace(text.begin(), text.end(), '/', '_');
    text.erase(std::remove(text.begin(), text.end(), '='), text.end());
    return text;
}

std::optional<TestKey> TestKey::generate(Kind kind, const std::string& dir, std::string kid,
                                         std::string* why) {
    const std::string path = dir + "/" + kid + ".pem";
    const char* options = "";
    switch (kind) {
        case Kind::kRsa2048:
            options = "-algorithm RSA -pkeyopt rsa_keygen_bits:2048";
            break;
        case Kind::kRsa1024:
            options = "-algorithm RSA -pkeyopt rsa_keygen_bits:1024";
            break;
        case Kind::kP256:
            options = "-algorithm EC -pkeyopt ec_paramgen_curve:P-256";
            break;
        case Kind::kP384:
            options = "-algorithm EC -pkeyopt ec_paramgen_curve:P-384";
            break;
    }
    const std::string command =
        "openssl genpkey " + std::string(options) + " -out '" + path + "' 2>/dev/null";
    // NOLINTNEXTLINE(cert-env33-c, concurrency-mt-unsafe): a test's setup, on its one thread
    if (std::system(command.c_str()) != 0) {
        *why = "`" + command + "` failed: is the openssl command installed?";
        return std::nullopt;
    }
    std::FILE* file = std::fopen(path.c_str(), "r");
    EVP_PKEY* key =
        file == nullptr ? nullptr : PEM_read_PrivateKey(file, nullptr, nullptr, nullptr);
    if (file != nullptr) {
        (void)std::fclose(file);
    }
    if (key == nullptr) {
        *why = "cannot read the key openssl made at " + path;
        return std::nullopt;
    }
    return TestKey(std::shared_ptr<evp_pkey_st>(key, EVP_PKEY_free), kind, std::move(kid));
}

const char* TestKey::alg() const {
    return kind_ == Kind::kRsa2048 || kind_ == Kind::kRsa1024 ? "RS256" : "ES256";
}

nlohmann::json TestKey::jwk() const {
    if (kind_ == Kind::kRsa2048 || kind_ == Kind::kRsa1024) {
        return {{"kty", "RSA"},
                {"kid", kid_},
                {"n", b64url(big_endian(key_.get(), OSSL_PKEY_PARAM_RSA_N, 0))},
                {"e", b64url(big_endian(key_.get(), OSSL_PKEY_PARAM_RSA_E, 0))}};
    }
    const int width = kind_ == Kind::kP256 ? 32 : 48;
    return {{"kty", "EC"},
            {"kid", kid_},
            {"crv", kind_ == Kind::kP256 ? "P-256" : "P-384"},
            {"x", b64url(big_endian(key_.get(), OSSL_PKEY_PARAM_EC_PUB_X, width))},
            {"y", b64url(big_endian(key_.get(), OSSL_PKEY_PARAM_EC_PUB_Y, width))}};
}

std::string TestKey::sign_bytes(std::string_view signing_input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const char* digest = kind_ == Kind::kP384 ? "SHA384" : "SHA256";
    std::size_t size = 0;
    std::string signature;
    if (EVP_DigestSignInit_ex(ctx, nullptr, digest, nullptr, nullptr, key_.get(), nullptr) == 1 &&
        EVP_DigestSign(ctx, nullptr, &size,
                       reinterpret_cast<const unsigned char*>(signing_input.data()),  // NOLINT
                       signing_input.size()) == 1) {
        signature.resize(size);
        if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()),  // NOLINT
                           &size,
                           reinterpret_cast<const unsigned char*>(signing_input.data()),  // NOLINT
                           signing_input.size()) == 1) {
            signature.resize(size);
        } else {
            signature.clear();
        }
    }
    EVP_MD_CTX_free(ctx);
    if (kind_ == Kind::kRsa2048 || kind_ == Kind::kRsa1024 || signature.empty()) {
        return signature;
    }
    // DER ECDSA-Sig-Value -> r||s, each as wide as the curve's order.
    const auto* der = reinterpret_cast<const unsigned char*>(signature.data());  // NOLINT
    ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size()));
    const int width = kind_ == Kind::kP256 ? 32 : 48;
    std::string raw(static_cast<std::size_t>(2 * width), '\0');
    auto* out = reinterpret_cast<unsigned char*>(raw.data());  // NOLINT: bytes
    BN_bn2binpad(ECDSA_SIG_get0_r(sig), out, width);
    BN_bn2binpad(ECDSA_SIG_get0_s(sig), out + width, width);
    ECDSA_SIG_free(sig);
    return raw;
}

std::string TestKey::token(const nlohmann::json& claims, const nlohmann::json& header) const {
    const nlohmann::json head =
        header.is_null() ? nlohmann::json{{"alg", alg()}, {"kid", kid_}} : header;
    const std::string input = b64url(head.dump()) + "." + b64url(claims.dump());
    return input + "." + b64url(sign_bytes(input));
}

}  // namespace stockade::testing
