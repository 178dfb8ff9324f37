#include "runner/mcp/line_framer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

std::vector<std::string> texts(const std::vector<FramedLine>& lines) {
    std::vector<std::string> out;
    for (const auto& line : lines) {
        out.push_back(line.oversized ? "<oversized>" : line.text);
    }
    return out;
}

TEST(LineFramerTest, SplitsOnNewlinesAcrossFeeds) {
    LineFramer framer(100);
    std::vector<FramedLine> lines;
    framer.feed("{\"a\":1}\n{\"b\"", lines);
    framer.feed(":2}\n", lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
    EXPECT_EQ(framer.buffered_bytes(), 0U);
}

TEST(LineFramerTest, StripsCarriageReturnAndSkipsEmptyLines) {
    LineFramer framer(100);
    std::vector<FramedLine> lines;
    framer.feed("a\r\n\n\r\nb\n", lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"a", "b"}));
}

TEST(LineFramerTest, LineAtTheCapIsKept) {
    LineFramer framer(4);
    std::vector<FramedLine> lines;
    framer.feed("abcd\n", lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"abcd"}));
}

TEST(LineFramerTest, OversizedLineIsReportedOnceAndDiscardedUpToItsNewline) {
    LineFramer framer(4);
    std::vector<FramedLine> lines;
    framer.feed("abc", lines);
    framer.feed("de", lines);  // crosses the cap: reported now, before the newline arrives
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"<oversized>"}));
    EXPECT_EQ(framer.buffered_bytes(), 0U);
    framer.feed(std::string(1000, 'x'), lines);
    EXPECT_EQ(framer.buffered_bytes(), 0U);
    framer.feed("yy\nok\n", lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"<oversized>", "ok"}));
}

TEST(LineFramerTest, FinishDeliversALastLineWithoutNewline) {
    LineFramer framer(100);
    std::vector<FramedLine> lines;
    framer.feed("a\nlast", lines);
    framer.finish(lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"a", "last"}));
}

TEST(LineFramerTest, FinishDropsAnOversizedTail) {
    LineFramer framer(2);
    std::vector<FramedLine> lines;
    framer.feed("abc", lines);
    framer.finish(lines);
    EXPECT_EQ(texts(lines), (std::vector<std::string>{"<oversized>"}));
}

}  // namespace
}  // namespace stockade::mcp
