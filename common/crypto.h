// The hashing and encoding every module shares, from OpenSSL's libcrypto: SHA-256 (file stamps,
// digests of arguments), HMAC-SHA256 (sealed states), hex, base64. Low-level calls only: the
// EVP digest interface would pull OpenSSL's provider framework — every algorithm's tables —
// into the statically linked binary, ~2 MiB of start-up RSS in every `stockade run`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct SHA256state_st;  // OpenSSL's SHA256_CTX, kept out of this header

namespace stockade {

using Sha256Digest = std::array<unsigned char, 32>;

// SHA-256 of `first` followed by `second`.
Sha256Digest sha256(std::string_view first, std::string_view second = {});
// SHA-256 fed in pieces, for content too large to hold at once (an image blob as it streams
// from a registry or an archive). finish() ends it; a finished hasher accepts nothing more.
class Sha256Hasher {
public:
    Sha256Hasher();
    ~Sha256Hasher();
    Sha256Hasher(Sha256Hasher&&) noexcept;
    Sha256Hasher& operator=(Sha256Hasher&&) noexcept;
    Sha256Hasher(const Sha256Hasher&) = delete;
    Sha256Hasher& operator=(const Sha256Hasher&) = delete;

    void update(std::string_view bytes);
    // The digest of everything given to update(). Call it once.
    Sha256Digest finish();
    // How many bytes update() has been given.
    [[nodiscard]] uint64_t size() const noexcept { return size_; }

private:
    struct Free {
        void operator()(SHA256state_st* ctx) const noexcept;
    };
    std::unique_ptr<SHA256state_st, Free> ctx_;
    uint64_t size_ = 0;
};

// Lower-case hex of a digest, and of the SHA-256 of `bytes`.
std::string hex(const Sha256Digest& digest);
std::string sha256_hex(std::string_view bytes);
// HMAC-SHA256 (RFC 2104) of `payload` under `key` (at most 64 bytes), as lower-case hex.
std::string hmac_sha256_hex(std::string_view key, std::string_view payload);
// Equal, in time that does not depend on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);
// Standard base64 (RFC 4648, with padding) decoded; nullopt for malformed input.
std::optional<std::string> base64_decode(std::string_view text);
// Standard base64 (RFC 4648, with padding) of `bytes`, on one line.
std::string base64_encode(std::string_view bytes);

}  // namespace stockade
