#include <gtest/gtest.h>

#include "tests/testing/matchers.h"
#include "workspace/workspace.h"

namespace stockade::workspace {
namespace {

using stockade::testing::HasErrc;

constexpr const char* kWs = "/work/proj";
constexpr const char* kSpill = "/state/tool-output/s1";

ResolvedPath ok(std::string_view input) {
    Result<ResolvedPath> r = resolve_path(input, kWs, kSpill);
    if (!r) {
        ADD_FAILURE() << input << ": " << r.error().message;
        return {};
    }
    return *r;
}

TEST(ResolvePathTest, RelativePathsAreTakenFromTheWorkspace) {
    const ResolvedPath p = ok("src/a.cc");
    EXPECT_EQ(p.root, Root::kWorkspace);
    EXPECT_EQ(p.relative, "src/a.cc");
    EXPECT_EQ(p.display, "/work/proj/src/a.cc");
}

TEST(ResolvePathTest, DotsAndDuplicateSlashesAreNormalisedLexically) {
    EXPECT_EQ(ok("./src//b/../a.cc").relative, "src/a.cc");
    EXPECT_EQ(ok("/work/proj/./src/").relative, "src");
    EXPECT_EQ(ok("src/..").relative, "");
    EXPECT_EQ(ok("").display, "/work/proj");
    EXPECT_EQ(ok(".").relative, "");
}

TEST(ResolvePathTest, AbsolutePathsInsideTheWorkspace) {
    const ResolvedPath p = ok("/work/proj/README.md");
    EXPECT_EQ(p.root, Root::kWorkspace);
    EXPECT_EQ(p.relative, "README.md");
    EXPECT_EQ(ok("/work/proj").relative, "");
}

TEST(ResolvePathTest, SpillPathsNameTheSpillRoot) {
    const ResolvedPath p = ok("/state/tool-output/s1/grep-call1.txt");
    EXPECT_EQ(p.root, Root::kSpill);
    EXPECT_EQ(p.relative, "grep-call1.txt");
    EXPECT_EQ(p.display, "/state/tool-output/s1/grep-call1.txt");
}

TEST(ResolvePathTest, PathsOutsideEveryRootAreRefusedWithAModelFacingSentence) {
    Result<ResolvedPath> r = resolve_path("/etc/passwd", kWs, kSpill);
    ASSERT_THAT(r, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(r.error().message,
              "/etc/passwd is outside the workspace (/work/proj). Use a path inside it.");
}

TEST(ResolvePathTest, DotDotCannotClimbOutOfTheWorkspace) {
    Result<ResolvedPath> r = resolve_path("../../etc/passwd", kWs, kSpill);
    ASSERT_THAT(r, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(r.error().message,
              "/etc/passwd is outside the workspace (/work/proj). Use a path inside it.");
    EXPECT_THAT(resolve_path("/work/proj/../proj2/x", kWs, kSpill),
                HasErrc(Errc::kPermissionDenied));
}

TEST(ResolvePathTest, APrefixOfTheRootNameIsNotInside) {
    EXPECT_THAT(resolve_path("/work/project/x", kWs, kSpill), HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(resolve_path("/state/tool-output/s12/x", kWs, kSpill),
                HasErrc(Errc::kPermissionDenied));
}

TEST(ResolvePathTest, TrailingSlashesOnTheRootsDoNotMatter) {
    Result<ResolvedPath> r = resolve_path("/work/proj/a", "/work/proj/", "");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->relative, "a");
}

TEST(ResolvePathTest, NulBytesAreRejected) {
    EXPECT_THAT(resolve_path(std::string_view("a\0b", 3), kWs, kSpill),
                HasErrc(Errc::kInvalidArgument));
}

TEST(ResolvePathTest, TheMoreSpecificRootWinsWhenOneIsInsideTheOther) {
    Result<ResolvedPath> r = resolve_path("/work/proj/.spill/x", kWs, "/work/proj/.spill");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->root, Root::kSpill);
    EXPECT_EQ(r->relative, "x");
}

}  // namespace
}  // namespace stockade::workspace
