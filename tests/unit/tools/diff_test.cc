#include "tools/diff.h"

#include <random>
#include <string>
#include <vector>

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

// Applies `diff` to `before` as `patch` would, checking every context and deleted line against
// `before` at the line its hunk header names. Returns the patched text, or "<mismatch ...>".
std::string apply(const std::string& before, const std::string& diff) {
    std::vector<std::string> old_lines;
    for (size_t i = 0; i < before.size();) {
        const size_t nl = before.find('\n', i);
        const size_t end = nl == std::string::npos ? before.size() : nl + 1;
        old_lines.push_back(before.substr(i, end - i));
        i = end;
    }
    std::string out;
    size_t next = 0;  // the first old line not yet copied
    size_t pos = diff.find("@@ -");
    while (pos != std::string::npos) {
        size_t old_first = std::stoul(diff.substr(pos + 4));
        const size_t header_end = diff.find('\n', pos) + 1;
        const std::string header = diff.substr(pos, header_end - pos);
        const size_t comma = header.find(',');
        const size_t space = header.find(' ', 4);
        const bool empty = comma != std::string::npos && comma < space &&
                           std::stoul(header.substr(comma + 1)) == 0;
        const size_t at = empty ? old_first : old_first - 1;  // 0-based first old line
        for (; next < at; ++next) {
            out += old_lines[next];
        }
        size_t i = header_end;
        while (i < diff.size() && diff.compare(i, 2, "@@") != 0) {
            size_t nl = diff.find('\n', i);
            std::string line = diff.substr(i + 1, nl + 1 - (i + 1));
            const char kind = diff[i];
            i = nl + 1;
            const std::string no_newline = "\\ No newline at end of file\n";
            if (diff.compare(i, no_newline.size(), no_newline) == 0) {
                line.pop_back();
                i += no_newline.size();
            }
            if (kind == '+') {
                out += line;
                continue;
            }
            if (next >= old_lines.size() || old_lines[next] != line) {
                return "<mismatch at old line " + std::to_string(next + 1) + ">";
            }
            if (kind == ' ') {
                out += line;
            }
            ++next;
        }
        pos = i < diff.size() ? i : std::string::npos;
    }
    for (; next < old_lines.size(); ++next) {
        out += old_lines[next];
    }
    return out;
}

// Random texts from a few short lines (so lines repeat and alignments are ambiguous), changed
// in a few places: the diff always patches `before` into `after`, with hunk headers that name
// the right lines however much of the text is shared at either end.
TEST(DiffTest, RandomChangesPatchBackExactly) {
    std::mt19937 rng(20261202);
    const std::vector<std::string> pool = {"a\n", "b\n", "a\n", "{\n", "}\n", "\n", "x", "b"};
    auto text = [&](size_t n) {
        std::string t;
        for (size_t i = 0; i < n; ++i) {
            const std::string& piece = pool[rng() % pool.size()];
            t += piece.ends_with('\n') || i + 1 == n ? piece : piece + "\n";
        }
        return t;
    };
    for (int round = 0; round < 3000; ++round) {
        // Now and then a long start or end, so that the block-wise comparison of the shared
        // start and end crosses blocks before it finds the change.
        const std::string head = rng() % 4 == 0 ? text(1000 + rng() % 3000) : "";
        const std::string tail = rng() % 4 == 0 ? text(1000 + rng() % 3000) : "";
        const std::string before = head + text(rng() % 40) + tail;
        std::string after = before;
        for (unsigned edits = rng() % 4; edits > 0; --edits) {
            const size_t at = after.empty() ? 0 : rng() % (after.size() + 1);
            const size_t cut =
                after.empty() ? 0 : rng() % std::min<size_t>(after.size() - at + 1, 8);
            after.replace(at, cut, text(rng() % 3));
        }
        const DiffResult d =
            unified_diff(before, after, "f", {.context = static_cast<int>(rng() % 4)});
        ASSERT_EQ(apply(before, d.text), after) << "before:\n"
                                                << before << "\nafter:\n"
                                                << after << "\ndiff:\n"
                                                << d.text;
    }
}

TEST(DiffTest, AChangeDeepInABigFileIsNumberedFromTheTop) {
    std::string before = lines(1, 200000);
    std::string after = before;
    after.replace(after.find("\n150000\n") + 1, 7, "changed\n");
    const DiffResult d = unified_diff(before, after, "big");
    EXPECT_EQ(d.text,
              "--- a/big\n+++ b/big\n@@ -149997,7 +149997,7 @@\n"
              " 149997\n 149998\n 149999\n-150000\n+changed\n 150001\n 150002\n 150003\n");
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
