#include "runner/session/byte_ring.h"

#include <string>

#include <gtest/gtest.h>

namespace stockade::runner {
namespace {

std::string held(const ByteRing& ring) {
    std::string out;
    ring.copy(ring.oldest(), static_cast<std::size_t>(ring.total() - ring.oldest()), out);
    return out;
}

TEST(ByteRingTest, HoldsEverythingUntilItsCapThenTheLastCapBytes) {
    ByteRing ring(8);
    ring.append("abc");
    EXPECT_EQ(ring.total(), 3U);
    EXPECT_EQ(ring.oldest(), 0U);
    EXPECT_EQ(held(ring), "abc");
    ring.append("defghij");  // wraps
    EXPECT_EQ(ring.total(), 10U);
    EXPECT_EQ(ring.oldest(), 2U);
    EXPECT_EQ(held(ring), "cdefghij");
    std::string middle;
    ring.copy(6, 3, middle);  // across the wrap point
    EXPECT_EQ(middle, "ghi");
}

TEST(ByteRingTest, AnAppendLongerThanTheCapKeepsItsTail) {
    ByteRing ring(4);
    ring.append("xy");
    ring.append("0123456789");
    EXPECT_EQ(ring.total(), 12U);
    EXPECT_EQ(ring.oldest(), 8U);
    EXPECT_EQ(held(ring), "6789");
}

TEST(ByteRingTest, GrowsItsBufferOnlyAsFarAsTheOutputGoes) {
    ByteRing ring(1 << 20);
    ring.append("short");
    EXPECT_LT(ring.memory(), 1024U);
    ByteRing tiny(0);  // a zero cap holds one byte
    tiny.append("xy");
    EXPECT_EQ(held(tiny), "y");
}

TEST(ByteRingTest, CountsNewlinesFromAnOffsetAcrossTheWrap) {
    ByteRing ring(6);
    ring.append("a\nb\nc\nd\n");  // holds the last 6 bytes: "b\nc\nd\n"
    EXPECT_EQ(ring.oldest(), 2U);
    EXPECT_EQ(ring.newlines_from(2), 3U);
    EXPECT_EQ(ring.newlines_from(5), 2U);
    EXPECT_EQ(ring.newlines_from(8), 0U);
}

}  // namespace
}  // namespace stockade::runner
