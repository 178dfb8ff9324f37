#include "common/strict_json.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

TEST(StrictJsonTest, ReadsJsonAsNlohmannDoes) {
    auto doc = parse_strict_json(R"({"a": [1, {"b": "c"}], "d": null})", 4);
    ASSERT_THAT(doc, IsOk());
    EXPECT_EQ(*doc, nlohmann::json::parse(R"({"a": [1, {"b": "c"}], "d": null})"));
}

TEST(StrictJsonTest, AKeyGivenTwiceIsAnErrorNamingItsPath) {
    auto top = parse_strict_json(R"({"a": 1, "a": 2})", 4);
    ASSERT_THAT(top, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(top.error().message, "a: given twice");
    auto deep = parse_strict_json(R"({"t": [{}, {"l": {"m": 1, "m": 1}}]})", 8);
    ASSERT_THAT(deep, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(deep.error().message, "t[1].l.m: given twice");
    EXPECT_THAT(parse_strict_json(R"([{"a": 1}, {"a": 1}])", 4), IsOk()) << "apart, not twice";
}

TEST(StrictJsonTest, NestingIsBoundedBeforeParsing) {
    const std::string deep = std::string(5, '[') + std::string(5, ']');
    EXPECT_THAT(parse_strict_json(deep, 5), IsOk());
    auto refused = parse_strict_json(deep, 4);
    ASSERT_THAT(refused, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(refused.error().message, "invalid JSON: nested deeper than 4 levels");
}

TEST(StrictJsonTest, ASyntaxErrorSaysWhere) {
    auto bad = parse_strict_json("{\"a\": }", 4);
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, HasSubstr("invalid JSON at line 1, column 7"));
}

}  // namespace
}  // namespace stockade
