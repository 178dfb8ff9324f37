#include "policy/shell_parse.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

using Argvs = std::vector<std::vector<std::string>>;

Argvs argvs(const ShellParse& parse) {
    Argvs out;
    for (const SimpleCommand& cmd : parse.commands) {
        std::vector<std::string> words;
        for (const ShellWord& word : cmd.words) {
            words.push_back(word.text);
        }
        out.push_back(std::move(words));
    }
    return out;
}

struct SplitCase {
    const char* name;
    const char* text;
    Argvs commands;  // in any order: nested commands are read before their parent
};

std::ostream& operator<<(std::ostream& os, const SplitCase& c) {
    return os << c.name;
}

class ShellSplitTest : public ::testing::TestWithParam<SplitCase> {};

TEST_P(ShellSplitTest, SplitsIntoSimpleCommands) {
    const ShellParse parse = parse_shell(GetParam().text);
    ASSERT_TRUE(parse.ok) << parse.error;
    EXPECT_THAT(argvs(parse), UnorderedElementsAreArray(GetParam().commands));
}

INSTANTIATE_TEST_SUITE_P(
    Commands, ShellSplitTest,
    ::testing::Values(
        SplitCase{"Simple", "ls -la", {{"ls", "-la"}}},
        SplitCase{"AndOr",
                  "npm test && curl x || echo no",
                  {{"npm", "test"}, {"curl", "x"}, {"echo", "no"}}},
        SplitCase{"Separators", "a; b | c & d |& e\nf", {{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}}},
        SplitCase{"Quotes",
                  R"(echo 'a b' "c d" e\ f "x\"y" 'it''s')",
                  {{"echo", "a b", "c d", "e f", "x\"y", "its"}}},
        SplitCase{"AnsiC", R"(printf $'a\tb\x41\101')", {{"printf", "a\tbAA"}}},
        SplitCase{"LineContinuation", "npm \\\n  test", {{"npm", "test"}}},
        SplitCase{"Subshell", "(cd x && make) > log", {{"cd", "x"}, {"make"}, {}}},
        SplitCase{"Group", "{ a; b; }", {{"a"}, {"b"}}},
        SplitCase{"CommandSubstitution",
                  "echo $(curl -s x) done",
                  {{"curl", "-s", "x"}, {"echo", "$(curl -s x)", "done"}}},
        SplitCase{"NestedSubstitution",
                  "echo \"$(cat $(ls))\"",
                  {{"ls"}, {"cat", "$(ls)"}, {"echo", "$(cat $(ls))"}}},
        SplitCase{"Backquotes",
                  "echo `whoami` `id -u`",
                  {{"whoami"}, {"id", "-u"}, {"echo", "`whoami`", "`id -u`"}}},
        SplitCase{"ProcessSubstitution",
                  "diff <(ls a) <(ls b)",
                  {{"ls", "a"}, {"ls", "b"}, {"diff", "<(ls a)", "<(ls b)"}}},
        SplitCase{
            "ParameterWithSubstitution", "echo ${X:-$(id)}", {{"id"}, {"echo", "${X:-$(id)}"}}},
        SplitCase{"Arithmetic", "x=$((1+(2*3))) y", {{"x=$((1+(2*3)))", "y"}}},
        SplitCase{"If",
                  "if test -f a; then echo y; else echo n; fi",
                  {{"test", "-f", "a"}, {"echo", "y"}, {"echo", "n"}}},
        SplitCase{"ForLoop", "for f in *.txt; do cat \"$f\"; done", {{"cat", "$f"}}},
        SplitCase{"WhileRead",
                  "while read l; do echo $l; done < in.txt",
                  {{"read", "l"}, {"echo", "$l"}, {}}},
        SplitCase{"Function", "f() { echo hi; }; f", {{"echo", "hi"}, {"f"}}},
        SplitCase{"FunctionKeyword", "function g { ls; }", {{"ls"}}},
        SplitCase{
            "ArrayAssignment", "arr=(a b c); echo ${arr[0]}", {{"arr="}, {"echo", "${arr[0]}"}}},
        SplitCase{"Heredoc", "cat <<EOF\nrm -rf /\nEOF\necho after", {{"cat"}, {"echo", "after"}}},
        SplitCase{"HeredocStripTabs", "cat <<-'END' > out\n\tcurl x\n\tEND\nls", {{"cat"}, {"ls"}}},
        SplitCase{"HereString", "grep x <<< \"$data\"", {{"grep", "x"}}},
        SplitCase{"Comment", "echo a # rm -rf / ; curl x\nls", {{"echo", "a"}, {"ls"}}},
        SplitCase{"HashInsideWord", "echo a#b", {{"echo", "a#b"}}},
        SplitCase{"Negation", "! grep -q x f", {{"grep", "-q", "x", "f"}}},
        SplitCase{
            "DoubleBracketTest",
            "[[ -f a && ( b || c < d ) ]] && echo y",
            {{"[[", "-f", "a", "&&", "(", "b", "||", "c", "<", "d", ")", "]]"}, {"echo", "y"}}},
        SplitCase{"ArithmeticCommand", "((i < 3)) && ls", {{"ls"}}}));

TEST(ShellParseTest, Redirections) {
    const ShellParse parse =
        parse_shell("cmd > out 2>&1 >> log < in 2> err &> both >| clobber <> rw >&file 3>&-");
    ASSERT_TRUE(parse.ok) << parse.error;
    ASSERT_EQ(parse.commands.size(), 1U);
    std::vector<std::string> seen;
    for (const Redirection& r : parse.commands[0].redirections) {
        seen.push_back(
            fmt::format("{}{}{}", r.fd >= 0 ? std::to_string(r.fd) : "", r.op, r.target.text));
    }
    EXPECT_EQ(seen, (std::vector<std::string>{">out", ">>log", "<in", "2>err", "&>both",
                                              ">|clobber", "<>rw", ">&file"}));
    EXPECT_EQ(parse.commands[0].words.size(), 1U);
}

TEST(ShellParseTest, WordFlags) {
    const ShellParse parse = parse_shell("FOO=1 \"BAR\"=2 cmd ~/x '~/y' $HOME/z");
    ASSERT_TRUE(parse.ok);
    const std::vector<ShellWord>& w = parse.commands.at(0).words;
    ASSERT_EQ(w.size(), 6U);
    EXPECT_TRUE(w[0].assignment);
    EXPECT_FALSE(w[1].assignment);  // a quoted name is a word, not an assignment
    EXPECT_TRUE(w[3].tilde);
    EXPECT_FALSE(w[4].tilde);
    EXPECT_TRUE(w[4].quoted);
    EXPECT_TRUE(w[5].expands);
    EXPECT_EQ(w[5].text, "$HOME/z");
}

TEST(ShellParseTest, KeepsTheSourceOfEachCommand) {
    const ShellParse parse = parse_shell("  npm test  &&\tcurl x ; ");
    ASSERT_TRUE(parse.ok);
    ASSERT_EQ(parse.commands.size(), 2U);
    EXPECT_EQ(parse.commands[0].source, "npm test");
    EXPECT_EQ(parse.commands[1].source, "curl x");
}

struct BadCase {
    const char* text;
    const char* error;
};

class ShellParseErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ShellParseErrorTest, ReportsWhy) {
    const ShellParse parse = parse_shell(GetParam().text);
    EXPECT_FALSE(parse.ok);
    EXPECT_TRUE(parse.commands.empty());
    EXPECT_THAT(parse.error, HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(Unreadable, ShellParseErrorTest,
                         ::testing::Values(BadCase{"echo 'x", "unterminated single quote"},
                                           BadCase{"echo \"x", "unterminated double quote"},
                                           BadCase{"echo $'x", "unterminated $'"},
                                           BadCase{"echo `x", "unterminated backquote"},
                                           BadCase{"echo $(ls", "a \")\" is missing"},
                                           BadCase{"(ls", "a \")\" is missing"},
                                           BadCase{"ls)", "\")\" without \"(\""},
                                           BadCase{"echo ${x", "unterminated ${"},
                                           BadCase{"echo $((1+2)", "unterminated $(("},
                                           BadCase{"case $x in a) ls;; esac", "case statements"},
                                           BadCase{"ls > ", "a redirection without a target"},
                                           BadCase{"echo a (b)", "unexpected \"(\""}));

TEST(ShellParseTest, DeepNestingIsOpaqueNotACrash) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
        text += "$(";
    }
    text += "ls";
    for (int i = 0; i < 200; ++i) {
        text += ")";
    }
    const ShellParse parse = parse_shell(text);
    EXPECT_FALSE(parse.ok);
    EXPECT_THAT(parse.error, HasSubstr("nested too deeply"));
    std::string braces;
    for (int i = 0; i < 100000; ++i) {
        braces += "\"${";
    }
    EXPECT_THAT(parse_shell(braces).error, HasSubstr("nested too deeply"));
}

}  // namespace
}  // namespace stockade::policy
