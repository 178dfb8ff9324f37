#include "common/path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SplitTest, KeepsEmptyFieldsAtEitherEndAndBetween) {
    EXPECT_THAT(split("a::b", ':'), ElementsAre("a", "", "b"));
    EXPECT_THAT(split(":a:", ':'), ElementsAre("", "a", ""));
    EXPECT_THAT(split("", ':'), ElementsAre(""));
    EXPECT_THAT(split("abc", ':'), ElementsAre("abc"));
}

TEST(PathComponentsTest, DropsEmptyComponentsButNotDots) {
    EXPECT_THAT(path_components("/a//b/"), ElementsAre("a", "b"));
    EXPECT_THAT(path_components("a/./../b"), ElementsAre("a", ".", "..", "b"));
    EXPECT_THAT(path_components("/"), IsEmpty());
    EXPECT_THAT(path_components(""), IsEmpty());
}

TEST(NormalisedComponentsTest, AppliesDotsAndStopsDotDotAtTheTop) {
    std::vector<std::string_view> parts;
    append_normalised_components("/a/./b/../c", parts);
    EXPECT_THAT(parts, ElementsAre("a", "c"));
    parts.clear();
    append_normalised_components("/../../x", parts);
    EXPECT_EQ(join_absolute(parts), "/x");
    EXPECT_EQ(join_absolute({}), "/");
    EXPECT_EQ(join_absolute({"a", "b", "c"}, 1), "/b/c");
}

TEST(SplitPathListTest, OwnsItsEntriesInOrder) {
    EXPECT_THAT(split_path_list("/usr/bin::/bin"), ElementsAre("/usr/bin", "", "/bin"));
}

TEST(PathTest, ParentOfARelativePath) {
    EXPECT_EQ(parent_of("a/b/c"), "a/b");
    EXPECT_EQ(parent_of("c"), "");
    EXPECT_EQ(parent_of(""), "");
    EXPECT_EQ(parent_of("a/"), "a");
}

}  // namespace
}  // namespace stockade
