// The hashing and encoding every module shares, from OpenSSL's libcrypto: SHA-256 (file stamps,
// digests of arguments), HMAC-SHA256 (sealed states), hex, base64. Low-level calls only: the
// EVP digest interface would pull OpenSSL's provider framework — every algorithm's tables —
// into the statically linked binary, ~2 MiB of start-up RSS in every `stockade run`.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace stockade {

using Sha256Digest = std::array<unsigned char, 32>;

// SHA-256 of `first` followed by `second`.
Sha256Digest sha256(std::string_view first, std::string_view second = {});
// Lower-case hex of a digest, and of the SHA-256 of `bytes`.
std::string hex(const Sha256Digest& digest);
std::string sha256_hex(std::string_view bytes);
// HMAC-SHA256 (RFC 2104) of `payload` under `key` (at most 64 bytes), as lower-case hex.
std::string hmac_sha256_hex(std::string_view key, std::string_view payload);
// Equal, in time that does not depend on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);
// Standard base64 (RFC 4648, with padding) decoded; nullopt for malformed input.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace stockade
