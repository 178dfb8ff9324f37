#include <sys/stat.h>

#include <gtest/gtest.h>

#include "common/crypto.h"
#include "tests/unit/tools/tool_harness.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

using testing::expect_golden;
using testing::is_inert;
using testing::ToolHarness;

std::string numbered(int n, const std::string& prefix = "line ") {
    std::string s;
    for (int i = 1; i <= n; ++i) {
        s += prefix + std::to_string(i) + "\n";
    }
    return s;
}

class ReadToolTest : public ::testing::Test {
protected:
    void SetUp() override {
        h.ws.put("src/kernel/agent.ts",
                 "/**\n * Stockade\n */\nexport class Agent {\n  run() {}\n}\n");
        h.ws.put("src/kernel/agent.test.ts", "test('runs', () => {});\n");
        h.ws.put("src/context/engine.ts", "export class ContextEngine {}\n");
    }
    ToolHarness h;
};

TEST_F(ReadToolTest, SmallFileIsNumberedWithItsAbsolutePath) {
    const ToolResult r = h.call("read", {{"file_path", "src/kernel/agent.ts"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("read_small.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Read src/kernel/agent.ts \u00b7 lines 1\u20136 of 6");
    EXPECT_EQ(r.metadata["path"], "/work/proj/src/kernel/agent.ts");
    EXPECT_EQ(r.metadata["lines"], 6);
    EXPECT_EQ(r.metadata["total_lines"], 6);
    EXPECT_TRUE(r.metadata.contains("duration_ms"));
}

TEST_F(ReadToolTest, AbsolutePathsWork) {
    const ToolResult r = h.call("read", {{"file_path", "/work/proj/src/kernel/agent.ts"}});
    EXPECT_FALSE(r.is_error);
    EXPECT_TRUE(r.content.starts_with("/work/proj/src/kernel/agent.ts\n     1\u2192/**\n"));
}

TEST_F(ReadToolTest, ReadStampsTheFileAndRecordsAnEvent) {
    (void)h.call("read", {{"file_path", "src/kernel/agent.ts"}});
    const auto stamp = h.stamps.get("/work/proj/src/kernel/agent.ts");
    ASSERT_TRUE(stamp.has_value());
    EXPECT_EQ(stamp->sha256, sha256_hex(h.ws.get("src/kernel/agent.ts")));
    EXPECT_EQ(h.events.log, (std::vector<std::string>{"read /work/proj/src/kernel/agent.ts"}));
    EXPECT_EQ(h.events.last["sha256"], stamp->sha256);
}

TEST_F(ReadToolTest, OffsetAndLimitPageThroughTheFile) {
    h.ws.put("long.txt", numbered(30));
    const ToolResult r = h.call("read", {{"file_path", "long.txt"}, {"offset", 10}, {"limit", 5}});
    expect_golden("read_page.txt", r.content);
    EXPECT_EQ(r.metadata["first_line"], 10);
    EXPECT_EQ(r.metadata["last_line"], 14);
}

TEST_F(ReadToolTest, LastPageHasNoContinuationHint) {
    h.ws.put("long.txt", numbered(30));
    const ToolResult r = h.call("read", {{"file_path", "long.txt"}, {"offset", 28}});
    EXPECT_TRUE(r.content.ends_with("    30\u2192line 30"));
}

TEST_F(ReadToolTest, DefaultPageIs2000Lines) {
    h.ws.put("big.txt", numbered(2500));
    const ToolResult r = h.call("read", {{"file_path", "big.txt"}});
    EXPECT_TRUE(
        r.content.ends_with("  2000\u2192line 2000\n(Showing lines 1\u20132000 of 2500. Use "
                            "offset=2001 to continue.)"));
    EXPECT_EQ(r.metadata["title"], "Read big.txt \u00b7 lines 1\u20132000 of 2500");
}

TEST_F(ReadToolTest, PageStopsAt50KB) {
    h.ws.put("wide.txt", numbered(2000, std::string(100, 'w')));
    const ToolResult r = h.call("read", {{"file_path", "wide.txt"}});
    EXPECT_LE(r.content.size(), 50U * 1024 + 200);
    const size_t last = r.metadata["last_line"].get<size_t>();
    EXPECT_LT(last, 2000U);
    EXPECT_TRUE(r.content.ends_with("Use offset=" + std::to_string(last + 1) + " to continue.)"));
}

TEST_F(ReadToolTest, LongLinesAreCutAt2000Characters) {
    h.ws.put("min.js", std::string(2500, 'x') + "\nshort\n");
    const ToolResult r = h.call("read", {{"file_path", "min.js"}});
    EXPECT_NE(r.content.find("     1\u2192" + std::string(2000, 'x') +
                             "\u2026 [line truncated]\n     2\u2192short"),
              std::string::npos);
}

TEST_F(ReadToolTest, OffsetBeyondTheEnd) {
    h.ws.put("long.txt", numbered(30));
    const ToolResult r = h.call("read", {{"file_path", "long.txt"}, {"offset", 5000}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_offset_beyond_eof.txt", r.content);
}

TEST_F(ReadToolTest, NotFoundSuggestsSimilarPaths) {
    const ToolResult r = h.call("read", {{"file_path", "/work/proj/src/kernal/agent.ts"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_not_found_suggestions.txt", r.content);
}

TEST_F(ReadToolTest, NotFoundWithoutSuggestions) {
    const ToolResult r = h.call("read", {{"file_path", "docs/nothing-like-it.md"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_not_found.txt", r.content);
}

TEST_F(ReadToolTest, AbsolutePathMeantAsRelativeGetsAMaybeYouMeant) {
    const ToolResult r = h.call("read", {{"file_path", "/src/kernel/agent.ts"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_relative_confusion.txt", r.content);
}

TEST_F(ReadToolTest, OutsideTheWorkspaceIsRefused) {
    const ToolResult r = h.call("read", {{"file_path", "../../etc/passwd"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_outside_workspace.txt", r.content);
}

TEST_F(ReadToolTest, DirectoryIsListedTwoLevelsDeepWithHiddenCounts) {
    h.ws.put("src/.hidden", "x");
    h.ws.put("src/kernel/.secret", "x");
    h.ws.put("src/kernel/util/deep.ts", "x");
    h.ws.put("src/node_modules/pkg/index.js", "x");
    h.ws.put("src/main.ts", "x");
    h.ws.mkdir("src/empty");
    const ToolResult r = h.call("read", {{"file_path", "src"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("read_directory.txt", r.content);
    EXPECT_EQ(r.metadata["entries"], 6);
}

TEST_F(ReadToolTest, EmptyDirectory) {
    h.ws.mkdir("void");
    EXPECT_EQ(h.call("read", {{"file_path", "void"}}).content,
              "Directory /work/proj/void is empty.");
}

TEST_F(ReadToolTest, BinaryFileIsDescribedNotDumped) {
    h.ws.put("assets/logo.png", std::string("\x89PNG\r\n\x1a\n", 8) + std::string(12 * 1024, '\0'));
    const ToolResult r = h.call("read", {{"file_path", "assets/logo.png"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("read_binary.txt", r.content);
    EXPECT_FALSE(h.stamps.get("/work/proj/assets/logo.png").has_value());
}

TEST_F(ReadToolTest, TooLargeFileIsRefusedWithAlternatives) {
    h.ws.put("huge.log", "");
    ASSERT_EQ(::truncate(h.ws.real(workspace::Root::kWorkspace, "huge.log").c_str(), 12 << 20), 0);
    const ToolResult r = h.call("read", {{"file_path", "huge.log"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("read_too_large.txt", r.content);
}

TEST_F(ReadToolTest, TooLargeFileCanBePagedWithinItsFirst10MB) {
    std::string text = numbered(100);
    text += std::string((11 << 20) - text.size(), 'z');
    h.ws.put("huge.txt", text);
    const ToolResult page =
        h.call("read", {{"file_path", "huge.txt"}, {"offset", 99}, {"limit", 2}});
    EXPECT_FALSE(page.is_error) << page.content;
    EXPECT_NE(page.content.find("    99\u2192line 99\n   100\u2192line 100"), std::string::npos);
    EXPECT_FALSE(h.stamps.get("/work/proj/huge.txt").has_value());  // not seen whole
    const ToolResult beyond = h.call("read", {{"file_path", "huge.txt"}, {"offset", 500}});
    EXPECT_TRUE(beyond.is_error);
    expect_golden("read_offset_beyond_window.txt", beyond.content);
}

TEST_F(ReadToolTest, EmptyFile) {
    h.ws.put("empty.txt", "");
    const ToolResult r = h.call("read", {{"file_path", "empty.txt"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("read_empty.txt", r.content);
    EXPECT_TRUE(h.stamps.get("/work/proj/empty.txt").has_value());
}

TEST_F(ReadToolTest, CrlfAndBomAreNotShown) {
    h.ws.put("win.txt",
             "\xEF\xBB\xBF"
             "one\r\ntwo\r\n");
    const ToolResult r = h.call("read", {{"file_path", "win.txt"}});
    EXPECT_EQ(r.content, "/work/proj/win.txt\n     1\u2192one\n     2\u2192two");
}

TEST_F(ReadToolTest, InvalidUtf8IsReplacedSoTheResultIsValidJson) {
    h.ws.put("latin1.txt", "caf\xE9\n");
    const ToolResult r = h.call("read", {{"file_path", "latin1.txt"}});
    EXPECT_TRUE(is_valid_utf8(r.content));
    EXPECT_NE(r.content.find("caf\uFFFD"), std::string::npos);
}

// A file that would drive a terminal: OSC 52 (clipboard), OSC 0 (title), CSI 2J (clear), BEL,
// DEL, an 8-bit CSI as UTF-8 (U+009B), a lone CR; one CRLF line in an otherwise LF file.
const std::string kTerminalFile =
    "echo '\x1b]52;c;cHduZWQ=\x07'\n"
    "\x1b]0;owned\x1b\\ title\n"
    "\x1b[2J\x1b[H cleared\n"
    "bell\x07 del\x7f c1 \u009b"
    "2J\n"
    "progress 10%\rprogress 100%\n"
    "crlf line\r\n"
    "\ttab stays; \\x1b stays text\n";

TEST_F(ReadToolTest, ControlCharactersInAFileAreShownEscaped) {
    h.ws.put("term.txt", kTerminalFile);
    const ToolResult r = h.call("read", {{"file_path", "term.txt"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(is_inert(r.content)) << r.content;
    expect_golden("read_control_characters.txt", r.content);
    // The stamp is of the raw bytes, so an edit can follow.
    const auto stamp = h.stamps.get("/work/proj/term.txt");
    ASSERT_TRUE(stamp.has_value());
    EXPECT_EQ(stamp->sha256, sha256_hex(kTerminalFile));
}

TEST_F(ReadToolTest, APageWithoutControlCharactersHasNoEscapeNote) {
    h.ws.put("term.txt", kTerminalFile);
    const ToolResult r = h.call("read", {{"file_path", "term.txt"}, {"offset", 7}});
    EXPECT_EQ(r.content, "/work/proj/term.txt\n     7\u2192\ttab stays; \\x1b stays text");
}

TEST_F(ReadToolTest, EscapesCountTowardsThePageLimit) {
    // 60 lines of 1,000 ESCs: 4 KB each once shown, so the 50 KB page ends after 12 of them.
    std::string text;
    for (int i = 0; i < 60; ++i) {
        text += std::string(1000, '\x1b') + "\n";
    }
    h.ws.put("esc.txt", text);
    const ToolResult r = h.call("read", {{"file_path", "esc.txt"}});
    EXPECT_EQ(r.metadata["last_line"], 12) << r.metadata.dump();
    EXPECT_LE(r.content.size(), size_t{51} * 1024);
    EXPECT_FALSE(r.metadata.contains("truncation")) << "the backstop had nothing to cut";
}

TEST_F(ReadToolTest, DirectoryListingQuotesNamesWithControlCharacters) {
    h.ws.put("odd/escape\nPASS forged-line", "x");
    h.ws.put("odd/\x1b]0;owned\x07.txt", "x");
    h.ws.put("odd/plain.txt", "x");
    h.ws.put("odd/sub\tdir/inner\x1b[2J", "x");
    const ToolResult r = h.call("read", {{"file_path", "odd"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(is_inert(r.content)) << r.content;
    expect_golden("read_directory_control_names.txt", r.content);
}

TEST_F(ReadToolTest, AFileWhoseNameHoldsANewlineHasAQuotedHeader) {
    h.ws.put("escape\nPASS forged-line", "x\n");
    const ToolResult r = h.call("read", {{"file_path", "escape\nPASS forged-line"}});
    EXPECT_EQ(r.content, "\"/work/proj/escape\\nPASS forged-line\"\n     1\u2192x");
    EXPECT_EQ(r.metadata["title"], "Read \"escape\\nPASS forged-line\" \u00b7 lines 1\u20131 of 1");
    EXPECT_EQ(r.metadata["path"], "/work/proj/escape\nPASS forged-line");
}

TEST_F(ReadToolTest, NotFoundSuggestionsAreQuotedWhenTheyHoldControlCharacters) {
    h.ws.put("docs/report\x1b[2J.md", "x");
    h.ws.put("docs/report\n.md", "x");
    const ToolResult r = h.call("read", {{"file_path", "docs/report.md"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_TRUE(is_inert(r.content)) << r.content;
    expect_golden("read_not_found_control_suggestions.txt", r.content);
}

TEST_F(ReadToolTest, SpilledOutputsCanBeRead) {
    h.ws.put("grep-call0.txt", "saved\n", 0, workspace::Root::kSpill);
    const ToolResult r = h.call("read", {{"file_path", "/state/tool-output/s1/grep-call0.txt"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_EQ(r.content, "/state/tool-output/s1/grep-call0.txt\n     1\u2192saved");
}

TEST_F(ReadToolTest, BadPagingArguments) {
    h.ws.put("a.txt", "a\n");
    EXPECT_TRUE(h.call("read", {{"file_path", "a.txt"}, {"limit", 0}}).is_error);
    EXPECT_TRUE(h.call("read", {{"file_path", "a.txt"}, {"offset", -1}}).is_error);
    EXPECT_FALSE(h.call("read", {{"file_path", "a.txt"}, {"offset", 0}}).is_error);
}

}  // namespace
}  // namespace stockade::tools
