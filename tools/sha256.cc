#include "tools/sha256.h"

// OpenSSL's low-level SHA-256 (deprecated in 3.0, still shipped): unlike EVP_Digest it does not
// pull the provider framework — every algorithm's tables — into the statically linked binary,
// which cost ~2 MiB of start-up RSS in every `stockade run`.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <array>

#include <openssl/sha.h>

namespace stockade::tools {

std::string sha256_hex(std::string_view bytes) {
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, bytes.data(), bytes.size());
    SHA256_Final(digest.data(), &ctx);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(digest.size() * 2);
    for (unsigned char byte : digest) {
        hex += kHex[byte >> 4U];
        hex += kHex[byte & 0x0FU];
    }
    return hex;
}

}  // namespace stockade::tools
