#include "tools/edit_cascade.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/text.h"

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

TEST(EditCascadeTest, Strategy2LineTrimmedWithUnevenIndentationIsReindentedLineByLine) {
    // Not one uniform shift: each new_string line takes the file's indentation of the old_string
    // line at its depth.
    const auto o = edit("    a();\n  b();\n", "  a();\n    b();", "  a2();\n    b();");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content, "    a2();\n  b();\n");
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

TEST(EditCascadeTest, Strategy3WhitespaceNormalizedAcrossAMovedLineBreak) {
    // Same tokens and gaps, the line break moved from after "&&" to before it; two lines each.
    const std::string_view c =
        "void f() {\n"
        "    if (ready\n"
        "        && armed) {\n"
        "        fire();\n"
        "    }\n"
        "}\n";
    const auto o = edit(c, "if (ready &&\n    armed) {", "if (ready &&\n    armed && !safe) {");
    EXPECT_EQ(applied(o).strategy, Strategy::kWhitespaceNormalized);
    EXPECT_EQ(applied(o).old_first_line, 2U);
    EXPECT_EQ(applied(o).old_last_line, 3U);
    // The window is replaced whole, shifted to the file's depth (the first lines correspond).
    EXPECT_EQ(applied(o).content,
              "void f() {\n"
              "    if (ready &&\n"
              "        armed && !safe) {\n"
              "        fire();\n"
              "    }\n"
              "}\n");
}

TEST(EditCascadeTest, Strategy3MovedLineBreakNeedsAGapOnBothSides) {
    // old_string has no whitespace between "b" and ")", the file has a line break there.
    const auto o = edit("x = foo(a, b\n)\n", "x = foo(a,\n    b)", "x = foo(a, c)");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNotFound);
}

TEST(EditCascadeTest, Strategy3MovedLineBreakNeedsTheSameNumberOfLines) {
    const auto o = edit("call(a, b, c)\nnext()\n", "call(a,\n  b, c)", "call(a, b)");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNotFound);
}

TEST(EditCascadeTest, Strategy3MovedLineBreakMatchesMustBeUnique) {
    const auto o = edit("f(a\n  , b)\nx\nf(a\n, b)\n", "f(a ,\n b)", "g()");
    const EditFailure& f = failed(o);
    EXPECT_EQ(f.kind, EditFailureKind::kAmbiguous);
    EXPECT_EQ(f.strategy, Strategy::kWhitespaceNormalized);
    EXPECT_EQ(f.lines, (std::vector<size_t>{1, 4}));
}

TEST(EditCascadeTest, Strategy3LineByLineMatchWinsOverAMovedLineBreak) {
    // Lines 1-2 match line by line, lines 3-4 only across a moved break: no ambiguity.
    const auto o = edit("a  b\nc\na\nb c\n", "a b\nc", "x\ny");
    EXPECT_EQ(applied(o).strategy, Strategy::kWhitespaceNormalized);
    EXPECT_EQ(applied(o).content, "x\ny\na\nb c\n");
}

TEST(EditCascadeTest, Strategy3MovedLineBreakDoesNotStretchOverABlankLine) {
    const auto o = edit("a\nb\n\n", "a\n\nb", "x");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kNotFound);
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

// ---- Re-indentation: indentation that is not one uniform shift (issue 9) ------------------

std::string quote_for_test(std::string_view s) {
    return quote(s);
}

// The leading whitespace of every line of `text`.
std::vector<std::string> indentations(std::string_view text) {
    std::vector<std::string> out;
    for (std::string_view line : split_lines(text)) {
        out.emplace_back(indentation(line));
    }
    return out;
}

constexpr std::string_view kLoad =
    "import json\n"
    "\n"
    "def load(path):\n"
    "    with open(path) as f:\n"
    "        data = f.read()\n"
    "    return json.loads(data)\n";

TEST(EditCascadeTest, PythonBlockQuotedWithPerLineDriftIsWrittenWithTheFilesIndentation) {
    // The model's indentation drifts line by line (0, 2, 6, 3): splicing it in would make the
    // module fail to import with an IndentationError.
    const auto o = edit(kLoad,
                        "def load(path):\n"
                        "  with open(path) as f:\n"
                        "      data = f.read()\n"
                        "   return json.loads(data)",
                        "def load(path):\n"
                        "  with open(path) as f:\n"
                        "      data = f.read()\n"
                        "      data = data.strip()\n"
                        "   return json.loads(data)");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "import json\n"
              "\n"
              "def load(path):\n"
              "    with open(path) as f:\n"
              "        data = f.read()\n"
              "        data = data.strip()\n"
              "    return json.loads(data)\n");
    EXPECT_EQ(indentations(applied(o).content),
              (std::vector<std::string>{"", "", "", "    ", "        ", "        ", "    "}));
}

TEST(EditCascadeTest, TabsSentForATwoSpaceFileAreWrittenAsTwoSpaces) {
    const std::string_view yaml =
        "jobs:\n"
        "  build:\n"
        "    runs-on: ubuntu\n"
        "    steps:\n"
        "      - run: make\n";
    const auto o = edit(yaml, "\tbuild:\n\t\truns-on: ubuntu\n\t\tsteps:\n\t\t\t- run: make",
                        "\tbuild:\n\t\truns-on: ubuntu\n\t\tsteps:\n\t\t\t- run: make\n"
                        "\t\t\t- run: make test\n\t\t\t\tenv: ci");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "jobs:\n"
              "  build:\n"
              "    runs-on: ubuntu\n"
              "    steps:\n"
              "      - run: make\n"
              "      - run: make test\n"
              "        env: ci\n");
    EXPECT_EQ(applied(o).content.find('\t'), std::string::npos);
}

constexpr std::string_view kGo =
    "func run() error {\n"
    "\tif err := setup(); err != nil {\n"
    "\t\treturn err\n"
    "\t}\n"
    "\treturn nil\n"
    "}\n";

TEST(EditCascadeTest, SpacesSentForATabIndentedGoFileAreWrittenAsTabs) {
    const auto o = edit(kGo,
                        "    if err := setup(); err != nil {\n"
                        "        return err\n"
                        "    }",
                        "    if err := setup(); err != nil {\n"
                        "        log.Print(err)\n"
                        "        if retry {\n"
                        "            return setup()\n"
                        "        }\n"
                        "        return err\n"
                        "    }");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "func run() error {\n"
              "\tif err := setup(); err != nil {\n"
              "\t\tlog.Print(err)\n"
              "\t\tif retry {\n"
              "\t\t\treturn setup()\n"
              "\t\t}\n"
              "\t\treturn err\n"
              "\t}\n"
              "\treturn nil\n"
              "}\n");
}

TEST(EditCascadeTest, SpacesSentForAMakefileRecipeAreWrittenAsTabs) {
    const auto o = edit("all: test\n\ntest:\n\tgo build ./...\n\tgo test ./...\n",
                        "test:\n    go build ./...\n    go test ./...",
                        "test:\n    go vet ./...\n    go build ./...\n    go test ./...");
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "all: test\n\ntest:\n\tgo vet ./...\n\tgo build ./...\n\tgo test ./...\n");
}

TEST(EditCascadeTest, MixedTabsAndSpacesInTheFileAreFollowedLineByLine) {
    // The file indents with a tab, then a tab and four spaces; the model quoted it with spaces.
    const std::string_view c =
        "int main() {\n"
        "\tif (ready) {\n"
        "\t    start();\n"
        "\t}\n"
        "}\n";
    const auto o = edit(c, "    if (ready) {\n        start();\n    }",
                        "    if (ready) {\n        start();\n        if (slow) {\n"
                        "            wait();\n        }\n    }");
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "int main() {\n"
              "\tif (ready) {\n"
              "\t    start();\n"
              "\t    if (slow) {\n"
              "\t        wait();\n"
              "\t    }\n"
              "\t}\n"
              "}\n");
}

TEST(EditCascadeTest, NestedBlockGainsADeeperLineByTheFilesIndentUnit) {
    // The model indents by 2, the file by 4: a line two model units deeper than "if x:" goes
    // two file units deeper.
    const std::string_view py =
        "class A:\n"
        "    def f(self, x):\n"
        "        if x:\n"
        "            return 1\n"
        "        return 0\n";
    const auto o = edit(py, "  def f(self, x):\n    if x:\n      return 1\n    return 0",
                        "  def f(self, x):\n    if x:\n      for y in x:\n        if y:\n"
                        "          return y\n      return 1\n    return 0");
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "class A:\n"
              "    def f(self, x):\n"
              "        if x:\n"
              "            for y in x:\n"
              "                if y:\n"
              "                    return y\n"
              "            return 1\n"
              "        return 0\n");
}

TEST(EditCascadeTest, ShallowerLineIsPlacedByTheFilesIndentUnit) {
    // One model unit (a tab) shallower than the quoted line: one file unit (four spaces, the
    // whole file's step; the one-line block has none) shallower than its file line.
    const auto o = edit(kLoad, "\t\tdata = f.read()", "\t\tdata = f.read()\n\tf.close()");
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "import json\n\ndef load(path):\n    with open(path) as f:\n"
              "        data = f.read()\n    f.close()\n    return json.loads(data)\n");
}

TEST(EditCascadeTest, NewStringAlreadyInTheFilesIndentationIsInsertedAsWritten) {
    // old_string drifted, but new_string's unchanged lines carry the file's indentation.
    const auto o = edit(kLoad,
                        "def load(path):\n"
                        "  with open(path) as f:\n"
                        "      data = f.read()\n"
                        "   return json.loads(data)",
                        "def load(path):\n"
                        "    with open(path) as f:\n"
                        "        data = f.read()\n"
                        "    return json.loads(data or '{}')");
    EXPECT_FALSE(applied(o).reindented);
    EXPECT_EQ(applied(o).content,
              "import json\n\ndef load(path):\n    with open(path) as f:\n"
              "        data = f.read()\n    return json.loads(data or '{}')\n");
}

TEST(EditCascadeTest, ReindentationThatCannotBeDoneIsRefusedWithTheFilesIndentation) {
    // new_string adds a line 6 spaces deep, between the model's 4-space levels: it has no
    // place among the file's tab levels.
    const auto o = edit(kGo, "    if err := setup(); err != nil {\n        return err\n    }",
                        "    if err := setup(); err != nil {\n        return wrap(err,\n"
                        "      \"setup\")\n    }");
    const EditFailure& f = failed(o);
    ASSERT_EQ(f.kind, EditFailureKind::kIndentation);
    EXPECT_EQ(f.strategy, Strategy::kIndentationFlexible);
    EXPECT_EQ(f.first_line, 2U);
    EXPECT_EQ(f.last_line, 4U);
    ASSERT_TRUE(f.indentation.has_value());
    EXPECT_EQ(f.indentation->line, 2U);
    EXPECT_EQ(f.indentation->file_line, "\tif err := setup(); err != nil {");
    EXPECT_EQ(f.indentation->model_line, "    if err := setup(); err != nil {");
    EXPECT_FALSE(f.indentation->in_new_string);
}

TEST(EditCascadeTest, TabInNewStringForASpaceFileIsRefusedAfterATolerantMatch) {
    // old_string's indentation is right (only trailing whitespace differs), but new_string
    // brings a tab into a file indented with spaces.
    const auto o =
        edit("def f():\n    a = 1  \n    b = 2\n", "    a = 1\n    b = 2", "    a = 1\n\tb = 3");
    const EditFailure& f = failed(o);
    ASSERT_EQ(f.kind, EditFailureKind::kIndentation);
    ASSERT_TRUE(f.indentation.has_value());
    EXPECT_TRUE(f.indentation->in_new_string);
    EXPECT_EQ(f.indentation->model_line, "\tb = 3");
    EXPECT_EQ(f.indentation->line, 2U);
    EXPECT_EQ(f.indentation->file_line, "    a = 1  ");
}

TEST(EditCascadeTest, ExactMatchKeepsNewStringAsWritten) {
    // Only tolerant matches are re-indented: an exact quote means the model saw the file.
    const auto o = edit("def f():\n    a = 1\n", "    a = 1", "    a = 1\n\tb = 2");
    EXPECT_EQ(applied(o).strategy, Strategy::kExact);
    EXPECT_EQ(applied(o).content, "def f():\n    a = 1\n\tb = 2\n");
}

TEST(EditCascadeTest, BlockAnchorMatchIsReindentedFromItsAnchors) {
    const std::string_view js =
        "function total(items) {\n"
        "\tlet sum = 0;\n"
        "\tfor (const item of items) sum += item.price;\n"
        "\treturn sum;\n"
        "}\n";
    const auto o = edit(js,
                        "  function total(items) {\n    let sum = 0;\n    for (const it of items) "
                        "sum += it.price;\n    return sum;\n  }",
                        "  function total(items) {\n    return items.reduce((s, i) => s + "
                        "i.price, 0);\n  }");
    EXPECT_EQ(applied(o).strategy, Strategy::kBlockAnchor);
    EXPECT_EQ(applied(o).content,
              "function total(items) {\n\treturn items.reduce((s, i) => s + i.price, 0);\n}\n");
}

TEST(EditCascadeTest, WhitespaceNormalizedWithinALineIndentsNewStringsFollowingLines) {
    const auto o = edit("def f():\n    x  =  1\n", "x = 1", "x = 1\ny = 2");
    EXPECT_EQ(applied(o).strategy, Strategy::kWhitespaceNormalized);
    EXPECT_TRUE(applied(o).reindented);
    EXPECT_EQ(applied(o).content, "def f():\n    x = 1\n    y = 2\n");
}

TEST(EditCascadeTest, TrimmedBoundaryMatchIndentsNewStringsFollowingLines) {
    const auto o = edit("if x:\n\tcall(a,\n\t     b)\n", "\n  call(a,\n\t     b)\n",
                        "\n  call(a,\n\t     b)\n  done()\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kTrimmedBoundary);
    EXPECT_EQ(applied(o).content, "if x:\n\tcall(a,\n\t     b)\n\tdone()\n");
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

// ---- Property: a tolerant edit writes only the file's indentation ------------------------

struct Style {
    std::string base;  // in front of every line
    std::string unit;  // one level
};

struct Line {
    size_t level = 0;
    std::string text;
    std::string drift{};  // the model's extra spaces on this line
};

std::string indent_of(const Style& s, size_t level) {
    std::string out = s.base;
    for (size_t i = 0; i < level; ++i) {
        out += s.unit;
    }
    return out;
}

enum class Quote : uint8_t {
    kClean,  // the model uses one style of its own throughout
    kDrift,  // the same, with an extra space on some lines
    kChaos,  // any whitespace on any line
};

TEST(EditCascadeTest, PropertyTolerantEditsWriteOnlyTheFilesIndentation) {
    const std::vector<Style> file_styles = {
        {"", "\t"}, {"", "  "}, {"", "    "}, {"    ", "    "}, {"\t", "\t"}};
    const std::vector<Style> model_styles = {{"", "\t"},  {"", "  "},   {"", "    "},
                                             {"", "   "}, {"  ", "  "}, {"\t\t", "\t"}};
    const std::vector<std::string> chaos = {"", "\t", "  ", "    ", "\t  ", " \t", "\t\t", "   "};
    std::mt19937 rng(9);
    size_t tolerant = 0;
    size_t compared = 0;
    for (int round = 0; round < 1500; ++round) {
        const auto quote = static_cast<Quote>(round % 3);
        const Style& fs = file_styles[rng() % file_styles.size()];
        const Style& ms =
            quote == Quote::kDrift ? model_styles[2] : model_styles[rng() % model_styles.size()];
        // A nested structure: each line at most one level deeper than the one before.
        std::vector<Line> lines;
        size_t level = 0;
        for (size_t i = 0, n = 6 + rng() % 10; i < n; ++i) {
            lines.push_back({level, "stmt_" + std::to_string(i)});
            const auto r = rng() % 3;
            level = r == 0 ? level + 1 : r == 1 ? level : (level > 0 ? level - 1 : 0);
        }
        // The block: lines from `first` that stay at or below its level, 2 to 5 of them.
        const size_t first = rng() % (lines.size() - 1);
        const size_t min_level = lines[first].level;
        size_t last = first;
        const size_t want = 2 + rng() % 4;
        while (last + 1 < lines.size() && last + 1 - first < want &&
               lines[last + 1].level >= min_level) {
            ++last;
        }
        if (last == first) {
            continue;
        }
        std::vector<Line> old_block(lines.begin() + static_cast<std::ptrdiff_t>(first),
                                    lines.begin() + static_cast<std::ptrdiff_t>(last) + 1);
        if (quote == Quote::kDrift) {
            for (Line& l : old_block) {
                l.drift = rng() % 2 == 0 ? " " : "";
            }
        }
        // The edit: one line's text changed, one line inserted after another, at that line's
        // level or one deeper (drift: a level the block already has, with its drift).
        std::vector<Line> new_block = old_block;
        new_block[rng() % new_block.size()].text += "_changed";
        const size_t after = rng() % new_block.size();
        Line inserted{new_block[after].level + rng() % 2, "inserted"};
        if (quote == Quote::kDrift) {
            const auto same = std::find_if(old_block.begin(), old_block.end(), [&](const Line& l) {
                return l.level == inserted.level;
            });
            inserted = same == old_block.end()
                           ? Line{new_block[after].level, "inserted", new_block[after].drift}
                           : Line{same->level, "inserted", same->drift};
        }
        new_block.insert(new_block.begin() + static_cast<std::ptrdiff_t>(after) + 1, inserted);

        auto model_text = [&](const std::vector<Line>& block) {
            std::string out;
            for (const Line& l : block) {
                if (!out.empty()) {
                    out += '\n';
                }
                out += quote == Quote::kChaos ? chaos[rng() % chaos.size()]
                                              : indent_of(ms, l.level - min_level) + l.drift;
                out += l.text;
            }
            return out;
        };
        auto file_text = [&](const std::vector<Line>& all) {
            std::string out;
            for (const Line& l : all) {
                out += indent_of(fs, l.level) + l.text + "\n";
            }
            return out;
        };
        std::vector<Line> edited(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(first));
        edited.insert(edited.end(), new_block.begin(), new_block.end());
        edited.insert(edited.end(), lines.begin() + static_cast<std::ptrdiff_t>(last) + 1,
                      lines.end());
        const std::string file = file_text(lines);
        const std::string old_s = model_text(old_block);
        const std::string new_s = model_text(new_block);
        const auto o = edit(file, old_s, new_s);
        SCOPED_TRACE(::testing::Message() << "file:\n"
                                          << file << "old_string:\n"
                                          << old_s << "\nnew_string:\n"
                                          << new_s);

        const auto* ok = std::get_if<EditApplied>(&o);
        if (quote != Quote::kChaos) {
            ASSERT_NE(ok, nullptr);
        }
        if (ok == nullptr || ok->strategy == Strategy::kExact) {
            continue;
        }
        ++tolerant;
        const std::vector<std::string_view> written = split_lines(ok->content);
        ASSERT_LE(ok->new_last_line, written.size());
        const char file_char = fs.unit[0];
        // A file indented nowhere has no indent character to keep to.
        const bool indented = std::any_of(lines.begin(), lines.end(), [&](const Line& l) {
            return !indent_of(fs, l.level).empty();
        });
        for (size_t n = ok->new_first_line; indented && n <= ok->new_last_line; ++n) {
            for (char c : indentation(written[n - 1])) {
                EXPECT_EQ(c, file_char) << "line " << n << ": " << quote_for_test(written[n - 1]);
            }
        }
        // Where old_string shows two levels, the structure is the file's, exactly.
        const bool levels = std::any_of(old_block.begin(), old_block.end(),
                                        [&](const Line& l) { return l.level != min_level; });
        if (quote != Quote::kChaos && levels) {
            EXPECT_EQ(ok->content, file_text(edited));
            ++compared;
        }
    }
    // The generator really exercises the rule (796 tolerant edits, 465 compared whole).
    EXPECT_GT(tolerant, 600U);
    EXPECT_GT(compared, 350U);
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

TEST(EditCascadeTest, LineInsertedIntoACrlfDominantMixedFileGetsCrlf) {
    // Three CRLF breaks, one LF: new line breaks are CRLF; the LF line keeps its LF.
    const auto o = edit("a\r\nb\r\nc\r\nd\n", "b", "b\nb2");
    EXPECT_EQ(applied(o).content, "a\r\nb\r\nb2\r\nc\r\nd\n");
    EXPECT_EQ(applied(o).new_first_line, 2U);
    EXPECT_EQ(applied(o).new_last_line, 3U);
}

TEST(EditCascadeTest, LineInsertedIntoAnLfDominantMixedFileGetsLf) {
    const auto o = edit("a\nb\nc\r\nd\n", "c\r\n", "c\r\nc2\r\n");
    EXPECT_EQ(applied(o).content, "a\nb\nc\r\nc2\nd\n");
}

TEST(EditCascadeTest, MixedFileKeepsTheEndingsOfLinesNewStringLeavesAlone) {
    // The replaced block's first and last lines are new_string's too: they keep their endings
    // (LF, CRLF); only the inserted line takes the dominant CRLF.
    const auto o = edit("x\r\ny\nz\r\nw\r\n", "y\nz\n", "y\nY\nz\n");
    EXPECT_EQ(applied(o).content, "x\r\ny\nY\r\nz\r\nw\r\n");
}

TEST(EditCascadeTest, MixedFileWithATieTakesTheFirstLineBreaksEnding) {
    EXPECT_EQ(applied(edit("a\r\nb\nc", "c", "c\nd")).content, "a\r\nb\nc\r\nd");
    EXPECT_EQ(applied(edit("a\nb\r\nc", "c", "c\nd")).content, "a\nb\r\nc\nd");
}

TEST(EditCascadeTest, MixedFileMatchesTheModelsLfAcrossCrlfLines) {
    const auto o = edit("one\r\ntwo\r\nthree\n", "one\ntwo", "1\n2");
    EXPECT_EQ(applied(o).strategy, Strategy::kExact);
    EXPECT_EQ(applied(o).content, "1\r\n2\r\nthree\n");
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

// A changed line takes the indentation of the line it replaces, not of the first line quoted
// alike: in a space-indented script, a <<-EOF here-document's body is indented with tabs (the
// shell strips only tabs), and a line changed there keeps its tab though the model quoted every
// line with spaces.
TEST(EditCascadeTest, AChangedLineInATabIndentedHereDocumentKeepsItsTab) {
    const std::string_view script =
        "deploy() {\n"
        "    if [ -n \"$1\" ]; then\n"
        "        cat <<-EOF\n"
        "\tdeploying $1\n"
        "\tto production\n"
        "\tEOF\n"
        "    fi\n"
        "}\n";
    const auto o = edit(script,
                        "    if [ -n \"$1\" ]; then\n"
                        "        cat <<-EOF\n"
                        "        deploying $1\n",
                        "    if [ -n \"$1\" ]; then\n"
                        "        cat <<-EOF\n"
                        "        deploying $1 now\n");
    EXPECT_EQ(applied(o).strategy, Strategy::kIndentationFlexible);
    EXPECT_EQ(applied(o).content,
              "deploy() {\n"
              "    if [ -n \"$1\" ]; then\n"
              "        cat <<-EOF\n"
              "\tdeploying $1 now\n"
              "\tto production\n"
              "\tEOF\n"
              "    fi\n"
              "}\n");
}

// Where old_string's lines show the model's indent step (lines at two depths of the file), a
// new line at half a step has no depth in the file: refused, never written a level deeper.
TEST(EditCascadeTest, ANewLineAtHalfTheModelsStepIsRefused) {
    const std::string_view go =
        "func run() error {\n"
        "\tif err := setup(); err != nil {\n"
        "\t\treturn err\n"
        "\t}\n"
        "\treturn nil\n"
        "}\n";
    // Quoted with four spaces a level: the if at one level, the return at two.
    const std::string_view quoted =
        "    if err := setup(); err != nil {\n"
        "        return err\n"
        "    }";
    const auto o = edit(go, quoted,
                        "    if err := setup(); err != nil {\n"
                        "      log.Print(err)\n"
                        "        return err\n"
                        "    }");
    EXPECT_EQ(failed(o).kind, EditFailureKind::kIndentation);
    ASSERT_TRUE(failed(o).indentation.has_value());
    EXPECT_EQ(failed(o).indentation->line, 2U);
    EXPECT_EQ(failed(o).indentation->file_line, "\tif err := setup(); err != nil {");
    // A whole step deeper is a level deeper.
    const auto whole = edit(go, quoted,
                            "    if err := setup(); err != nil {\n"
                            "        log.Print(err)\n"
                            "        return err\n"
                            "    }");
    EXPECT_EQ(applied(whole).content,
              "func run() error {\n"
              "\tif err := setup(); err != nil {\n"
              "\t\tlog.Print(err)\n"
              "\t\treturn err\n"
              "\t}\n"
              "\treturn nil\n"
              "}\n");
}

}  // namespace
}  // namespace stockade::tools
