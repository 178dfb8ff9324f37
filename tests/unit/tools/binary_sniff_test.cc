#include "tools/binary_sniff.h"

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

TEST(BinarySniffTest, MagicNumbersExtensionsAndContent) {
    EXPECT_EQ(sniff_binary("x", "\x89PNG\r\n\x1a\n...."), "PNG image");
    EXPECT_EQ(sniff_binary("logo.PNG", ""), "PNG image");
    EXPECT_EQ(sniff_binary("a.out",
                           "\x7F"
                           "ELF\x02\x01"),
              "ELF executable");
    EXPECT_EQ(sniff_binary("data", std::string("ab\0cd", 5)), "binary data");
    EXPECT_EQ(sniff_binary("noise", std::string(100, '\x01')), "binary data");
}

TEST(BinarySniffTest, TextIsNotBinary) {
    EXPECT_FALSE(sniff_binary("a.cc", "int main() {}\n").has_value());
    EXPECT_FALSE(sniff_binary("utf8.txt", "h\u00e9llo w\u00f6rld \u2192\n").has_value());
    EXPECT_FALSE(sniff_binary("tabs.tsv", "a\tb\r\nc\td\f\n\x1b[0m").has_value());
    EXPECT_FALSE(sniff_binary(".bashrc", "export A=1\n").has_value());
    // A few Latin-1 bytes in otherwise ASCII text is still text.
    EXPECT_FALSE(
        sniff_binary("latin1.txt", "caf\xE9 au lait, cr\xE8me br\xFBl\xE9\x65").has_value());
}

}  // namespace
}  // namespace stockade::tools
