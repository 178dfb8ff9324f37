// Image recipes: the fields, and every refusal naming what to write instead. Pure.
#include "images/recipe.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IsOk;

std::string refusal(std::string_view text) {
    auto recipe = parse_recipe(text);
    EXPECT_FALSE(recipe.has_value()) << text;
    return recipe.has_value() ? std::string() : recipe.error().message;
}

TEST(RecipeTest, ReadsEveryField) {
    auto recipe = parse_recipe(R"(
suite = "bookworm"
mirror = "http://deb.debian.org/debian"
variant = "minbase"
packages = ["python3", "git=1:2.39.5-0+deb12u1", "ca-certificates/bookworm"]
run = ["echo one > /usr/local/one", "python3 --version"]
allow = ["*.example.com:443", "pypi.org"]
)");
    ASSERT_THAT(recipe, IsOk());
    EXPECT_EQ(recipe->suite, "bookworm");
    EXPECT_EQ(recipe->mirror, "http://deb.debian.org/debian");
    EXPECT_EQ(recipe->variant, "minbase");
    EXPECT_THAT(recipe->packages,
                ElementsAre("python3", "git=1:2.39.5-0+deb12u1", "ca-certificates/bookworm"));
    EXPECT_THAT(recipe->run, ElementsAre("echo one > /usr/local/one", "python3 --version"));
    EXPECT_THAT(recipe->allow, ElementsAre("*.example.com:443", "pypi.org"));
    auto on_image = parse_recipe("image = \"debian:12\"\npackages = [\"curl\"]\n");
    ASSERT_THAT(on_image, IsOk());
    EXPECT_EQ(on_image->image, "debian:12");
}

TEST(RecipeTest, NeedsExactlyOneBase) {
    EXPECT_THAT(refusal("packages = [\"git\"]\n"), HasSubstr("give a base, either suite"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nimage = \"x\"\n"), HasSubstr("not both"));
    EXPECT_THAT(refusal("image = \"x\"\nmirror = \"http://m\"\n"),
                HasSubstr("mirror and variant are for a suite"));
}

TEST(RecipeTest, RefusesWhatCouldPassForAnOptionOrIsNotAName) {
    EXPECT_THAT(refusal("suite = \"--hook=x\"\n"), HasSubstr("not a Debian suite name"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\npackages = [\"--foo\"]\n"),
                HasSubstr("not a Debian package name"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\npackages = [\"git curl\"]\n"),
                HasSubstr("not a Debian package name"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nmirror = \"file:///etc\"\n"),
                HasSubstr("not an http:// or https:// URL"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nvariant = \"huge\"\n"),
                HasSubstr("not one of mmdebstrap's: extract, custom"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nallow = [\"network.access(x)\"]\n"),
                HasSubstr("not a host pattern"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nrun = [\"\"]\n"), HasSubstr("run step"));
}

TEST(RecipeTest, RefusesUnknownKeysWrongTypesAndBadToml) {
    EXPECT_THAT(refusal("suite = \"bookworm\"\nsteps = []\n"),
                HasSubstr("unknown key \"steps\": the keys are suite, image"));
    EXPECT_THAT(refusal("suite = 12\n"), HasSubstr("suite takes a string"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nrun = \"make\"\n"),
                HasSubstr("run takes a list of at most"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nrun = [\n"), HasSubstr("invalid TOML at line"));
    EXPECT_THAT(refusal("suite = \"bookworm\"\nrun = [1979-05-27]\n"),
                HasSubstr("a date or time is not a value"));
}

// The examples in images/recipes/ are recipes.
TEST(RecipeTest, TheExamplesParse) {
    int seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(STOCKADE_RECIPES_DIR)) {
        std::ifstream in(entry.path());
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        EXPECT_THAT(parse_recipe(text), IsOk()) << entry.path();
        ++seen;
    }
    EXPECT_GE(seen, 3);
}

}  // namespace
}  // namespace stockade::images
