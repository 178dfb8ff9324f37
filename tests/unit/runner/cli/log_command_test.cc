#include "runner/cli/log_command.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace stockade::runner {
namespace {

using nlohmann::json;

TEST(EventLineSplitterTest, WaitsForTheRestOfALineReadInHalves) {
    EventLineSplitter lines;
    const std::string first = R"({"v":1,"seq":1,"type":"SessionStarted"})";
    const std::string second = R"({"v":1,"seq":2,"type":"ToolRequested","tool":"read"})";
    EXPECT_TRUE(lines.feed(first.substr(0, 10)).empty());
    auto events = lines.feed(first.substr(10) + "\n" + second.substr(0, 5));
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0]["type"], "SessionStarted");
    events = lines.feed(second.substr(5) + "\n");
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0]["tool"], "read");
    lines.finish();
    EXPECT_EQ(lines.skipped(), 0U);
}

TEST(EventLineSplitterTest, CountsWhatIsNotAnEventAndATornLastLine) {
    EventLineSplitter lines;
    const auto events = lines.feed(
        "not json\n"
        "[1,2]\n"
        "{\"v\":1}\n"
        "{\"v\":2,\"type\":\"ToolRequested\"}\n"
        "{\"v\":1,\"type\":7}\n"
        "\n"
        "{\"v\":1,\"type\":\"SessionEnded\"}\n"
        "{\"v\":1,\"type\":\"Tool");
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0]["type"], "SessionEnded");
    EXPECT_EQ(lines.skipped(), 5U) << "the blank line is not counted";
    lines.finish();
    EXPECT_EQ(lines.skipped(), 6U) << "a crash mid-append tore the last line";
}

}  // namespace
}  // namespace stockade::runner
