#include "tools/edit_cascade.h"

#include <string>

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

EditOutcome edit(std::string_view file, std::string_view old_s, std::string_view new_s,
                 bool replace_all = false) {
    return apply_edit(
        {.file = file, .old_string = old_s, .new_string = new_s, .replace_all = replace_all});
}

const EditApplied& applied(const EditOutcome& o) {
    static const EditApplied kNone{};
    if (const auto* f = std::get_if<EditFailure>(&o)) {
        ADD_FAILURE() << "edit failed, kind " << static_cast<int>(f->kind) << ", strategy "
                      << strategy_name(f->strategy);
        return kNone;
    }
    return std::get<EditApplied>(o);
}

const EditFailure& failed(const EditOutcome& o) {
    static const EditFailure kNone{};
    if (const auto* a = std::get_if<EditApplied>(&o)) {
        ADD_FAILURE() << "edit succeeded with " << strategy_name(a->strategy) << ": " << a->content;
        return kNone;
    }
    return std::get<EditFailure>(o);
}

// ---- One fixture per strategy ------------------------------------------------------------

TEST(EditCascadeTest, Strategy1ExactReplacesTheVerbatimText) {
    const auto o = edit("a\nb\nc\n", "b", "B");
    EXPECT_EQ(applied(o).content, "a\nB\nc\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kExact);
    EXPECT_EQ(applied(o).replacements, 1U);
    EXPECT_EQ(applied(o).new_first_line, 2U);
    EXPECT_EQ(applied(o).new_last_line, 2U);
}

TEST(EditCascadeTest, Strategy2LineTrimmedIgnoresTrailingWhitespaceAndReplacesWholeLines) {
    const auto o =
        edit("int x = 1;   \nint y = 2;\n", "int x = 1;\nint y = 2;", "int x = 10;\nint y = 2;");
    EXPECT_EQ(applied(o).content, "int x = 10;\nint y = 2;\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kLineTrimmed);
}

TEST(EditCascadeTest, Strategy2LineTrimmedWithUnevenIndentationIsNotReindented) {
    const auto o = edit("    a();\n  b();\n", "  a();\n    b();", "  a2();\n    b();");
    EXPECT_EQ(applied(o).strategy, Strategy::kLineTrimmed);
    EXPECT_FALSE(applied(o).reindented);
    EXPECT_EQ(applied(o).content, "  a2();\n    b();\n");
}

TEST(EditCascadeTest, Strategy3WhitespaceNormalizedWithinALineKeepsTheIndentation) {
    const auto o = edit("    int  x =  1;\n", "int x = 1;", "int x = 2;");
    EXPECT_EQ(applied(o).content, "    int x = 2;\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kWhitespaceNormalized);
}

TEST(EditCascadeTest, Strategy3WhitespaceNormalizedAcrossLines) {
    const auto o = edit("if (a  &&  b) {\n    go();\n}\n", "if (a && b) {\n    go();\n}",
                        "if (a && b) {\n    stop();\n}");
    EXPECT_EQ(applied(o).content, "if (a && b) {\n    stop();\n}\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kWhitespaceNormalized);
}

constexpr std::string_view kPython =
    "class A:\n"
    "    def f(self):\n"
    "        return 1\n"
    "\n"
    "    def g(self):\n"
    "        return 2\n";

TEST(EditCascadeTest, Strategy4IndentationRuleShiftsNewStringQuotedAtTheWrongDepth) {
    // Quoted at depth 0, the file has it at depth 4: new_string (also at depth 0) is shifted.
    const auto o = edit(kPython, "def f(self):\n    return 1", "def f(self):\n    return 42");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(
        applied(o).content,
        "class A:\n    def f(self):\n        return 42\n\n    def g(self):\n        return 2\n");
}

TEST(EditCascadeTest, Strategy4IndentationRuleKeepsNewStringAlreadyAtTheFilesDepth) {
    const auto o =
        edit(kPython, "def f(self):\n    return 1", "    def f(self):\n        return 42");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_FALSE(applied(o).reindented);
    EXPECT_EQ(
        applied(o).content,
        "class A:\n    def f(self):\n        return 42\n\n    def g(self):\n        return 2\n");
}

TEST(EditCascadeTest, Strategy4IndentationRuleShiftsLeftWhenQuotedTooDeep) {
    const auto o = edit("def f():\n    return 1\n", "    def f():\n        return 1",
                        "    def f():\n        return 2\n        # done");
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content, "def f():\n    return 2\n    # done\n");
}

TEST(EditCascadeTest, Strategy4IndentationRuleLeavesBlankLinesAlone) {
    const auto o = edit(kPython, "def g(self):\n    return 2\n", "def g(self):\n\n    return 3\n");
    EXPECT_EQ(
        applied(o).content,
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n\n        return 3\n");
}

TEST(EditCascadeTest, Strategy5EscapeNormalizedUnescapesBothStrings) {
    const auto o = edit("print(\"hi\")\nx = 'a'\n", "print(\\\"hi\\\")\\nx = 'a'",
                        "print(\\\"bye\\\")\\nx = 'a'");
    EXPECT_EQ(applied(o).content, "print(\"bye\")\nx = 'a'\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kEscapeNormalized);
}

TEST(EditCascadeTest, Strategy6TrimmedBoundaryPreservesTheFilesSurroundings) {
    const auto o = edit("x = foo(a,\n        b) + 1\n", "\n  foo(a,\n        b)  \n",
                        "\n  bar(a,\n        b)  \n");
    EXPECT_EQ(applied(o).content, "x = bar(a,\n        b) + 1\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kTrimmedBoundary);
}

constexpr std::string_view kTotal =
    "// totals\n"
    "function total(items) {\n"
    "  let sum = 0;\n"
    "  for (const item of items) sum += item.price;\n"
    "  return sum;\n"
    "}\n";

TEST(EditCascadeTest, Strategy7BlockAnchorMatchesSimilarMiddleLines) {
    const auto o =
        edit(kTotal,
             "function total(items) {\n  let sum = 0;\n  for (const it of items) sum += "
             "it.price;\n  return sum;\n}",
             "function total(items) {\n  return items.reduce((s, i) => s + i.price, 0);\n}");
    EXPECT_EQ(applied(o).strategy, Strategy::kBlockAnchor);
    EXPECT_EQ(applied(o).content,
              "// totals\nfunction total(items) {\n  return items.reduce((s, i) => s + i.price, "
              "0);\n}\n");
    EXPECT_EQ(applied(o).old_first_line, 2U);
    EXPECT_EQ(applied(o).old_last_line, 6U);
}

constexpr std::string_view kGreek =
    "begin\n"
    "  alpha = 1\n"
    "  beta = 2\n"
    "  gamma = 3\n"
    "  delta = 4\n"
    "end\n";

TEST(EditCascadeTest, Strategy8ContextAwareNeedsHalfTheMiddleLines) {
    const auto o =
        edit(kGreek, "begin\n  alpha = 1\n  beta = 2\n  QQQQQQQQQQQQQ\n  ZZZZZZZZZZZZZ\nend",
             "begin\nend");
    EXPECT_EQ(applied(o).strategy, Strategy::kContextAware);
    EXPECT_EQ(applied(o).content, "begin\nend\n");
}

TEST(EditCascadeTest, Strategy8RefusesWhenFewerThanHalfTheMiddleLinesMatch) {
    const auto o =
        edit(kGreek, "begin\n  alpha = 1\n  QQQQQQQQQ\n  RRRRRRRRR\n  ZZZZZZZZZ\nend", "x");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNotFound);
}

TEST(EditCascadeTest, Strategy9MultiOccurrenceReplacesEveryExactOccurrence) {
    const auto o = edit("foo bar\nfoo baz\nfoo\n", "foo", "qux", true);
    EXPECT_EQ(applied(o).content, "qux bar\nqux baz\nqux\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kMultiOccurrence);
    EXPECT_EQ(applied(o).replacements, 3U);
    EXPECT_EQ(applied(o).new_first_line, 1U);
}

// ---- Order: a near-exact whitespace match never loses to a fuzzy anchor match ------------

TEST(EditCascadeTest, CheapNormalisationsRunBeforeFuzzyBlocks) {
    // Both line-trimmed and block-anchor would accept this; line-trimmed must win.
    const auto o = edit("start\n  one  \n  two\nend\n", "start\n  one\n  two\nend", "start\nend");
    EXPECT_EQ(applied(o).strategy, Strategy::kLineTrimmed);
}

// ---- Guards --------------------------------------------------------------------------------

TEST(EditCascadeTest, AmbiguousExactMatchReportsEveryLine) {
    const auto o = edit("x = 1\ny = 2\nx = 1\nz\nx = 1\n", "x = 1", "x = 9");
    const EditFailure& f = failed(o);
    EXPECT_EQ(f.kind, EditFailureKind::kAmbiguous);
    EXPECT_EQ(f.strategy, Strategy::kExact);
    EXPECT_EQ(f.locations, 3U);
    EXPECT_EQ(f.lines, (std::vector<size_t>{1, 3, 5}));
}

TEST(EditCascadeTest, OverlappingOccurrencesAreAmbiguous) {
    const auto o = edit("aaa\n", "aa", "b");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kAmbiguous);
    EXPECT_EQ(failed(o).locations, 2U);
    EXPECT_EQ(failed(o).lines, (std::vector<size_t>{1}));
}

TEST(EditCascadeTest, AmbiguousFuzzyMatchIsRefusedToo) {
    const auto o = edit("  f();\nx\n\tf();\n", "f(); ", "g();");
    const EditFailure& f = failed(o);
    EXPECT_EQ(f.kind, EditFailureKind::kAmbiguous);
    EXPECT_EQ(f.strategy, Strategy::kLineTrimmed);
    EXPECT_EQ(f.lines, (std::vector<size_t>{1, 3}));
}

TEST(EditCascadeTest, DisproportionateFuzzyMatchIsRefused) {
    const std::string file = "start\n  one\n  " + std::string(2000, 'x') + "\nend\n";
    const auto o = edit(file, "start\n  one\n  two\nend", "start\nend");
    const EditFailure& f = failed(o);
    EXPECT_EQ(f.kind, EditFailureKind::kDisproportionate);
    EXPECT_EQ(f.strategy, Strategy::kContextAware);
    EXPECT_EQ(f.first_line, 1U);
    EXPECT_EQ(f.last_line, 4U);
    EXPECT_GT(f.candidate_chars, 2000U);
}

TEST(EditCascadeTest, ReplaceAllWithZeroExactMatchesNeverFallsBackToFuzzy) {
    const auto o = edit("  foo();\n  foo();\n", "foo();  ", "bar();", true);
    const EditFailure& f = failed(o);
    EXPECT_EQ(f.kind, EditFailureKind::kNotFound);
    EXPECT_EQ(f.strategy, Strategy::kMultiOccurrence);
}

TEST(EditCascadeTest, IdenticalStringsAreRefused) {
    EXPECT_EQ(failed(edit("abc", "b", "b")).kind, EditFailureKind::kIdentical);
}

TEST(EditCascadeTest, EmptyOldStringIsRefused) {
    EXPECT_EQ(failed(edit("abc", "", "x")).kind, EditFailureKind::kEmptyOldString);
    EXPECT_EQ(failed(edit("", "", "x")).kind, EditFailureKind::kEmptyOldString);
}

TEST(EditCascadeTest, ToleratedMatchThatAlreadyEqualsNewStringIsNoChange) {
    const auto o = edit("x  =  1\n", "x = 1", "x  =  1");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNoChange);
    EXPECT_EQ(failed(o).first_line, 1U);
}

// ---- Line endings and BOM ------------------------------------------------------------------

TEST(EditCascadeTest, CrlfFileStaysCrlf) {
    const auto o = edit("a\r\nb\r\nc\r\n", "b", "B\nB2");
    EXPECT_EQ(applied(o).content, "a\r\nB\r\nB2\r\nc\r\n");
    EXPECT_EQ(applied(o).new_first_line, 2U);
    EXPECT_EQ(applied(o).new_last_line, 3U);
}

TEST(EditCascadeTest, CrlfInTheModelsStringsMatchesACrlfFile) {
    const auto o = edit("a\r\nb\r\nc\r\n", "a\r\nb", "x\r\ny");
    EXPECT_EQ(applied(o).content, "x\r\ny\r\nc\r\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kExact);
}

TEST(EditCascadeTest, BomIsSplitOffAndRejoined) {
    const auto o = edit("\xEF\xBB\xBFhello\nworld\n", "hello", "hi");
    EXPECT_EQ(applied(o).content, "\xEF\xBB\xBFhi\nworld\n");
    const auto crlf = edit(
        "\xEF\xBB\xBF"
        "a\r\nb\r\n",
        "a\nb", "c\nd");
    EXPECT_EQ(applied(crlf).content,
              "\xEF\xBB\xBF"
              "c\r\nd\r\n");
}

TEST(EditCascadeTest, MixedLineEndingsAreLeftAsTheyAre) {
    const auto o = edit("a\r\nb\nc\n", "b", "B");
    EXPECT_EQ(applied(o).content, "a\r\nB\nc\n");
}

// ---- Near-miss -----------------------------------------------------------------------------

TEST(EditCascadeTest, NearMissIsTheBestAnchorBlockBelowTheThreshold) {
    // The middle lines are 60% similar: below block-anchor's 0.65.
    const auto o = edit("fn main() {\n    a+b\n}\n", "fn main() {\n    a + b\n}", "x");
    const EditFailure& f = failed(o);
    ASSERT_EQ(f.kind, EditFailureKind::kNotFound);
    ASSERT_TRUE(f.near_miss.has_value());
    EXPECT_EQ(f.near_miss->first_line, 1U);
    EXPECT_EQ(f.near_miss->last_line, 3U);
    EXPECT_EQ(f.near_miss->line, 2U);
    EXPECT_TRUE(f.near_miss->whitespace_only);
    EXPECT_EQ(f.near_miss->expected, "    a + b");
    EXPECT_EQ(f.near_miss->actual, "    a+b");
}

TEST(EditCascadeTest, NearMissFindsAOneLineTypo) {
    const auto o = edit("int a;\nconst budget = 5;\nint b;\n", "const budgt = 5;", "x");
    const EditFailure& f = failed(o);
    ASSERT_TRUE(f.near_miss.has_value());
    EXPECT_EQ(f.near_miss->line, 2U);
    EXPECT_FALSE(f.near_miss->whitespace_only);
}

TEST(EditCascadeTest, NoNearMissWhenNothingIsClose) {
    const auto o = edit("alpha\nbeta\n", "completely different text", "x");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNotFound);
    EXPECT_FALSE(failed(o).near_miss.has_value());
}

TEST(EditCascadeTest, DeletionReportsTheLineWhereTheTextWas) {
    const auto o = edit("a\nb\nc\n", "b\n", "");
    EXPECT_EQ(applied(o).content, "a\nc\n");
    EXPECT_EQ(applied(o).new_first_line, 2U);
    EXPECT_EQ(applied(o).new_last_line, 2U);
}

TEST(EditCascadeTest, StrategyNamesAreStable) {
    EXPECT_EQ(strategy_name(Strategy::kExact), "exact");
    EXPECT_EQ(strategy_name(Strategy::kIndentationFlexible), "indentation-flexible");
    EXPECT_EQ(strategy_name(Strategy::kMultiOccurrence), "multi-occurrence");
    EXPECT_EQ(strategy_phrase(Strategy::kWhitespaceNormalized),
              "matched with whitespace normalization");
}

}  // namespace
}  // namespace stockade::tools
