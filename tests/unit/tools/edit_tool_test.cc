#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/tools/tool_harness.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

using testing::expect_golden;
using ::testing::HasSubstr;
using testing::ToolHarness;

std::string numbered(int n) {
    std::string s;
    for (int i = 1; i <= n; ++i) {
        s += "line " + std::to_string(i) + "\n";
    }
    return s;
}

class EditToolTest : public ::testing::Test {
protected:
    void SetUp() override {
        h.ws.put("src/engine.ts", numbered(20));
        ASSERT_FALSE(h.call("read", {{"file_path", "src/engine.ts"}}).is_error);
    }
    ToolResult edit(const std::string& old_s, const std::string& new_s, bool replace_all = false,
                    const std::string& path = "src/engine.ts") {
        return h.call("edit", {{"file_path", path},
                               {"old_string", old_s},
                               {"new_string", new_s},
                               {"replace_all", replace_all}});
    }
    ToolHarness h;
};

TEST_F(EditToolTest, ExactEditAnswersWithASnippetOfFourLinesAround) {
    const ToolResult r = edit("line 10\n", "line ten\nline ten and a half\n");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("edit_success.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Edit src/engine.ts \u00b7 +2 \u22121");
    EXPECT_EQ(r.metadata["strategy"], "exact");
    EXPECT_EQ(r.metadata["replacements"], 1);
    EXPECT_EQ(r.metadata["additions"], 2);
    EXPECT_EQ(r.metadata["deletions"], 1);
    EXPECT_TRUE(r.metadata["diff"].get<std::string>().starts_with(
        "--- a/src/engine.ts\n+++ b/src/engine.ts\n@@ -7,7 +7,8 @@\n"));
    EXPECT_EQ(h.events.log.back(), "modified /work/proj/src/engine.ts");
    EXPECT_EQ(h.events.last["created"], false);
}

// The snippet is cut out of the new file without splitting all of it: at the first line, at
// the last one (no final newline), in a CRLF file, and cut when the region is long.
TEST_F(EditToolTest, TheSnippetShowsTheLinesAroundTheEditAnywhereInTheFile) {
    h.ws.put("src/s.txt", "a\nb\nc\nd\ne\nf\ng\nh");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/s.txt"}}).is_error);
    std::string r = edit("a\n", "A\n", false, "src/s.txt").content;
    EXPECT_THAT(r, HasSubstr(":\n" + number_line(1, "A") + "\n" + number_line(2, "b")));
    EXPECT_THAT(r, HasSubstr(number_line(5, "e") + "\nReview"));
    r = edit("\nh", "\nH", false, "src/s.txt").content;
    EXPECT_THAT(r, HasSubstr(":\n" + number_line(3, "c") + "\n"));  // the match starts on 7
    EXPECT_THAT(r, HasSubstr(number_line(8, "H") + "\nReview"));

    h.ws.put("src/crlf.txt", "one\r\ntwo\r\nthree\r\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/crlf.txt"}}).is_error);
    r = edit("two", "TWO", false, "src/crlf.txt").content;
    EXPECT_THAT(r, HasSubstr(number_line(1, "one") + "\n" + number_line(2, "TWO") + "\n" +
                             number_line(3, "three") + "\nReview"));

    r = edit("line 2\n", numbered(100), false).content;
    EXPECT_THAT(r, HasSubstr("Snippet cut at 60 lines; the edited region continues to "
                             "line 101."));
}

TEST_F(EditToolTest, FuzzyEditNamesTheStrategy) {
    h.ws.put("src/py.py", "class A:\n    def f(self):\n        return 1\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/py.py"}}).is_error);
    const ToolResult r =
        edit("def f(self):\n    return 1", "def f(self):\n    return 2", false, "src/py.py");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("edit_success_reindented.txt", r.content);
    EXPECT_EQ(r.metadata["strategy"], "indentation-flexible");
    EXPECT_EQ(r.metadata["reindented"], true);
    EXPECT_EQ(h.ws.get("src/py.py"), "class A:\n    def f(self):\n        return 2\n");
}

TEST_F(EditToolTest, LineByLineReindentationIsReported) {
    // Tabs sent for a file indented with two spaces, the model's drift included.
    h.ws.put("src/conf.yaml", "jobs:\n  build:\n    steps:\n      - run: make\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/conf.yaml"}}).is_error);
    const ToolResult r = edit("\tbuild:\n\t\tsteps:\n\t\t\t- run: make",
                              "\tbuild:\n\t\tsteps:\n\t\t\t- run: make\n\t\t\t- run: make test",
                              false, "src/conf.yaml");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("edit_success_reindented_lines.txt", r.content);
    EXPECT_EQ(r.metadata["strategy"], "indentation-flexible");
    EXPECT_EQ(r.metadata["reindented"], true);
    EXPECT_EQ(h.ws.get("src/conf.yaml"),
              "jobs:\n  build:\n    steps:\n      - run: make\n      - run: make test\n");
}

TEST_F(EditToolTest, ReindentationThatCannotBeDoneShowsTheFilesIndentation) {
    h.ws.put("src/run.go", "func run() {\n\tif ok {\n\t\tgo()\n\t}\n}\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/run.go"}}).is_error);
    const ToolResult r = edit("    if ok {\n        go()\n    }",
                              "    if ok {\n        go(a,\n      b)\n    }", false, "src/run.go");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_indentation_refused.txt", r.content);
    EXPECT_EQ(h.ws.get("src/run.go"), "func run() {\n\tif ok {\n\t\tgo()\n\t}\n}\n");
}

TEST_F(EditToolTest, AChangedHereDocumentLineKeepsTheTabTheShellStrips) {
    const std::string script =
        "#!/bin/sh\nnotify() {\n    mail -s \"$1\" ops <<-BODY\n\tHost: $(hostname)\n"
        "\tStatus: $2\n\tBODY\n}\n";
    h.ws.put("src/notify.sh", script);
    ASSERT_FALSE(h.call("read", {{"file_path", "src/notify.sh"}}).is_error);
    const ToolResult r = edit("    mail -s \"$1\" ops <<-BODY\n        Host: $(hostname)",
                              "    mail -s \"$1\" ops <<-BODY\n        Host: $(hostname -f)", false,
                              "src/notify.sh");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("edit_success_reindented_heredoc.txt", r.content);
    EXPECT_EQ(h.ws.get("src/notify.sh"),
              "#!/bin/sh\nnotify() {\n    mail -s \"$1\" ops <<-BODY\n\tHost: $(hostname -f)\n"
              "\tStatus: $2\n\tBODY\n}\n");
}

TEST_F(EditToolTest, ANewLineAtHalfAnIndentStepIsRefused) {
    const std::string go =
        "func (s *Server) Close() error {\n\tif s.ln != nil {\n\t\treturn s.ln.Close()\n\t}\n"
        "\treturn nil\n}\n";
    h.ws.put("src/server.go", go);
    ASSERT_FALSE(h.call("read", {{"file_path", "src/server.go"}}).is_error);
    const ToolResult r = edit("    if s.ln != nil {\n        return s.ln.Close()\n    }",
                              "    if s.ln != nil {\n      s.closing = true\n"
                              "        return s.ln.Close()\n    }",
                              false, "src/server.go");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_indentation_refused_half_step.txt", r.content);
    EXPECT_EQ(h.ws.get("src/server.go"), go);
}

TEST_F(EditToolTest, TabInNewStringForASpaceFileIsRefused) {
    h.ws.put("src/f.py", "def f():\n    a = 1  \n    b = 2\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/f.py"}}).is_error);
    const ToolResult r = edit("    a = 1\n    b = 2", "    a = 1\n\tb = 3", false, "src/f.py");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_indentation_refused_new_string.txt", r.content);
}

TEST_F(EditToolTest, LineAddedToAMixedFileTakesItsDominantEnding) {
    h.ws.put("src/mixed.txt", "a\r\nb\r\nc\r\nd\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/mixed.txt"}}).is_error);
    const ToolResult r = edit("b\n", "b\nb2\n", false, "src/mixed.txt");
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_EQ(h.ws.get("src/mixed.txt"), "a\r\nb\r\nb2\r\nc\r\nd\n");
}

TEST_F(EditToolTest, WhitespaceNormalizedPhraseMatchesTheSeed) {
    h.ws.put("src/c.c", "int  x =  1;\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/c.c"}}).is_error);
    const ToolResult r = edit("int x = 1;", "int x = 2;", false, "src/c.c");
    EXPECT_TRUE(r.content.starts_with(
        "Edited /work/proj/src/c.c (1 replacement, matched with whitespace normalization).\n"))
        << r.content;
}

TEST_F(EditToolTest, ReplaceAllCountsReplacementsAndShowsTheFirstRegion) {
    const ToolResult r = edit("line", "row", true);
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("edit_replace_all.txt", r.content);
    EXPECT_EQ(r.metadata["strategy"], "multi-occurrence");
    EXPECT_EQ(r.metadata["replacements"], 20);
}

TEST_F(EditToolTest, NotFoundWithANearMiss) {
    h.ws.put("src/m.rs", "fn main() {\n    a+b\n}\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/m.rs"}}).is_error);
    const ToolResult r = edit("fn main() {\n    a + b\n}", "x", false, "src/m.rs");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_not_found_near_miss.txt", r.content);
}

TEST_F(EditToolTest, NotFoundWithANearMissThatDiffersInText) {
    h.ws.put("src/b.ts", "const budget = 5;\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/b.ts"}}).is_error);
    const ToolResult r = edit("\tconst budgt = 5;", "x", false, "src/b.ts");
    expect_golden("edit_not_found_near_miss_text.txt", r.content);
}

// read shows an ESC byte as the text \x1b (tools/text.h). old_string must hold the ESC itself
// (JSON "\u001b"); the escape text is not unescaped by any strategy of the cascade.
TEST_F(EditToolTest, AControlCharacterIsQuotedAsItselfNotAsItsEscape) {
    h.ws.put("src/c.sh", "printf '\x1b[2J'\nprintf 'plain'\n");
    const ToolResult read = h.call("read", {{"file_path", "src/c.sh"}});
    ASSERT_NE(read.content.find("     1\u2192printf '\\x1b[2J'"), std::string::npos)
        << read.content;
    const ToolResult escaped = edit("printf '\\x1b[2J'", "printf 'cleared'", false, "src/c.sh");
    EXPECT_TRUE(escaped.is_error) << escaped.content;
    EXPECT_EQ(h.ws.get("src/c.sh"), "printf '\x1b[2J'\nprintf 'plain'\n");
    const ToolResult raw = edit("printf '\x1b[2J'", "printf 'cleared'", false, "src/c.sh");
    EXPECT_FALSE(raw.is_error) << raw.content;
    EXPECT_EQ(h.ws.get("src/c.sh"), "printf 'cleared'\nprintf 'plain'\n");
}

TEST_F(EditToolTest, NotFoundWithoutANearMiss) {
    const ToolResult r = edit("nothing like this at all", "x");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_not_found.txt", r.content);
}

TEST_F(EditToolTest, ReplaceAllWithZeroMatches) {
    const ToolResult r = edit("nothing like this at all", "x", true);
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_replace_all_not_found.txt", r.content);
}

TEST_F(EditToolTest, AmbiguousExactMatch) {
    h.ws.put("src/dup.ts", "a = 1;\nb;\na = 1;\nc;\na = 1;\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/dup.ts"}}).is_error);
    const ToolResult r = edit("a = 1;", "a = 2;", false, "src/dup.ts");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_ambiguous.txt", r.content);
    EXPECT_EQ(r.metadata["matches"], 3);
}

TEST_F(EditToolTest, AmbiguousFuzzyMatch) {
    h.ws.put("src/dup.ts", "  f();\nx\n\tf();\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/dup.ts"}}).is_error);
    const ToolResult r = edit("f(); ", "g();", false, "src/dup.ts");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_ambiguous_fuzzy.txt", r.content);
}

TEST_F(EditToolTest, DisproportionateMatch) {
    h.ws.put("src/big.ts", "start\n  one\n  " + std::string(2000, 'x') + "\nend\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/big.ts"}}).is_error);
    const ToolResult r = edit("start\n  one\n  two\nend", "start\nend", false, "src/big.ts");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_disproportionate.txt", r.content);
}

TEST_F(EditToolTest, IdenticalStrings) {
    const ToolResult r = edit("line 1\n", "line 1\n");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_identical.txt", r.content);
}

TEST_F(EditToolTest, EmptyOldString) {
    const ToolResult r = edit("", "x");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_empty_old_string.txt", r.content);
}

TEST_F(EditToolTest, NoChange) {
    h.ws.put("src/n.c", "x  =  1\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/n.c"}}).is_error);
    const ToolResult r = edit("x = 1", "x  =  1", false, "src/n.c");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_no_change.txt", r.content);
}

TEST_F(EditToolTest, EditWithoutReadIsRefused) {
    h.ws.put("src/unread.ts", "a\n");
    const ToolResult r = edit("a", "b", false, "src/unread.ts");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_not_read.txt", r.content);
}

TEST_F(EditToolTest, StaleFileIsRefused) {
    h.ws.put("src/engine.ts", "changed by someone\n");
    const ToolResult r = edit("line 1\n", "x\n");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_externally_modified.txt", r.content);
}

TEST_F(EditToolTest, MissingFileSuggestsAndPointsAtWrite) {
    const ToolResult r = edit("a", "b", false, "src/engnie.ts");
    EXPECT_TRUE(r.is_error);
    expect_golden("edit_file_not_found.txt", r.content);
}

TEST_F(EditToolTest, ConsecutiveEditsNeedNoReRead) {
    ASSERT_FALSE(edit("line 1\n", "first\n").is_error);
    const ToolResult r = edit("line 2\n", "second\n");
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(h.ws.get("src/engine.ts").starts_with("first\nsecond\nline 3\n"));
}

TEST_F(EditToolTest, CrlfFileKeepsItsLineEndings) {
    h.ws.put("src/win.txt", "a\r\nb\r\nc\r\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/win.txt"}}).is_error);
    const ToolResult r = edit("b\n", "B\nB2\n", false, "src/win.txt");
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_EQ(h.ws.get("src/win.txt"), "a\r\nB\r\nB2\r\nc\r\n");
    EXPECT_EQ(r.content.find('\r'), std::string::npos);
}

TEST_F(EditToolTest, ConcurrentEditsOfOneFileAreSerialised) {
    h.ws.put("src/counter.txt", "a\nb\n");
    ASSERT_FALSE(h.call("read", {{"file_path", "src/counter.txt"}}).is_error);
    ToolContext ctx2 = h.ctx;
    std::thread t([&] {
        h.tool("edit").execute(
            {{"file_path", "src/counter.txt"}, {"old_string", "a\n"}, {"new_string", "A\n"}}, ctx2);
    });
    h.tool("edit").execute(
        {{"file_path", "src/counter.txt"}, {"old_string", "b\n"}, {"new_string", "B\n"}}, h.ctx);
    t.join();
    // Both land: each edit re-checks the stamp under the lock and sees the other's write as its
    // own.
    EXPECT_EQ(h.ws.get("src/counter.txt"), "A\nB\n");
}

TEST_F(EditToolTest, DirectoryIsRefused) {
    const ToolResult r = edit("a", "b", false, "src");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(
        r.content,
        "/work/proj/src is a directory; edit changes one file. Give the path of a file inside it.");
}

}  // namespace
}  // namespace stockade::tools
