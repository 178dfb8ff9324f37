// TOML as JSON of the same structure; syntax errors and dates refused with where they are.
#include "common/toml_json.h"

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;

TEST(TomlJsonTest, TablesArraysAndScalarsKeepTheirShape) {
    auto doc = toml_to_json(
        "name = \"x\"\nn = 3\nf = 1.5\nb = true\nlist = [\"a\", \"b\"]\n"
        "[table]\nkey = \"v\"\n[[items]]\nid = 1\n[[items]]\nid = 2\n");
    ASSERT_THAT(doc, IsOk());
    EXPECT_EQ((*doc)["name"], "x");
    EXPECT_EQ((*doc)["n"], 3);
    EXPECT_EQ((*doc)["f"], 1.5);
    EXPECT_EQ((*doc)["b"], true);
    EXPECT_EQ((*doc)["list"], nlohmann::json::array({"a", "b"}));
    EXPECT_EQ((*doc)["table"]["key"], "v");
    EXPECT_EQ((*doc)["items"][1]["id"], 2);
}

TEST(TomlJsonTest, ErrorsSayWhere) {
    auto bad = toml_to_json("a = 1\nb = [\n");
    ASSERT_FALSE(bad.has_value());
    EXPECT_THAT(bad.error().message, HasSubstr("invalid TOML at line"));
    auto date = toml_to_json("\n\nwhen = 1979-05-27\n");
    ASSERT_FALSE(date.has_value());
    EXPECT_THAT(date.error().message, HasSubstr("\"when\" (line 3): a date or time"));
}

}  // namespace
}  // namespace stockade
