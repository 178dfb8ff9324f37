#include "common/utf8.h"

#include <cstdint>
#include <cstring>

namespace stockade {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
size_t valid_sequence_length(std::string_view s, size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80U) {
        return 1;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((b0 & 0xE0U) == 0xC0U) {
        len = 2;
        cp = b0 & 0x1FU;
    } else if ((b0 & 0xF0U) == 0xE0U) {
        len = 3;
        cp = b0 & 0x0FU;
    } else if ((b0 & 0xF8U) == 0xF0U) {
        len = 4;
        cp = b0 & 0x07U;
    } else {
        return 0;
    }
    if (i + len > s.size()) {
        return 0;
    }
    for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0U) != 0x80U) {
            return 0;
        }
        cp = (cp << 6U) | (b & 0x3FU);
    }
    const bool overlong =
        (len == 2 && cp < 0x80U) || (len == 3 && cp < 0x800U) || (len == 4 && cp < 0x10000U);
    const bool surrogate = cp >= 0xD800U && cp <= 0xDFFFU;
    if (overlong || surrogate || cp > 0x10FFFFU) {
        return 0;
    }
    return len;
}

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace

std::string_view utf8_prefix(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) {
        return s;
    }
    size_t n = max_bytes;
    for (int back = 0; back < 3 && n > 0 && utf8_continuation(s[n]); ++back) {
        --n;
    }
    return s.substr(0, n);
}

std::string_view utf8_suffix(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) {
        return s;
    }
    size_t start = s.size() - max_bytes;
    for (int fwd = 0; fwd < 3 && start < s.size() && utf8_continuation(s[start]); ++fwd) {
        ++start;
    }
    return s.substr(start);
}

bool is_valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        // Most text is ASCII: eight bytes at a time while none has its high bit set.
        while (i + 8 <= s.size()) {
            uint64_t word = 0;
            std::memcpy(&word, s.data() + i, sizeof word);
            if ((word & 0x8080808080808080ULL) != 0) {
                break;
            }
            i += 8;
        }
        if (i == s.size()) {
            break;
        }
        const size_t len = valid_sequence_length(s, i);
        if (len == 0) {
            return false;
        }
        i += len;
    }
    return true;
}

std::string sanitize_utf8(std::string_view s) {
    if (is_valid_utf8(s)) {
        return std::string(s);
    }
    std::string out;
    out.reserve(s.size() + 16);
    for (size_t i = 0; i < s.size();) {
        const size_t len = valid_sequence_length(s, i);
        if (len == 0) {
            out += kReplacementChar;
            ++i;
        } else {
            out.append(s.substr(i, len));
            i += len;
        }
    }
    return out;
}

}  // namespace stockade
