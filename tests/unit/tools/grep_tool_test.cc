#include <algorithm>
#include <csignal>

#include <gtest/gtest.h>

#include "tests/unit/tools/tool_harness.h"

namespace stockade::tools {
namespace {

using testing::expect_golden;
using testing::is_inert;
using testing::ToolHarness;

class GrepToolTest : public ::testing::Test {
protected:
    void SetUp() override {
        // Newest first: kernel/agent.ts (3000) before context/engine.ts (2000) before README
        // (1000).
        h.ws.put("README.md", "The ContextEngine is described here.\n", 1000);
        h.ws.put("src/context/engine.ts",
                 "import x from 'y';\n"
                 "export class ContextEngine {\n"
                 "  // ContextEngine owns compaction triggers\n"
                 "}\n",
                 2000);
        h.ws.put("src/kernel/agent.ts", "  constructor(private context: ContextEngine) {}\n", 3000);
    }
    ToolResult grep(const nlohmann::json& args) { return h.call("grep", args); }
    ToolHarness h;
};

TEST_F(GrepToolTest, MatchesAreGroupedByFileNewestFirst) {
    const ToolResult r = grep({{"pattern", "ContextEngine"}});
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("grep_matches.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Search \"ContextEngine\" \u00b7 4 matches in 3 files");
    EXPECT_EQ(r.metadata["matches"], 4);
    EXPECT_EQ(r.metadata["files"], 3);
    EXPECT_FALSE(r.metadata.contains("truncation"));
}

TEST_F(GrepToolTest, SmartCaseLowerCaseIsInsensitive) {
    const ToolResult r = grep({{"pattern", "contextengine"}});
    EXPECT_EQ(r.metadata["matches"], 4);
    const ToolResult strict = grep({{"pattern", "Contextengine"}});
    EXPECT_EQ(strict.metadata["matches"], 0);
}

TEST_F(GrepToolTest, PathAndIncludeNarrowTheSearch) {
    EXPECT_EQ(grep({{"pattern", "ContextEngine"}, {"path", "src"}}).metadata["matches"], 3);
    EXPECT_EQ(grep({{"pattern", "ContextEngine"}, {"include", "*.md"}}).metadata["matches"], 1);
    // An include glob with a slash is taken relative to path.
    EXPECT_EQ(grep({{"pattern", "ContextEngine"}, {"path", "src"}, {"include", "kernel/*.ts"}})
                  .metadata["matches"],
              1);
    EXPECT_EQ(grep({{"pattern", "ContextEngine"}, {"include", "src/**/*.ts"}}).metadata["matches"],
              3);
    const ToolResult file =
        grep({{"pattern", "owns"}, {"path", "/work/proj/src/context/engine.ts"}});
    EXPECT_EQ(file.content,
              "1 match in 1 file for \"owns\":\n\nsrc/context/engine.ts\n  3:   // ContextEngine "
              "owns compaction triggers");
}

TEST_F(GrepToolTest, GitignoreAndStockadeignoreAreHonoured) {
    h.ws.put(".gitignore", "build/\n");
    h.ws.put(".stockadeignore", "secrets/\n");
    h.ws.put("build/gen.ts", "ContextEngine\n");
    h.ws.put("secrets/key.txt", "ContextEngine\n");
    h.ws.put(".hidden/x.ts", "ContextEngine\n");
    const ToolResult r = grep({{"pattern", "ContextEngine"}});
    EXPECT_EQ(r.metadata["matches"], 4) << r.content;
    const auto& args = h.ws.last_rg_args;
    EXPECT_NE(std::find(args.begin(), args.end(), ".stockadeignore"), args.end());
}

TEST_F(GrepToolTest, ZeroMatchesSuggestsTheCaseInsensitiveSpelling) {
    const ToolResult r = grep({{"pattern", "CONTEXTENGINE"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("grep_no_matches_case_hint.txt", r.content);
}

TEST_F(GrepToolTest, ZeroMatchesSuggestsAnEditDistanceOneSpelling) {
    const ToolResult r = grep({{"pattern", "ContextEnginee"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("grep_no_matches_typo_hint.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Search \"ContextEnginee\" \u00b7 no matches");
}

TEST_F(GrepToolTest, ZeroMatchesWithoutAHint) {
    const ToolResult r = grep({{"pattern", "zebra[0-9]+"}, {"include", "*.ts"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("grep_no_matches.txt", r.content);
}

TEST_F(GrepToolTest, InvalidRegexIsExplained) {
    const ToolResult r = grep({{"pattern", "foo("}});
    EXPECT_TRUE(r.is_error);
    expect_golden("grep_invalid_regex.txt", r.content);
}

TEST_F(GrepToolTest, PatternsStartingWithADashAreNotOptions) {
    h.ws.put("flags.txt", "use --verbose here\n");
    const ToolResult r = grep({{"pattern", "--verbose"}});
    EXPECT_EQ(r.metadata["matches"], 1) << r.content;
}

TEST_F(GrepToolTest, MoreThan100MatchingLinesAreCutAndSpilled) {
    std::string many;
    for (int i = 1; i <= 150; ++i) {
        many += "needle " + std::to_string(i) + "\n";
    }
    h.ws.put("a.txt", many, 5000);
    h.ws.put("b.txt", many, 4000);
    const ToolResult r = grep({{"pattern", "needle"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("grep_truncated.txt", r.content);
    EXPECT_EQ(r.metadata["truncation"]["original_lines"], 300);
    EXPECT_EQ(r.metadata["truncation"]["shown_head_lines"], 100);
    EXPECT_EQ(r.metadata["truncation"]["omitted_lines"], 200);
    EXPECT_EQ(r.metadata["truncation"]["spill_path"], "/state/tool-output/s1/grep-call1.txt");
    const std::string spilled = h.ws.get("grep-call1.txt", workspace::Root::kSpill);
    EXPECT_TRUE(
        spilled.starts_with("300 matches in 2 files for \"needle\":\n\na.txt\n  1: needle 1\n"));
    EXPECT_NE(spilled.find("b.txt\n  1: needle 1\n"), std::string::npos);
    EXPECT_TRUE(spilled.ends_with("  150: needle 150\n"));
}

TEST_F(GrepToolTest, LongLinesAreCutAt250Characters) {
    h.ws.put("min.js", "var x='" + std::string(400, 'q') + "';\n");
    const ToolResult r = grep({{"pattern", "var x"}});
    EXPECT_NE(r.content.find("  1: var x='" + std::string(243, 'q') + "\u2026"), std::string::npos)
        << r.content;
}

TEST_F(GrepToolTest, MissingPath) {
    const ToolResult r = grep({{"pattern", "x"}, {"path", "src/kernl"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Path not found: /work/proj/src/kernl. Did you mean one of these? src/kernel");
}

TEST_F(GrepToolTest, SpillFilesCanBeSearched) {
    h.ws.put("bash-call0.txt", "error: boom\n", 0, workspace::Root::kSpill);
    const ToolResult r = grep({{"pattern", "boom"}, {"path", "/state/tool-output/s1"}});
    EXPECT_EQ(r.content,
              "1 match in 1 file for \"boom\":\n\n/state/tool-output/s1/bash-call0.txt\n  1: "
              "error: boom");
}

// ---- Inert text ----------------------------------------------------------------------------

TEST_F(GrepToolTest, MatchedLinesAndFileNamesWithControlCharactersAreInert) {
    h.ws.put("term.txt",
             "token \x1b]52;c;aGk=\x07 then \x1b[2J and \u009b"
             "2J\rgone\n",
             4000);
    h.ws.put("escape\nPASS forged-line", "token here\n", 5000);
    const ToolResult r = grep({{"pattern", "token"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(is_inert(r.content)) << r.content;
    expect_golden("grep_control_characters.txt", r.content);
}

TEST_F(GrepToolTest, TheSpillKeepsTheRawBytes) {
    std::string many;
    for (int i = 1; i <= 150; ++i) {
        many += "needle \x1b[2J " + std::to_string(i) + "\n";
    }
    h.ws.put("a.txt", many);
    const ToolResult r = grep({{"pattern", "needle"}});
    EXPECT_TRUE(is_inert(r.content));
    EXPECT_NE(r.content.find("  1: needle \\x1b[2J 1\n"), std::string::npos) << r.content;
    const std::string spilled = h.ws.get("grep-call1.txt", workspace::Root::kSpill);
    EXPECT_NE(spilled.find("  150: needle \x1b[2J 150\n"), std::string::npos) << spilled;
}

// ---- rg failing ----------------------------------------------------------------------------

workspace::RgOutcome rg_exit(int code, std::string err = {}, std::string out = {}) {
    return {.exit_code = code, .out = std::move(out), .err = std::move(err)};
}

TEST_F(GrepToolTest, RgKilledBySignalIsAnErrorNotNoMatches) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(128 + SIGKILL);
    };
    const ToolResult r = grep({{"pattern", "zebra[0-9]+"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("grep_rg_killed.txt", r.content);
}

TEST_F(GrepToolTest, RgKilledAfterSomeMatchesIsStillAnError) {
    const std::string match =
        R"({"type":"match","data":{"path":{"text":"./README.md"},"lines":{"text":"x\n"},)"
        R"("line_number":1,"submatches":[]}})"
        "\n";
    h.ws.rg_override = [&](const workspace::RgRequest&) {
        return rg_exit(128 + SIGSEGV, "", match);
    };
    const ToolResult r = grep({{"pattern", "x"}});
    EXPECT_TRUE(r.is_error) << r.content;
    EXPECT_EQ(r.content,
              "grep failed: ripgrep (rg) was killed by SIGSEGV while searching /work/proj, so its "
              "results are incomplete and none are shown. Try again; if it happens again, use "
              "bash instead (grep -rn -e PATTERN PATH) and tell the user.");
}

TEST_F(GrepToolTest, RgThatCouldNotStartIsAnError) {
    h.ws.rg_override = [](const workspace::RgRequest&) -> Result<workspace::RgOutcome> {
        return Error{Errc::kUnavailable, "spawn \"/usr/bin/rg\": ENOENT", ENOENT};
    };
    const ToolResult r = grep({{"pattern", "ContextEngine"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("grep_rg_not_started.txt", r.content);
}

TEST_F(GrepToolTest, RgExitingWithAnUnexplainedErrorIsAnError) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2,
                       "thread 'main' panicked at 'capacity overflow'\nnote: run with "
                       "RUST_BACKTRACE=1\n");
    };
    const ToolResult r = grep({{"pattern", "zebra[0-9]+"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("grep_rg_failed.txt", r.content);
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2);
    };
    EXPECT_EQ(grep({{"pattern", "zebra[0-9]+"}}).content,
              "grep failed: ripgrep (rg) exited with code 2 while searching /work/proj without "
              "saying why. Its results may be incomplete, so none are shown. Try again; if it "
              "happens again, use bash instead (grep -rn -e PATTERN PATH) and tell the user.");
}

TEST_F(GrepToolTest, PathsRgCouldNotReadAreNamedWhenNothingMatched) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2,
                       "rg: ./config/secrets.txt: Permission denied (os error 13)\n"
                       "rg: ./vendor/locked: Permission denied (os error 13)\n");
    };
    const ToolResult r = grep({{"pattern", "zebra[0-9]+"}});
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("grep_no_matches_unreadable.txt", r.content);
}

TEST_F(GrepToolTest, RgThatCouldNotStartAtTheProcessLimitSaysSo) {
    h.ws.rg_override = [](const workspace::RgRequest&) -> Result<workspace::RgOutcome> {
        return errno_error("spawn \"/usr/bin/rg\"", EAGAIN);
    };
    const ToolResult r = grep({{"pattern", "ContextEngine"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("grep_rg_not_started_at_limit.txt", r.content);
}

TEST_F(GrepToolTest, RgMissingFromThePathIsAnError) {
    h.ws.rg_program = "stockade-test-no-such-rg";  // the fake's real spawn fails with ENOENT
    const ToolResult r = grep({{"pattern", "ContextEngine"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_TRUE(
        r.content.starts_with("grep could not search /work/proj: ripgrep (rg) could not "
                              "be started in the sandbox: ENOENT"))
        << r.content;
}

}  // namespace
}  // namespace stockade::tools
