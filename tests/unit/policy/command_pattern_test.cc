#include "policy/command_pattern.h"

#include <gtest/gtest.h>

namespace stockade::policy {
namespace {

struct CommandCase {
    const char* specifier;
    const char* command;
    bool matches;
};

std::ostream& operator<<(std::ostream& os, const CommandCase& c) {
    return os << "Bash(" << c.specifier << ") vs \"" << c.command << "\"";
}

class CommandPatternTest : public ::testing::TestWithParam<CommandCase> {};

TEST_P(CommandPatternTest, MatchesLikeClaudeCode) {
    const CommandCase& c = GetParam();
    EXPECT_EQ(CommandPattern::compile(c.specifier).matches(c.command), c.matches);
}

INSTANTIATE_TEST_SUITE_P(
    Specifiers, CommandPatternTest,
    ::testing::Values(
        // Exact.
        CommandCase{"npm run lint", "npm run lint", true},
        CommandCase{"npm run lint", "npm run lint --fix", false},
        CommandCase{"  npm   run\tlint ", "npm run lint", true},  // blanks collapse
        // Prefix ":*" at a word boundary.
        CommandCase{"npm run test:*", "npm run test", true},
        CommandCase{"npm run test:*", "npm run test -- --watch", true},
        CommandCase{"npm run test:*", "npm run testing", false},
        CommandCase{"npm run test:*", "npm run", false},
        CommandCase{"curl:*", "curl https://example.com", true},
        CommandCase{"rm:*", "rmdir x", false},
        // A prefix ending in punctuation continues within the word.
        CommandCase{"curl https://example.com/:*", "curl https://example.com/api", true},
        CommandCase{"curl https://example.com/:*", "curl https://evil.com/", false},
        // Wildcards: * spans spaces; a trailing " *" is optional.
        CommandCase{"git * main", "git push origin main", true},
        CommandCase{"git * main", "git checkout main", true},
        CommandCase{"git * main", "git push origin main --force", false},
        CommandCase{"git * main", "git main", false}, CommandCase{"ls *", "ls", true},
        CommandCase{"ls *", "ls -la", true}, CommandCase{"ls *", "lsof", false},
        CommandCase{"ls*", "lsof", true}, CommandCase{"* --version", "node --version", true},
        CommandCase{"git * main:*", "git push origin main --force", true},
        // Everything.
        CommandCase{"*", "anything at all", true}, CommandCase{"", "anything at all", true},
        CommandCase{":*", "anything at all", true}));

TEST(CommandPatternTest, KindsAndFirstWord) {
    EXPECT_EQ(CommandPattern::compile("npm test:*").kind(), CommandPattern::Kind::kPrefix);
    EXPECT_EQ(CommandPattern::compile("npm test:*").first_word(), "npm");
    EXPECT_EQ(CommandPattern::compile("git * main").kind(), CommandPattern::Kind::kWildcard);
    EXPECT_EQ(CommandPattern::compile("git * main").first_word(), "git");
    EXPECT_EQ(CommandPattern::compile("* --version").first_word(), "");
    EXPECT_EQ(CommandPattern::compile("make").kind(), CommandPattern::Kind::kExact);
    EXPECT_EQ(CommandPattern::compile("*").kind(), CommandPattern::Kind::kAny);
}

TEST(WildcardMatchTest, HostsAndLongNearMisses) {
    EXPECT_TRUE(wildcard_match("*.github.com", "api.github.com"));
    EXPECT_FALSE(wildcard_match("*.github.com", "github.com"));
    EXPECT_FALSE(wildcard_match("*.github.com", "github.com.evil.io"));
    EXPECT_FALSE(wildcard_match("a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

TEST(NormaliseCommandTextTest, CollapsesBlanks) {
    EXPECT_EQ(normalise_command_text("  a \t b\n\nc  "), "a b c");
    EXPECT_EQ(normalise_command_text(""), "");
}

}  // namespace
}  // namespace stockade::policy
