#include "common/crypto.h"

#include <cassert>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

namespace stockade {

Sha256Digest sha256(std::string_view first, std::string_view second) {
    Sha256Digest digest{};
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, first.data(), first.size());
    SHA256_Update(&ctx, second.data(), second.size());
    SHA256_Final(digest.data(), &ctx);
    return digest;
}

Sha256Hasher::Sha256Hasher() : ctx_(new SHA256_CTX) {
    SHA256_Init(ctx_.get());
}

Sha256Hasher::~Sha256Hasher() = default;
Sha256Hasher::Sha256Hasher(Sha256Hasher&&) noexcept = default;
Sha256Hasher& Sha256Hasher::operator=(Sha256Hasher&&) noexcept = default;

void Sha256Hasher::Free::operator()(SHA256state_st* ctx) const noexcept {
    delete ctx;  // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

void Sha256Hasher::update(std::string_view bytes) {
    assert(ctx_ && "update() after finish() or a move");
    SHA256_Update(ctx_.get(), bytes.data(), bytes.size());
    size_ += bytes.size();
}

Sha256Digest Sha256Hasher::finish() {
    assert(ctx_ && "finish() twice, or after a move");
    Sha256Digest digest{};
    SHA256_Final(digest.data(), ctx_.get());
    ctx_.reset();
    return digest;
}

std::string hex(const Sha256Digest& digest) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(digest.size() * 2);
    for (unsigned char byte : digest) {
        out += kHex[byte >> 4U];
        out += kHex[byte & 0x0FU];
    }
    return out;
}

std::string sha256_hex(std::string_view bytes) {
    return hex(sha256(bytes));
}

std::string hmac_sha256_hex(std::string_view key, std::string_view payload) {
    constexpr size_t kBlock = 64;
    std::array<char, kBlock> ipad{};
    std::array<char, kBlock> opad{};
    for (size_t i = 0; i < kBlock; ++i) {
        const auto k = static_cast<unsigned char>(i < key.size() ? key[i] : 0);
        ipad[i] = static_cast<char>(k ^ 0x36U);
        opad[i] = static_cast<char>(k ^ 0x5cU);
    }
    const Sha256Digest inner = sha256(std::string_view(ipad.data(), ipad.size()), payload);
    const Sha256Digest outer =
        sha256(std::string_view(opad.data(), opad.size()),
               std::string_view(reinterpret_cast<const char*>(inner.data()),  // NOLINT: bytes
                                inner.size()));
    return hex(outer);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0 || text.size() > (size_t{1} << 30)) {
        return std::nullopt;
    }
    std::string out(text.size() / 4 * 3, '\0');
    // EVP_DecodeBlock is the base64 codec alone (crypto/evp/encode.c), no digest provider.
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),         // NOLINT
                                  reinterpret_cast<const unsigned char*>(text.data()),  // NOLINT
                                  static_cast<int>(text.size()));
    if (n < 0) {
        return std::nullopt;
    }
    // It decodes the padding as zero bytes: drop them.
    size_t size = static_cast<size_t>(n);
    for (size_t pad = 0; pad < 2 && !text.empty() && text[text.size() - 1 - pad] == '='; ++pad) {
        --size;
    }
    out.resize(size);
    return out;
}

std::string base64_encode(std::string_view bytes) {
    // EVP_EncodeBlock writes 4 characters per 3 bytes and a NUL, without line breaks.
    std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),          // NOLINT
                                  reinterpret_cast<const unsigned char*>(bytes.data()),  // NOLINT
                                  static_cast<int>(bytes.size()));
    out.resize(static_cast<size_t>(n));
    return out;
}

}  // namespace stockade
