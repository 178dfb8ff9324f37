#include <csignal>

#include <gtest/gtest.h>

#include "tests/unit/tools/tool_harness.h"

namespace stockade::tools {
namespace {

using testing::expect_golden;
using testing::is_inert;
using testing::ToolHarness;

class GlobToolTest : public ::testing::Test {
protected:
    void SetUp() override {
        h.ws.put("src/context/engine.ts", "x", 3000);
        h.ws.put("src/kernel/agent.ts", "x", 2000);
        h.ws.put("src/kernel/agent.test.ts", "x", 1000);
        h.ws.put("src/index.js", "x", 500);
        h.ws.put("top.ts", "x", 100);
        h.ws.put("node_modules/pkg/index.ts", "x", 4000);
        h.ws.put("dist/bundle.ts", "x", 4000);
        h.ws.put(".github/workflows/ci.yml", "x", 4000);
    }
    ToolResult glob(const nlohmann::json& args) { return h.call("glob", args); }
    ToolHarness h;
};

TEST_F(GlobToolTest, MatchesNewestFirstWithoutNoiseDirectories) {
    const ToolResult r = glob({{"pattern", "src/**/*.ts"}});
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("glob_matches.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Glob src/**/*.ts \u00b7 3 files");
    EXPECT_EQ(r.metadata["files"], 3);
}

TEST_F(GlobToolTest, APatternWithoutSlashMatchesAtAnyDepth) {
    const ToolResult r = glob({{"pattern", "*.ts"}});
    EXPECT_EQ(r.content,
              "4 files match \"*.ts\" (newest first):\nsrc/context/engine.ts\nsrc/kernel/agent.ts\n"
              "src/kernel/agent.test.ts\ntop.ts");
}

TEST_F(GlobToolTest, NoiseDirectoriesAreIncludedWhenThePatternNamesThem) {
    EXPECT_EQ(glob({{"pattern", "node_modules/**/*.ts"}}).content,
              "1 file matches \"node_modules/**/*.ts\":\nnode_modules/pkg/index.ts");
    EXPECT_EQ(glob({{"pattern", "dist/*.ts"}}).metadata["files"], 1);
}

TEST_F(GlobToolTest, HiddenFilesWhenThePatternAsksForThem) {
    EXPECT_EQ(glob({{"pattern", ".github/**/*.yml"}}).content,
              "1 file matches \".github/**/*.yml\":\n.github/workflows/ci.yml");
    EXPECT_EQ(glob({{"pattern", "*.yml"}}).metadata["files"], 0);
}

TEST_F(GlobToolTest, PatternIsRelativeToPath) {
    EXPECT_EQ(glob({{"pattern", "kernel/*.ts"}, {"path", "src"}}).metadata["files"], 2);
    EXPECT_EQ(glob({{"pattern", "**/*.ts"}, {"path", "/work/proj/src/kernel"}}).metadata["files"],
              2);
    EXPECT_EQ(glob({{"pattern", "/work/proj/src/kernel/*.ts"}}).metadata["files"], 2);
}

TEST_F(GlobToolTest, GitignoreAndStockadeignoreAreHonoured) {
    h.ws.put(".gitignore", "generated/\n");
    h.ws.put(".stockadeignore", "private/\n");
    h.ws.put("generated/a.ts", "x");
    h.ws.put("private/b.ts", "x");
    EXPECT_EQ(glob({{"pattern", "*.ts"}}).metadata["files"], 4);
}

TEST_F(GlobToolTest, ZeroMatchesSuggestsTheNearestExtension) {
    const ToolResult r = glob({{"pattern", "src/**/*.tsx"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("glob_no_matches_extension.txt", r.content);
}

TEST_F(GlobToolTest, ZeroMatchesWithoutAHint) {
    const ToolResult r = glob({{"pattern", "**/Makefile"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("glob_no_matches.txt", r.content);
}

TEST_F(GlobToolTest, MoreThan100PathsAreCutAndSpilled) {
    for (int i = 0; i < 150; ++i) {
        h.ws.put("gen/f" + std::to_string(1000 + i) + ".txt", "x", 10000 + i);
    }
    const ToolResult r = glob({{"pattern", "gen/*.txt"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("glob_truncated.txt", r.content);
    EXPECT_EQ(r.metadata["truncation"]["original_lines"], 150);
    EXPECT_EQ(r.metadata["truncation"]["omitted_lines"], 50);
    const std::string spilled = h.ws.get("glob-call1.txt", workspace::Root::kSpill);
    EXPECT_TRUE(spilled.ends_with("gen/f1000.txt\n"));
}

TEST_F(GlobToolTest, PathMustBeADirectory) {
    const ToolResult r = glob({{"pattern", "*"}, {"path", "top.ts"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "/work/proj/top.ts is a file, not a directory. glob searches a directory: give its "
              "parent as path, or omit path to search the whole workspace.");
}

TEST_F(GlobToolTest, InvalidGlobIsExplained) {
    const ToolResult r = glob({{"pattern", "src/{a,b"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_TRUE(r.content.starts_with("Invalid glob \"src/{a,b\". ripgrep says:\n")) << r.content;
}

// ---- Inert text ----------------------------------------------------------------------------

TEST_F(GlobToolTest, NamesWithNewlinesOrControlCharactersAreQuoted) {
    h.ws.put("odd/escape\nPASS forged-line", "x", 5000);
    h.ws.put("odd/\x1b]0;owned\x07.txt", "x", 4000);
    h.ws.put("odd/tab\there.txt", "x", 3000);
    h.ws.put("odd/plain.txt", "x", 2000);
    const ToolResult r = glob({{"pattern", "odd/*"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(is_inert(r.content)) << r.content;
    expect_golden("glob_control_names.txt", r.content);
    EXPECT_EQ(r.metadata["files"], 4);
}

TEST_F(GlobToolTest, TheSpillQuotesNamesToo) {
    for (int i = 0; i < 110; ++i) {
        h.ws.put("gen/f" + std::to_string(1000 + i) + ".txt", "x", 10000 + i);
    }
    h.ws.put("gen/z\nforged.txt", "x", 1);
    const ToolResult r = glob({{"pattern", "gen/*"}});
    const std::string spilled = h.ws.get("glob-call1.txt", workspace::Root::kSpill);
    EXPECT_TRUE(spilled.ends_with("\n\"gen/z\\nforged.txt\"\n")) << spilled;
    EXPECT_EQ(r.metadata["truncation"]["original_lines"], 111);
}

// ---- rg failing ----------------------------------------------------------------------------

workspace::RgOutcome rg_exit(int code, std::string err = {}, std::string out = {}) {
    return {.exit_code = code, .out = std::move(out), .err = std::move(err)};
}

TEST_F(GlobToolTest, RgKilledBySignalIsAnErrorNotNoFilesMatch) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(128 + SIGKILL);
    };
    const ToolResult r = glob({{"pattern", "**/Makefile"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("glob_rg_killed.txt", r.content);
}

TEST_F(GlobToolTest, RgThatCouldNotStartIsAnError) {
    h.ws.rg_program = "stockade-test-no-such-rg";  // the fake's real spawn fails with ENOENT
    const ToolResult r = glob({{"pattern", "**/Makefile"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("glob_rg_not_started.txt", r.content);
}

TEST_F(GlobToolTest, RgExitingWithAnUnexplainedErrorIsAnError) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2, "memory allocation of 1048576 bytes failed\n");
    };
    const ToolResult r = glob({{"pattern", "**/Makefile"}});
    EXPECT_TRUE(r.is_error) << r.content;
    expect_golden("glob_rg_failed.txt", r.content);
}

TEST_F(GlobToolTest, PathsRgCouldNotReadAreNamedWhenNothingMatched) {
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2, "rg: ./private: Permission denied (os error 13)\n");
    };
    const ToolResult r = glob({{"pattern", "**/Makefile"}});
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("glob_no_matches_unreadable.txt", r.content);
    // ripgrep 13 (Debian 12's) prints the same error without its "rg: " prefix.
    h.ws.rg_override = [](const workspace::RgRequest&) {
        return rg_exit(2, "./private: Permission denied (os error 13)\n");
    };
    const ToolResult plain = glob({{"pattern", "**/Makefile"}});
    EXPECT_FALSE(plain.is_error) << plain.content;
    EXPECT_EQ(plain.content, r.content);
}

}  // namespace
}  // namespace stockade::tools
