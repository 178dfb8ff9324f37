#include "common/quote.h"

#include <gtest/gtest.h>

namespace stockade {
namespace {

TEST(QuoteTest, EscapesQuotesControlBytesAndNonAscii) {
    EXPECT_EQ(quote("plain"), "\"plain\"");
    EXPECT_EQ(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(quote("line\nforged\x1b[2J"), "\"line\\x0aforged\\x1b[2J\"");
    EXPECT_EQ(quote("\xc3\xa9"), "\"\\xc3\\xa9\"");
}

TEST(QuoteTest, CutsLongText) {
    EXPECT_EQ(quote(std::string(100, 'x'), 4), "\"xxxx...\"");
    EXPECT_EQ(quote("abcd", 4), "\"abcd\"");
}

}  // namespace
}  // namespace stockade
