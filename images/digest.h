// Content digests as the OCI image spec writes them ("sha256:" and 64 lower-case hex digits),
// and the check that a blob is the one its digest names. Every byte an image brings in — an
// index, a manifest, a config, a layer — is refused unless its digest matches before it is used.
// Only sha256 is accepted: it is what every registry and `docker save` write, and one algorithm
// means one way for two names of the same content to differ.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/crypto.h"
#include "common/result.h"

namespace stockade::images {

class Digest {
public:
    // An empty digest that names no content: a default for aggregates. parse() and of() never
    // give one.
    Digest() = default;

    // "sha256:<64 lower-case hex>". Other algorithms that the OCI grammar allows (sha512,
    // blake3) are refused by name; anything else is refused saying what is wrong with it.
    // Errors are kInvalidArgument.
    static Result<Digest> parse(std::string_view text);
    static Digest of(std::string_view bytes);
    static Digest from_sha256(const Sha256Digest& digest);

    [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
    // "sha256:…", the form for manifests, URLs and messages.
    [[nodiscard]] const std::string& str() const noexcept { return text_; }
    // The 64 hex digits alone, the file name under blobs/sha256/.
    [[nodiscard]] std::string_view hex() const noexcept;

    friend bool operator==(const Digest&, const Digest&) = default;
    friend std::strong_ordering operator<=>(const Digest&, const Digest&) = default;

private:
    explicit Digest(std::string text) : text_(std::move(text)) {}
    std::string text_;
};

// OK when `bytes` has the digest `expected`; otherwise kInvalidArgument:
// "digest mismatch: expected sha256:…, got sha256:…".
Status verify(std::string_view bytes, const Digest& expected);

// verify() for content that arrives in pieces. With an expected size (a descriptor's), update()
// fails as soon as more bytes arrive than announced, so a lying server or archive is stopped
// early rather than after it has filled the disk; finish() also fails when fewer arrived.
class DigestVerifier {
public:
    explicit DigestVerifier(Digest expected, std::optional<uint64_t> expected_size = std::nullopt);

    Status update(std::string_view bytes);
    // Call once, after the last update().
    Status finish();
    [[nodiscard]] uint64_t size() const noexcept { return hasher_.size(); }
    [[nodiscard]] const Digest& expected() const noexcept { return expected_; }

private:
    Digest expected_;
    std::optional<uint64_t> expected_size_;
    Sha256Hasher hasher_;
};

}  // namespace stockade::images
