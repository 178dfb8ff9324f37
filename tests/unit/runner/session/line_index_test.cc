#include "runner/session/line_index.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::runner {
namespace {

// Feeds `text` to `index` in pieces of `piece` bytes, as output arrives.
void feed(LineIndex& index, const std::string& text, std::size_t piece) {
    for (std::size_t at = 0; at < text.size(); at += piece) {
        index.append(at, std::string_view(text).substr(at, piece));
    }
}

// "line 1\nline 2\n..." and where each line starts.
std::string numbered(int lines, std::vector<std::uint64_t>& starts) {
    std::string text;
    for (int i = 1; i <= lines; ++i) {
        starts.push_back(text.size());
        text += "line " + std::to_string(i) + "\n";
    }
    return text;
}

TEST(LineIndexTest, KnowsTheRecentLinesExactlyHoweverTheOutputArrived) {
    for (std::size_t piece : {1U, 3U, 1000U}) {
        std::vector<std::uint64_t> starts;
        const std::string text = numbered(20, starts);
        LineIndex index(5, 4);
        feed(index, text, piece);
        EXPECT_EQ(index.newlines(), 20U);
        EXPECT_EQ(index.last_line_start(), text.size());  // line 21, empty so far
        EXPECT_EQ(index.recent_start(1), 0U);
        for (std::uint64_t line = 17; line <= 20; ++line) {
            EXPECT_EQ(index.recent_start(line), starts[line - 1]) << "line " << line;
        }
        EXPECT_EQ(index.recent_start(21), text.size());
        EXPECT_EQ(index.recent_start(16), std::nullopt) << "older than the last five lines";
        EXPECT_EQ(index.recent_start(22), std::nullopt) << "past the end";
    }
}

TEST(LineIndexTest, MarksEveryNthLineForTheWholeOutput) {
    std::vector<std::uint64_t> starts;
    const std::string text = numbered(20, starts);
    LineIndex index(2, 4);
    feed(index, text, 7);
    // Marks at lines 1, 5, 9, 13, 17, 21.
    EXPECT_EQ(index.mark_before_line(1).line, 1U);
    EXPECT_EQ(index.mark_before_line(4).line, 1U);
    const LineIndex::Mark mark = index.mark_before_line(11);
    EXPECT_EQ(mark.line, 9U);
    EXPECT_EQ(mark.offset, starts[8]);
    EXPECT_EQ(index.mark_before_line(1000).line, 21U) << "past the end: the last mark";

    const LineIndex::Mark by_offset = index.mark_before_offset(starts[13] + 2);  // in line 14
    EXPECT_EQ(by_offset.line, 13U);
    EXPECT_EQ(by_offset.offset, starts[12]);
    EXPECT_EQ(index.mark_before_offset(starts[12]).line, 13U) << "a mark's own offset";
    EXPECT_EQ(index.mark_before_offset(0).line, 1U);
}

TEST(LineIndexTest, OutputWithoutNewlinesIsOneLine) {
    LineIndex index(10);
    index.append(0, "no newline here");
    EXPECT_EQ(index.newlines(), 0U);
    EXPECT_EQ(index.last_line_start(), 0U);
    EXPECT_EQ(index.recent_start(2), std::nullopt);
}

}  // namespace
}  // namespace stockade::runner
