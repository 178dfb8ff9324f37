// UTF-8 in one place: cutting without splitting a code point, validation (Unicode table 3-7:
// no overlongs, no surrogates, nothing above U+10FFFF) and replacement of what is not valid.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stockade {

// Whether `c` continues a multi-byte sequence (10xxxxxx).
constexpr bool utf8_continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U;
}
// The longest prefix of `s` of at most `max_bytes` that does not end inside a code point.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);
// The longest suffix of `s` of at most `max_bytes` that does not start inside a code point.
std::string_view utf8_suffix(std::string_view s, size_t max_bytes);
bool is_valid_utf8(std::string_view s);
// `s` with every ill-formed sequence replaced by U+FFFD, one per offending byte, so the text
// can travel in JSON.
std::string sanitize_utf8(std::string_view s);

}  // namespace stockade
