#include "images/digest.h"

#include <fmt/format.h>

#include "common/quote.h"

namespace stockade::images {
namespace {

constexpr std::string_view kSha256Prefix = "sha256:";
constexpr std::size_t kSha256HexDigits = 64;
// The OCI grammar caps nothing; a digest longer than this is not one we could accept anyway, and
// the cap keeps a hostile one out of messages.
constexpr std::size_t kMaxDigestText = 256;

Error invalid(std::string_view text, std::string_view problem) {
    return Error{Errc::kInvalidArgument, fmt::format("digest {}: {}", quote(text), problem)};
}

bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// OCI image spec, descriptor.md: algorithm := component (separator component)*, with
// component [a-z0-9]+ and separator [+._-].
bool is_algorithm(std::string_view text) {
    bool after_separator = true;
    for (char c : text) {
        if (is_lower_alnum(c)) {
            after_separator = false;
        } else if (c == '+' || c == '.' || c == '_' || c == '-') {
            if (after_separator) {
                return false;
            }
            after_separator = true;
        } else {
            return false;
        }
    }
    return !after_separator;
}

}  // namespace

Result<Digest> Digest::parse(std::string_view text) {
    if (text.empty()) {
        return Error{Errc::kInvalidArgument, "digest is empty"};
    }
    if (text.size() > kMaxDigestText) {
        return invalid(text, fmt::format("longer than {} characters", kMaxDigestText));
    }
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) {
        return invalid(text, "no algorithm: expected \"sha256:\" and 64 hex digits");
    }
    const std::string_view algorithm = text.substr(0, colon);
    const std::string_view encoded = text.substr(colon + 1);
    if (!is_algorithm(algorithm)) {
        return invalid(text, "the algorithm is not lower-case letters and digits");
    }
    if (algorithm != "sha256") {
        return invalid(
            text, fmt::format("algorithm {} is not supported: only sha256 is", quote(algorithm)));
    }
    if (encoded.size() != kSha256HexDigits) {
        return invalid(text, fmt::format("a sha256 digest has {} hex digits, not {}",
                                         kSha256HexDigits, encoded.size()));
    }
    for (char c : encoded) {
        if (c >= 'A' && c <= 'F') {
            return invalid(text, "hex digits must be lower case");
        }
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return invalid(text, "not a hex digit after \"sha256:\"");
        }
    }
    return Digest(std::string(text));
}

Digest Digest::of(std::string_view bytes) {
    return from_sha256(sha256(bytes));
}

Digest Digest::from_sha256(const Sha256Digest& digest) {
    return Digest(std::string(kSha256Prefix) + stockade::hex(digest));
}

std::string_view Digest::hex() const noexcept {
    if (text_.empty()) {
        return {};
    }
    const std::string_view text = text_;
    return text.substr(kSha256Prefix.size());
}

namespace {

Error mismatch(const Digest& expected, const Digest& got) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("digest mismatch: expected {}, got {}", expected.str(), got.str())};
}

}  // namespace

Status verify(std::string_view bytes, const Digest& expected) {
    const Digest got = Digest::of(bytes);
    if (got != expected) {
        return mismatch(expected, got);
    }
    return ok_status();
}

DigestVerifier::DigestVerifier(Digest expected, std::optional<uint64_t> expected_size)
    : expected_(std::move(expected)), expected_size_(expected_size) {}

Status DigestVerifier::update(std::string_view bytes) {
    if (expected_size_ && bytes.size() > *expected_size_ - hasher_.size()) {
        return Error{Errc::kInvalidArgument, fmt::format("blob {} is longer than its {} bytes",
                                                         expected_.str(), *expected_size_)};
    }
    hasher_.update(bytes);
    return ok_status();
}

Status DigestVerifier::finish() {
    const uint64_t got_size = hasher_.size();
    const Digest got = Digest::from_sha256(hasher_.finish());
    if (expected_size_ && got_size != *expected_size_) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("blob {} has {} bytes, not the {} announced (its digest is {})",
                                 expected_.str(), got_size, *expected_size_, got.str())};
    }
    if (got != expected_) {
        return mismatch(expected_, got);
    }
    return ok_status();
}

}  // namespace stockade::images
