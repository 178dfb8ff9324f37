#include "policy/path_pattern.h"

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using testing::HasErrc;

struct PathCase {
    const char* anchor;
    const char* glob;
    const char* path;
    bool directory;
    bool matches;
};

std::ostream& operator<<(std::ostream& os, const PathCase& c) {
    return os << "anchor=" << c.anchor << " glob=\"" << c.glob << "\" path=" << c.path
              << (c.directory ? " (dir)" : "");
}

class PathPatternTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(PathPatternTest, MatchesLikeGitignore) {
    const PathCase& c = GetParam();
    auto pattern = PathPattern::compile(c.anchor, c.glob);
    ASSERT_TRUE(pattern.has_value()) << pattern.error().message;
    EXPECT_EQ(pattern->matches(c.path, c.directory), c.matches);
}

INSTANTIATE_TEST_SUITE_P(
    Gitignore, PathPatternTest,
    ::testing::Values(
        // A slash-free pattern names a component at any depth beneath the anchor.
        PathCase{"/ws", ".env", "/ws/.env", false, true},
        PathCase{"/ws", ".env", "/ws/sub/dir/.env", false, true},
        PathCase{"/ws", ".env", "/ws/.env.local", false, false},
        PathCase{"/ws", ".env", "/elsewhere/.env", false, false},
        PathCase{"/ws", "x", "/ws2/x", false, false},  // the anchor is a directory, not a prefix
        PathCase{"/ws", ".env.*", "/ws/.env.production", false, true},
        PathCase{"/ws", ".env.*", "/ws/.env", false, false},
        PathCase{"/ws", "*.pem", "/ws/certs/server.pem", false, true},
        // A directory match covers everything inside it.
        PathCase{"/ws", "secrets", "/ws/app/secrets/key.txt", false, true},
        PathCase{"/ws", "node_modules", "/ws/node_modules/x/index.js", false, true},
        // A pattern with a slash is anchored.
        PathCase{"/ws", "secrets/**", "/ws/secrets/a/b.pem", false, true},
        PathCase{"/ws", "secrets/**", "/ws/secrets", true, false},  // inside only
        PathCase{"/ws", "secrets/**", "/ws/app/secrets/key", false, false},
        PathCase{"/ws", "src/*.ts", "/ws/src/a.ts", false, true},
        PathCase{"/ws", "src/*.ts", "/ws/src/lib/a.ts", false, false},  // * stays in a component
        PathCase{"/ws", "docs/build/", "/ws/docs/build/index.html", false, true},
        // ** spans directories.
        PathCase{"/ws", "src/**/*.ts", "/ws/src/a.ts", false, true},
        PathCase{"/ws", "src/**/*.ts", "/ws/src/a/b/c.ts", false, true},
        PathCase{"/ws", "src/**/*.ts", "/ws/src/a/b/c.js", false, false},
        PathCase{"/ws", "**/*.pem", "/ws/k.pem", false, true},
        PathCase{"/ws", "**/*.pem", "/ws/a/b/k.pem", false, true},
        PathCase{"/ws", "a/**/b", "/ws/a/b", false, true},
        PathCase{"/ws", "a/**/b", "/ws/a/x/y/b", false, true},
        PathCase{"/ws", "a/**/b", "/ws/a/x/y/c", false, false},
        PathCase{"/ws", "**", "/ws/anything/at/all", false, true},
        PathCase{"/ws", "**", "/ws", true, false},
        PathCase{"/ws", "", "/ws/x", false, true},         // "./": everything beneath
        PathCase{"/ws", "a**b", "/ws/axyb", false, true},  // ** inside a name is a *
        // ?, classes, escapes.
        PathCase{"/ws", "file?.txt", "/ws/file1.txt", false, true},
        PathCase{"/ws", "file?.txt", "/ws/file10.txt", false, false},
        PathCase{"/ws", "[ab].txt", "/ws/a.txt", false, true},
        PathCase{"/ws", "[!ab].txt", "/ws/a.txt", false, false},
        PathCase{"/ws", "[^ab].txt", "/ws/c.txt", false, true},
        PathCase{"/ws", "[a-c]x", "/ws/bx", false, true},
        PathCase{"/ws", "[a-c]x", "/ws/dx", false, false},
        PathCase{"/ws", "\\*.txt", "/ws/*.txt", false, true},
        PathCase{"/ws", "\\*.txt", "/ws/a.txt", false, false},
        // A trailing slash: a directory (and so its contents), not a file of that name.
        PathCase{"/ws", "build/", "/ws/build", true, true},
        PathCase{"/ws", "build/", "/ws/build", false, false},
        PathCase{"/ws", "build/", "/ws/build/out.o", false, true},
        PathCase{"/ws", "build/", "/ws/sub/build/out.o", false, true},
        // Other anchors.
        PathCase{"/", "etc/passwd", "/etc/passwd", false, true},
        PathCase{"/", "etc/**", "/etc/ssh/sshd_config", false, true},
        PathCase{"/", "etc/**", "/ws/etc/x", false, false},
        PathCase{"/home/u", ".zshrc", "/home/u/.zshrc", false, true},
        PathCase{"/home/u", "Documents/*.pdf", "/home/u/Documents/a.pdf", false, true}));

TEST(PathPatternTest, RejectsClimbingOutOfTheAnchor) {
    EXPECT_THAT(PathPattern::compile("/ws", "../etc/passwd"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(PathPattern::compile("/ws", "a/../../b"), HasErrc(Errc::kInvalidArgument));
}

TEST(GlobComponentTest, Wildcards) {
    EXPECT_TRUE(glob_component_match("*", ""));
    EXPECT_TRUE(glob_component_match("a*b*c", "aXXbYYc"));
    EXPECT_FALSE(glob_component_match("*.txt", "a.txt.bak"));
    EXPECT_TRUE(glob_component_match("[]]", "]"));
    EXPECT_TRUE(glob_component_match("[", "["));  // no closing bracket: a literal
    EXPECT_FALSE(glob_component_match("?", ""));
    // Many stars against a long near-miss stays fast (no exponential backtracking).
    EXPECT_FALSE(glob_component_match("*a*a*a*a*a*a*a*a*b", std::string(200, 'a')));
}

TEST(PathViewTest, SplitsComponents) {
    const PathView view("/a/bb/c");
    EXPECT_EQ(view.parts, (std::vector<std::string_view>{"a", "bb", "c"}));
    EXPECT_TRUE(PathView("/").parts.empty());
}

}  // namespace
}  // namespace stockade::policy
