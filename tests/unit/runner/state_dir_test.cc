#include "runner/state_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using testing::HasErrc;
using ::testing::HasSubstr;

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

TEST_F(StateDirFiles, PruningDeletesTheOldestEndedSessionsOutputFirstButNeverOneInUse) {
    // A session is in use while its SessionPaths lives (its directory is locked).
    auto write = [&](const std::string& id, size_t bytes, std::chrono::hours age) {
        auto paths = open_session_dir(dir_, id);
        EXPECT_TRUE(paths);
        std::ofstream(paths->tool_output + "/bash-1.txt") << std::string(bytes, 'x');
        fs::last_write_time(paths->tool_output, fs::file_time_type::clock::now() - age);
        return std::move(paths).value();
    };
    const std::string oldest = write("s-old", 4000, std::chrono::hours(2)).tool_output;
    const std::string middle = write("s-mid", 4000, std::chrono::hours(1)).tool_output;
    const SessionPaths running = write("s-now", 4000, std::chrono::hours(3));  // in use
    const PruneResult pruned = prune_tool_outputs(dir_, 9000);
    EXPECT_TRUE(fs::is_empty(oldest));
    EXPECT_FALSE(fs::is_empty(middle));
    EXPECT_FALSE(fs::is_empty(running.tool_output)) << "a session in use is never pruned";
    EXPECT_EQ(pruned.freed, 4000U);
    EXPECT_EQ(pruned.kept, 8000U);
    // At least this much, whatever the cap (a tenant's pool making room); then nothing is left
    // to prune but the session in use.
    EXPECT_EQ(prune_tool_outputs(dir_, UINT64_MAX, 1).freed, 4000U);
    EXPECT_TRUE(fs::is_empty(middle));
    EXPECT_EQ(prune_tool_outputs(dir_, 0).freed, 0U);
    EXPECT_FALSE(fs::is_empty(running.tool_output));
}

TEST_F(StateDirFiles, ASessionInUseCannotBeOpenedASecondTime) {
    {
        auto first = open_session_dir(dir_, "s-abc");
        ASSERT_TRUE(first);
        auto second = open_session_dir(dir_, "s-abc");
        ASSERT_THAT(second, HasErrc(Errc::kFailedPrecondition));
        EXPECT_THAT(second.error().message, HasSubstr("in use by another stockade process"));
    }  // the first ends: its lock goes with it
    EXPECT_TRUE(open_session_dir(dir_, "s-abc"));
}

TEST(StateDirTest, TheStateDirectoryMustLieApartFromTheWorkspaceAndEveryBind) {
    EXPECT_TRUE(
        check_state_dir_apart("/home/u/.local/state/stockade", "/home/u/proj", {"/opt/sdk"}));
    for (const auto& [state, workspace] : std::vector<std::pair<std::string, std::string>>{
             {"/home/u/proj/.stockade", "/home/u/proj"},    // inside the workspace
             {"/home/u/.local/state/stockade", "/home/u"},  // a workspace of ~
             {"/home/u/proj", "/home/u/proj"}}) {
        auto apart = check_state_dir_apart(state, workspace, {});
        ASSERT_THAT(apart, HasErrc(Errc::kInvalidArgument)) << state;
        EXPECT_NE(apart.error().message.find(state), std::string::npos);
        EXPECT_NE(apart.error().message.find(workspace), std::string::npos);
        EXPECT_NE(apart.error().message.find("--state-dir"), std::string::npos);
    }
    EXPECT_THAT(check_state_dir_apart("/var/lib/st", "/w", {"/var/lib"}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(check_state_dir_apart("/var/lib/st", "/w", {"/var/lib/st/sessions/other"}),
                HasErrc(Errc::kInvalidArgument));
    // A shared prefix is not an overlap.
    EXPECT_TRUE(check_state_dir_apart("/home/u/proj-state", "/home/u/proj", {}));
}

TEST_F(StateDirFiles, ARelativeStateDirectoryIsResolvedAndCreated) {
    const fs::path cwd = fs::current_path();
    fs::current_path(dir_);
    auto resolved = resolve_state_dir("rel/state");
    fs::current_path(cwd);
    ASSERT_TRUE(resolved) << resolved.error().message;
    EXPECT_EQ(*resolved, fs::canonical(dir_).string() + "/rel/state");
    EXPECT_TRUE(fs::is_directory(*resolved));
}

TEST_F(StateDirFiles, ASymlinkBeneathTheStateDirectoryIsNeverFollowed) {
    const std::string elsewhere = dir_ + "/elsewhere";
    fs::create_directories(elsewhere);
    fs::create_directories(dir_ + "/state/sessions");
    fs::create_symlink(elsewhere, dir_ + "/state/sessions/s-abc");
    auto paths = open_session_dir(dir_ + "/state", "s-abc");
    ASSERT_THAT(paths, HasErrc(Errc::kPermissionDenied));
    EXPECT_NE(paths.error().message.find("never followed"), std::string::npos);
    EXPECT_TRUE(fs::is_empty(elsewhere)) << "nothing was created through the link";
    fs::remove(dir_ + "/state/sessions/s-abc");
    fs::create_directories(dir_ + "/state/sessions/s-abc");
    fs::create_symlink(elsewhere, dir_ + "/state/sessions/s-abc/tool-output");
    EXPECT_THAT(open_session_dir(dir_ + "/state", "s-abc"), HasErrc(Errc::kPermissionDenied));
}

}  // namespace
}  // namespace stockade::runner
