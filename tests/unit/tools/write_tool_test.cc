#include <sys/stat.h>

#include <gtest/gtest.h>

#include "common/crypto.h"
#include "tests/unit/tools/tool_harness.h"

namespace stockade::tools {
namespace {

using testing::expect_golden;
using testing::ToolHarness;

class WriteToolTest : public ::testing::Test {
protected:
    ToolResult read(const std::string& path) { return h.call("read", {{"file_path", path}}); }
    ToolResult write(const std::string& path, const std::string& content) {
        return h.call("write", {{"file_path", path}, {"content", content}});
    }
    ToolHarness h;
};

TEST_F(WriteToolTest, NewFileIsCreatedWithItsParents) {
    const ToolResult r = write("src/context/budget.ts", "a\nb\nc\n");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("write_new.txt", r.content);
    EXPECT_EQ(h.ws.get("src/context/budget.ts"), "a\nb\nc\n");
    EXPECT_EQ(r.metadata["title"], "Write src/context/budget.ts \u00b7 new file \u00b7 3 lines");
    EXPECT_EQ(r.metadata["created"], true);
    EXPECT_EQ(r.metadata["additions"], 3);
    EXPECT_EQ(r.metadata["deletions"], 0);
    EXPECT_EQ(r.metadata["diff"],
              "--- /dev/null\n+++ b/src/context/budget.ts\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n");
    EXPECT_EQ(h.events.last["created"], true);
    EXPECT_EQ(h.events.last["sha256"], sha256_hex("a\nb\nc\n"));
}

TEST_F(WriteToolTest, AProtectedPathIsRefusedWithItsReason) {
    const std::vector<ProtectedPath> protected_paths = {
        {.path = "/work/proj/.git/hooks", .reason = "a hook would run outside the sandbox."}};
    h.ctx.protected_paths = &protected_paths;
    const ToolResult r = write("/work/proj/.git/hooks/pre-commit", "#!/bin/sh\n");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Cannot write /work/proj/.git/hooks/pre-commit: it is protected in this sandbox: a "
              "hook would run outside the sandbox.");
    EXPECT_FALSE(h.ws.exists(".git/hooks/pre-commit"));
}

TEST_F(WriteToolTest, NewFileThenWriteAgainNeedsNoRead) {
    ASSERT_FALSE(write("a.txt", "one\n").is_error);
    const ToolResult r = write("a.txt", "one\ntwo\n");
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_EQ(r.content, "Replaced /work/proj/a.txt (was 1 line, now 2 lines).");
}

TEST_F(WriteToolTest, OverwriteAfterReadReportsLineCountsAndDiff) {
    h.ws.put("src/context/budget.ts", "x\ny\nz\n");
    ASSERT_FALSE(read("src/context/budget.ts").is_error);
    const ToolResult r = write("/work/proj/src/context/budget.ts", "x\nY\nz\nw\n");
    EXPECT_FALSE(r.is_error) << r.content;
    expect_golden("write_replaced.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Write src/context/budget.ts \u00b7 +2 \u22121");
    EXPECT_EQ(r.metadata["created"], false);
    EXPECT_EQ(r.metadata["diff"],
              "--- a/src/context/budget.ts\n+++ b/src/context/budget.ts\n@@ -1,3 +1,4 @@\n "
              "x\n-y\n+Y\n z\n+w\n");
}

TEST_F(WriteToolTest, OverwriteWithoutReadIsRefused) {
    h.ws.put("src/engine.ts", "precious\n");
    const ToolResult r = write("src/engine.ts", "oops\n");
    EXPECT_TRUE(r.is_error);
    expect_golden("write_not_read.txt", r.content);
    EXPECT_EQ(h.ws.get("src/engine.ts"), "precious\n");
}

TEST_F(WriteToolTest, ExternalModificationIsRefused) {
    h.ws.put("src/engine.ts", "v1\n");
    ASSERT_FALSE(read("src/engine.ts").is_error);
    h.ws.put("src/engine.ts", "v2 by the user\n");
    const ToolResult r = write("src/engine.ts", "v3\n");
    EXPECT_TRUE(r.is_error);
    expect_golden("write_externally_modified.txt", r.content);
    EXPECT_EQ(h.ws.get("src/engine.ts"), "v2 by the user\n");
    // After a re-read the write goes through.
    ASSERT_FALSE(read("src/engine.ts").is_error);
    EXPECT_FALSE(write("src/engine.ts", "v3\n").is_error);
}

TEST_F(WriteToolTest, StampsRestoredOnResumeAllowTheWrite) {
    h.ws.put("a.txt", "old\n");
    const FileStamp s{.sha256 = sha256_hex("old\n"), .size = 4, .mtime_ns = 0};
    h.stamps.restore("/work/proj/a.txt", s);
    EXPECT_FALSE(write("a.txt", "new\n").is_error);
}

TEST_F(WriteToolTest, DirectoryIsRefused) {
    h.ws.mkdir("src");
    const ToolResult r = write("src", "x");
    EXPECT_TRUE(r.is_error);
    expect_golden("write_directory.txt", r.content);
}

TEST_F(WriteToolTest, SpillDirectoryIsReadOnly) {
    const ToolResult r = write("/state/tool-output/s1/grep-call0.txt", "x");
    EXPECT_TRUE(r.is_error);
    expect_golden("write_spill_read_only.txt", r.content);
}

TEST_F(WriteToolTest, CrlfAndBomArePreserved) {
    h.ws.put("win.txt",
             "\xEF\xBB\xBF"
             "a\r\nb\r\n");
    ASSERT_FALSE(read("win.txt").is_error);
    ASSERT_FALSE(write("win.txt", "a\nB\nc\n").is_error);
    EXPECT_EQ(h.ws.get("win.txt"),
              "\xEF\xBB\xBF"
              "a\r\nB\r\nc\r\n");
    // Already CRLF content is not doubled; a BOM given by the model is not repeated.
    ASSERT_FALSE(write("win.txt",
                       "\xEF\xBB\xBF"
                       "x\r\ny\n")
                     .is_error);
    EXPECT_EQ(h.ws.get("win.txt"),
              "\xEF\xBB\xBF"
              "x\r\ny\r\n");
}

TEST_F(WriteToolTest, ModeIsPreserved) {
    h.ws.put("run.sh", "#!/bin/sh\n");
    ASSERT_EQ(::chmod(h.ws.real(workspace::Root::kWorkspace, "run.sh").c_str(), 0750), 0);
    ASSERT_FALSE(read("run.sh").is_error);
    ASSERT_FALSE(write("run.sh", "#!/bin/sh\necho hi\n").is_error);
    struct stat st {};
    ASSERT_EQ(::stat(h.ws.real(workspace::Root::kWorkspace, "run.sh").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777U, 0750U);
}

TEST_F(WriteToolTest, MissingContentIsASchemaError) {
    const ToolResult r = h.call("write", {{"file_path", "a.txt"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Invalid input for tool \"write\": parameter \"content\" is required. Please rewrite "
              "the input so it satisfies the expected schema.");
}

}  // namespace
}  // namespace stockade::tools
