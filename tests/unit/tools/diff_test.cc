#include "tools/diff.h"

#include <string>

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

std::string lines(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) {
        s += std::to_string(i) + "\n";
    }
    return s;
}

TEST(DiffTest, EqualTextsHaveNoDiff) {
    const DiffResult d = unified_diff("a\n", "a\n", "x");
    EXPECT_EQ(d.text, "");
    EXPECT_EQ(d.additions, 0);
    EXPECT_EQ(d.deletions, 0);
}

TEST(DiffTest, OneChangedLineWithThreeLinesOfContext) {
    std::string before = lines(1, 10);
    std::string after = before;
    after.replace(after.find("5\n"), 2, "five\n");
    const DiffResult d = unified_diff(before, after, "src/a.txt");
    EXPECT_EQ(d.text,
              "--- a/src/a.txt\n"
              "+++ b/src/a.txt\n"
              "@@ -2,7 +2,7 @@\n"
              " 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    EXPECT_EQ(d.additions, 1);
    EXPECT_EQ(d.deletions, 1);
}

TEST(DiffTest, DistantChangesMakeSeparateHunksAndCloseOnesMerge) {
    std::string after = lines(1, 30);
    after.replace(after.find("\n2\n") + 1, 2, "two\n");
    after.replace(after.find("\n28\n") + 1, 3, "");
    const DiffResult d = unified_diff(lines(1, 30), after, "f");
    EXPECT_EQ(d.text,
              "--- a/f\n+++ b/f\n"
              "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
              "@@ -25,6 +25,5 @@\n 25\n 26\n 27\n-28\n 29\n 30\n");

    std::string close = lines(1, 12);
    close.replace(close.find("\n2\n") + 1, 2, "two\n");
    close.replace(close.find("\n9\n") + 1, 2, "nine\n");
    const DiffResult merged = unified_diff(lines(1, 12), close, "f");
    EXPECT_TRUE(merged.text.starts_with("--- a/f\n+++ b/f\n@@ -1,12 +1,12 @@\n"));
    EXPECT_EQ(merged.text.find("\n@@", 20), std::string::npos);  // one hunk
    EXPECT_EQ(merged.additions, 2);
}

TEST(DiffTest, NewFileDiffsAgainstDevNull) {
    const DiffResult d = unified_diff("", "a\nb\n", "new.txt", {.created = true});
    EXPECT_EQ(d.text, "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    EXPECT_EQ(d.additions, 2);
}

TEST(DiffTest, MissingFinalNewlineIsMarked) {
    const DiffResult d = unified_diff("a\nb", "a\nb\n", "f");
    EXPECT_EQ(d.text,
              "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
}

TEST(DiffTest, FallbackBeyondTheEditCapIsStillACorrectDiff) {
    std::string before;
    std::string after;
    for (int i = 0; i < 200; ++i) {
        before += "old " + std::to_string(i) + "\n";
        after += "new " + std::to_string(i) + "\n";
    }
    const DiffResult capped = unified_diff(before, after, "f", {.max_edit_distance = 10});
    EXPECT_EQ(capped.additions, 200);
    EXPECT_EQ(capped.deletions, 200);
    EXPECT_TRUE(capped.text.starts_with("--- a/f\n+++ b/f\n@@ -1,200 +1,200 @@\n"));
}

TEST(DiffTest, MyersFindsTheMinimalScript) {
    const DiffResult d = unified_diff("a\nb\nc\na\nb\nb\na\n", "c\nb\na\nb\na\nc\n", "f");
    EXPECT_EQ(d.additions + d.deletions, 5);  // the classic example: D = 5
}

}  // namespace
}  // namespace stockade::tools
