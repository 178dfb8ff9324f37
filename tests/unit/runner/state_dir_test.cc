#include "runner/state_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using testing::HasErrc;

TEST(StateDirTest, SessionIdsAreFreshAndSafeAsFileNames) {
    std::string a = new_session_id();
    std::string b = new_session_id();
    EXPECT_NE(a, b);
    EXPECT_TRUE(valid_session_id(a));
    EXPECT_EQ(a.rfind("s-", 0), 0U);
    for (const char* bad : {"", "../x", "a/b", "a b", "x\n"}) {
        EXPECT_FALSE(valid_session_id(bad)) << bad;
    }
    EXPECT_FALSE(valid_session_id(std::string(65, 'a')));
}

class StateDirFiles : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-state-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string dir_;
};

TEST_F(StateDirFiles, OpeningASessionCreatesItsDirectories) {
    auto paths = open_session_dir(dir_, "s-abc");
    ASSERT_TRUE(paths);
    EXPECT_EQ(paths->events, dir_ + "/sessions/s-abc/events.jsonl");
    EXPECT_TRUE(fs::is_directory(paths->tool_output));
    EXPECT_THAT(open_session_dir(dir_, "../escape"), HasErrc(Errc::kInvalidArgument));
}

TEST_F(StateDirFiles, PruningDeletesTheOldestSessionsOutputFirstButNeverTheCurrent) {
    auto write = [&](const std::string& id, size_t bytes) {
        auto paths = open_session_dir(dir_, id);
        std::ofstream(paths->tool_output + "/bash-1.txt") << std::string(bytes, 'x');
        return paths->tool_output;
    };
    std::string oldest = write("s-old", 4000);
    fs::last_write_time(oldest, fs::file_time_type::clock::now() - std::chrono::hours(2));
    std::string middle = write("s-mid", 4000);
    fs::last_write_time(middle, fs::file_time_type::clock::now() - std::chrono::hours(1));
    std::string current = write("s-now", 4000);
    fs::last_write_time(current, fs::file_time_type::clock::now() - std::chrono::hours(3));
    prune_tool_outputs(dir_, "s-now", 9000);
    EXPECT_TRUE(fs::is_empty(oldest));
    EXPECT_FALSE(fs::is_empty(middle));
    EXPECT_FALSE(fs::is_empty(current)) << "the running session's output is never pruned";
}

}  // namespace
}  // namespace stockade::runner
