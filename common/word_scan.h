// Scanning text eight bytes at a time ("SWAR": SIMD within a register) for the rare bytes that
// need a closer look: controls to escape, quotes in JSON. A whole page of plain text then
// costs a few instructions a word instead of a lookup a byte.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace stockade::word_scan {

inline constexpr uint64_t kOnes = 0x0101010101010101ULL;
inline constexpr uint64_t kHighs = 0x8080808080808080ULL;

// Non-zero when some byte of `word` is below `n` (n <= 0x80). Exact as a yes/no answer; which
// bits are set says nothing reliable about which bytes.
constexpr uint64_t any_below(uint64_t word, uint8_t n) {
    return (word - kOnes * n) & ~word & kHighs;
}

// Non-zero when some byte of `word` equals `byte`.
constexpr uint64_t any_equal(uint64_t word, uint8_t byte) {
    return any_below(word ^ (kOnes * byte), 1);
}

// The high bit of each byte of `word` that equals `byte`, and no other bit: exact per byte
// (no borrow from a neighbour), so its popcount counts them.
constexpr uint64_t equal_bytes(uint64_t word, uint8_t byte) {
    constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
    const uint64_t x = word ^ (kOnes * byte);
    return ~(((x & kLow7) + kLow7) | x | kLow7);
}

// How many bytes of `s` equal `byte` (newlines before an offset, for a line number).
// Each byte of `lanes` counts the matches in its column, for up to 255 words, then the eight
// counts are added in 16-bit lanes: no popcount, which x86-64's baseline lacks (std::popcount
// is a libgcc call there).
inline size_t count_byte(std::string_view s, uint8_t byte) {
    constexpr uint64_t kEvenBytes = 0x00FF00FF00FF00FFULL;
    size_t count = 0;
    size_t i = 0;
    while (i + 8 <= s.size()) {
        uint64_t lanes = 0;
        for (size_t words = 0; words < 255 && i + 8 <= s.size(); ++words, i += 8) {
            uint64_t word = 0;
            std::memcpy(&word, s.data() + i, sizeof word);
            lanes += equal_bytes(word, byte) >> 7;
        }
        const uint64_t pairs = (lanes & kEvenBytes) + ((lanes >> 8) & kEvenBytes);
        count += static_cast<size_t>((pairs * 0x0001000100010001ULL) >> 48);
    }
    for (; i < s.size(); ++i) {
        count += static_cast<uint8_t>(s[i]) == byte ? 1U : 0U;
    }
    return count;
}

// The first multiple-of-eight offset from `from` whose eight bytes `maybe` (a predicate on a
// word loaded from memory order) does not clear; or the offset of the last partial word.
// Bytes before the result are known to need nothing.
template <class Maybe>
size_t skip_clear_words(std::string_view s, size_t from, Maybe maybe) {
    while (from + 8 <= s.size()) {
        uint64_t word = 0;
        std::memcpy(&word, s.data() + from, sizeof word);
        if (maybe(word) != 0) {
            break;
        }
        from += 8;
    }
    return from;
}

}  // namespace stockade::word_scan
