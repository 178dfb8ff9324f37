#include "common/parse.h"

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade {
namespace {

using testing::HasErrc;

TEST(ParseSizeTest, AcceptsPowersOf1024WithOptionalByteSuffix) {
    EXPECT_EQ(*parse_size("4096"), 4096U);
    EXPECT_EQ(*parse_size("512K"), 512U * 1024);
    EXPECT_EQ(*parse_size("64M"), 64ULL << 20);
    EXPECT_EQ(*parse_size("64MiB"), 64ULL << 20);
    EXPECT_EQ(*parse_size("2g"), 2ULL << 30);
    EXPECT_EQ(*parse_size("1.5K"), 1536U);
    EXPECT_EQ(*parse_size("1T"), 1ULL << 40);
    EXPECT_EQ(*parse_size("10B"), 10U);
}

TEST(ParseSizeTest, RejectsGarbageNegativeFractionalBytesAndOverflow) {
    for (const char* bad :
         {"", "M", "-1", "1.5", "12Q", "1KK", "1 K", "0x10", "1e3", "99999999999T"}) {
        EXPECT_THAT(parse_size(bad), HasErrc(Errc::kInvalidArgument)) << bad;
    }
}

TEST(ParseUintTest, EnforcesRange) {
    EXPECT_EQ(*parse_uint("64", 2, 100), 64U);
    EXPECT_THAT(parse_uint("1", 2, 100), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_uint("101", 2, 100), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_uint("12a", 2, 100), HasErrc(Errc::kInvalidArgument));
}

TEST(ParseCpuFractionTest, AcceptsPositiveFractions) {
    EXPECT_DOUBLE_EQ(*parse_cpu_fraction("0.5"), 0.5);
    EXPECT_DOUBLE_EQ(*parse_cpu_fraction("2"), 2.0);
    EXPECT_THAT(parse_cpu_fraction("0"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_cpu_fraction("half"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_cpu_fraction("2000"), HasErrc(Errc::kInvalidArgument));
}

TEST(ParseDurationTest, DefaultsToSecondsAndKnowsUnits) {
    using std::chrono::milliseconds;
    EXPECT_EQ(*parse_duration("30"), milliseconds(30'000));
    EXPECT_EQ(*parse_duration("1.5s"), milliseconds(1'500));
    EXPECT_EQ(*parse_duration("250ms"), milliseconds(250));
    EXPECT_EQ(*parse_duration("2m"), milliseconds(120'000));
    EXPECT_EQ(*parse_duration("1h"), milliseconds(3'600'000));
    EXPECT_THAT(parse_duration("0"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_duration("5d"), HasErrc(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace stockade
