#include "workspace/exit_report.h"

#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::workspace {
namespace {

TEST(ExitReportTest, AStatusAloneIsFourBytesAsBefore) {
    const std::string bytes = encode_exit_report({.wait_status = 0x0100});
    EXPECT_EQ(bytes, std::string("\x00\x01\x00\x00", 4));
    auto report = decode_exit_report(bytes);
    ASSERT_TRUE(report.has_value());
    EXPECT_EQ(report->wait_status, 0x0100);
    EXPECT_EQ(report->leftovers.count, 0U);
}

TEST(ExitReportTest, LeftoversTravelWithTheStatusNamesMadePlain) {
    ExitReport sent{.wait_status = SIGTERM,
                    .leftovers = {.count = 20, .names = {"sleep", "evil\nPASS", "python3"}}};
    for (int i = 0; i < 20; ++i) {
        sent.leftovers.names.push_back("n" + std::to_string(i));
    }
    const std::string bytes = encode_exit_report(sent);
    EXPECT_LE(bytes.size(), kMaxExitReportBytes);
    auto got = decode_exit_report(bytes);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->wait_status, SIGTERM);
    EXPECT_EQ(got->leftovers.count, 20U);
    ASSERT_EQ(got->leftovers.names.size(), kMaxLeftoverNames);
    EXPECT_EQ(got->leftovers.names[1], "evil?PASS");
    EXPECT_EQ(got->leftovers.names[2], "python3");
}

TEST(ExitReportTest, ATruncatedOrForgedTailIsNoReport) {
    EXPECT_FALSE(decode_exit_report("").has_value());
    EXPECT_FALSE(decode_exit_report(std::string("\0\0\0", 3)).has_value());
    const std::string status("\0\0\0\0", 4);
    for (const char* tail : {"junk", "left \n", "left 0\n", "left 2", "left -1\n", "left 2\nx"}) {
        EXPECT_FALSE(decode_exit_report(status + tail).has_value()) << tail;
    }
    EXPECT_TRUE(decode_exit_report(status + "left 2\na\nb\n").has_value());
}

}  // namespace
}  // namespace stockade::workspace
