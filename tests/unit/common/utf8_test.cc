#include "common/utf8.h"

#include <gtest/gtest.h>

namespace stockade {
namespace {

TEST(Utf8Test, PrefixAndSuffixNeverCutACodePoint) {
    const std::string s = "ab\u00e9\u20ac";  // a b é(2) €(3)
    EXPECT_EQ(utf8_prefix(s, 3), "ab");
    EXPECT_EQ(utf8_prefix(s, 4), "ab\u00e9");
    EXPECT_EQ(utf8_prefix(s, 6), "ab\u00e9");
    EXPECT_EQ(utf8_prefix(s, 7), s);
    EXPECT_EQ(utf8_suffix(s, 2), "");
    EXPECT_EQ(utf8_suffix(s, 3), "\u20ac");
    EXPECT_EQ(utf8_suffix(s, 5), "\u00e9\u20ac");
}

// Unicode table 3-7, at each boundary.
TEST(Utf8Test, ValidIsExactlyTheWellFormedSequences) {
    EXPECT_TRUE(is_valid_utf8(""));
    EXPECT_TRUE(is_valid_utf8("h\u00e9\u20ac\U0010FFFF"));
    EXPECT_TRUE(is_valid_utf8("\xED\x9F\xBF"));       // U+D7FF, below the surrogates
    EXPECT_TRUE(is_valid_utf8("\xF0\x90\x80\x80"));   // U+10000
    EXPECT_FALSE(is_valid_utf8("h\xE9"));             // Latin-1
    EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong NUL
    EXPECT_FALSE(is_valid_utf8("\xC1\xBF"));          // overlong
    EXPECT_FALSE(is_valid_utf8("\xE0\x9F\xBF"));      // overlong three-byte
    EXPECT_FALSE(is_valid_utf8("\xF0\x8F\xBF\xBF"));  // overlong four-byte
    EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
    EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(is_valid_utf8("\xF5\x80\x80\x80"));
    EXPECT_FALSE(is_valid_utf8("\xE2\x82"));  // cut short
    EXPECT_FALSE(is_valid_utf8("\x80"));      // a lone continuation
}

TEST(Utf8Test, SanitizeReplacesEachOffendingByte) {
    EXPECT_EQ(sanitize_utf8("h\u00e9!"), "h\u00e9!");
    EXPECT_EQ(sanitize_utf8("h\xE9!"), "h\uFFFD!");
    EXPECT_EQ(sanitize_utf8("\xC0\x80"), "\uFFFD\uFFFD");
    EXPECT_EQ(sanitize_utf8("\xE0\xA0"
                            "A"),
              "\uFFFD\uFFFDA");
    EXPECT_EQ(sanitize_utf8("a\xE2\x82"), "a\uFFFD\uFFFD");
    EXPECT_TRUE(is_valid_utf8(sanitize_utf8("\xFF\xFE\xED\xA0\x80\xF4\x90")));
}

TEST(Utf8Test, ContinuationBytes) {
    EXPECT_TRUE(utf8_continuation('\x80'));
    EXPECT_TRUE(utf8_continuation('\xBF'));
    EXPECT_FALSE(utf8_continuation('A'));
    EXPECT_FALSE(utf8_continuation('\xC3'));
}

}  // namespace
}  // namespace stockade
