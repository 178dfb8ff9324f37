#include "runner/session/state_dir.h"

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
    // A state directory beneath dir_, opened as serve opens it.
    HostDir state(const std::string& relative = "") const {
        auto opened = resolve_state_dir(relative.empty() ? dir_ : dir_ + "/" + relative);
        EXPECT_TRUE(opened) << opened.error().message;
        return opened ? *opened : HostDir();
    }
    std::string dir_;
};

TEST_F(StateDirFiles, OpeningASessionCreatesItsDirectories) {
    auto paths = open_session_dir(state(), "s-abc");
    ASSERT_TRUE(paths);
    EXPECT_EQ(paths->events, dir_ + "/sessions/s-abc/events.jsonl");
    EXPECT_TRUE(fs::is_directory(paths->tool_output));
    EXPECT_THAT(open_session_dir(state(), "../escape"), HasErrc(Errc::kInvalidArgument));
}

TEST_F(StateDirFiles, PruningDeletesTheOldestEndedSessionsOutputFirstButNeverOneInUse) {
    // A session is in use while its SessionPaths lives (its directory is locked).
    auto write = [&](const std::string& id, size_t bytes, std::chrono::hours age) {
        auto paths = open_session_dir(state(), id);
        EXPECT_TRUE(paths);
        std::ofstream(paths->tool_output + "/bash-1.txt") << std::string(bytes, 'x');
        fs::last_write_time(paths->tool_output, fs::file_time_type::clock::now() - age);
        return std::move(paths).value();
    };
    const std::string oldest = write("s-old", 4000, std::chrono::hours(2)).tool_output;
    const std::string middle = write("s-mid", 4000, std::chrono::hours(1)).tool_output;
    const SessionPaths running = write("s-now", 4000, std::chrono::hours(3));  // in use
    const PruneResult pruned = prune_tool_outputs(state(), 9000);
    EXPECT_TRUE(fs::is_empty(oldest));
    EXPECT_FALSE(fs::is_empty(middle));
    EXPECT_FALSE(fs::is_empty(running.tool_output)) << "a session in use is never pruned";
    EXPECT_EQ(pruned.freed, 4000U);
    EXPECT_EQ(pruned.kept, 8000U);
    // At least this much, whatever the cap (a tenant's pool making room); then nothing is left
    // to prune but the session in use.
    EXPECT_EQ(prune_tool_outputs(state(), UINT64_MAX, 1).freed, 4000U);
    EXPECT_TRUE(fs::is_empty(middle));
    EXPECT_EQ(prune_tool_outputs(state(), 0).freed, 0U);
    EXPECT_FALSE(fs::is_empty(running.tool_output));
}

TEST_F(StateDirFiles, ASessionInUseCannotBeOpenedASecondTime) {
    {
        auto first = open_session_dir(state(), "s-abc");
        ASSERT_TRUE(first);
        auto second = open_session_dir(state(), "s-abc");
        ASSERT_THAT(second, HasErrc(Errc::kFailedPrecondition));
        EXPECT_THAT(second.error().message, HasSubstr("in use by another stockade process"));
    }  // the first ends: its lock goes with it
    EXPECT_TRUE(open_session_dir(state(), "s-abc"));
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
    EXPECT_EQ(resolved->path(), fs::canonical(dir_).string() + "/rel/state");
    EXPECT_TRUE(fs::is_directory(resolved->path()));
}

TEST_F(StateDirFiles, ASymlinkBeneathTheStateDirectoryIsNeverFollowed) {
    const std::string elsewhere = dir_ + "/elsewhere";
    fs::create_directories(elsewhere);
    fs::create_directories(dir_ + "/state/sessions");
    fs::create_symlink(elsewhere, dir_ + "/state/sessions/s-abc");
    auto paths = open_session_dir(state("state"), "s-abc");
    ASSERT_THAT(paths, HasErrc(Errc::kPermissionDenied));
    EXPECT_NE(paths.error().message.find("never followed"), std::string::npos);
    EXPECT_TRUE(fs::is_empty(elsewhere)) << "nothing was created through the link";
    fs::remove(dir_ + "/state/sessions/s-abc");
    fs::create_directories(dir_ + "/state/sessions/s-abc");
    fs::create_symlink(elsewhere, dir_ + "/state/sessions/s-abc/tool-output");
    EXPECT_THAT(open_session_dir(state("state"), "s-abc"), HasErrc(Errc::kPermissionDenied));
}

TEST_F(StateDirFiles, ResumingNeedsTheSessionsEventsAndCreatesNothingElse) {
    EXPECT_THAT(open_session_dir(state(), "s-none", /*must_exist=*/true), HasErrc(Errc::kNotFound));
    EXPECT_FALSE(fs::exists(dir_ + "/sessions/s-none")) << "a failed resume leaves nothing";
    { ASSERT_TRUE(open_session_dir(state(), "s-abc")); }
    EXPECT_THAT(open_session_dir(state(), "s-abc", true), HasErrc(Errc::kNotFound))
        << "a directory without events.jsonl is no session";
    std::ofstream(dir_ + "/sessions/s-abc/events.jsonl") << "{}\n";
    EXPECT_TRUE(open_session_dir(state(), "s-abc", true));
    // An events.jsonl that is a link (to another session's log, say) is not this session's.
    fs::remove(dir_ + "/sessions/s-abc/events.jsonl");
    fs::create_symlink("/etc/hostname", dir_ + "/sessions/s-abc/events.jsonl");
    EXPECT_THAT(open_session_dir(state(), "s-abc", true), HasErrc(Errc::kNotFound));
}

TEST_F(StateDirFiles, PruningNeverFollowsALinkOutOfTheStateDirectory) {
    // What lies outside, reachable through links planted where pruning looks.
    const std::string outside = dir_ + "/outside";
    fs::create_directories(outside + "/keep");
    std::ofstream(outside + "/keep/file.txt") << std::string(5000, 'k');
    fs::create_directories(dir_ + "/state/sessions");
    fs::create_symlink(outside, dir_ + "/state/sessions/s-link");  // a session that is a link
    {
        auto paths = open_session_dir(state("state"), "s-old");
        ASSERT_TRUE(paths);
        std::ofstream(paths->tool_output + "/bash-1.txt") << std::string(3000, 'x');
        fs::create_symlink(outside + "/keep", paths->tool_output + "/link");  // a link inside
        fs::create_directories(paths->tool_output + "/process-logs");
        std::ofstream(paths->tool_output + "/process-logs/p1.log") << std::string(1000, 'y');
    }
    const PruneResult pruned = prune_tool_outputs(state("state"), 0);
    EXPECT_EQ(pruned.freed, 4000U) << "the files of the session's own tool-output, no more";
    EXPECT_TRUE(fs::is_empty(dir_ + "/state/sessions/s-old/tool-output"));
    EXPECT_TRUE(fs::exists(outside + "/keep/file.txt")) << "deleted through a link";
    EXPECT_TRUE(fs::is_symlink(dir_ + "/state/sessions/s-link"));
}

TEST_F(StateDirFiles, ATenantsStateIsOpenedBeneathTheStateDirectoryWithoutLinks) {
    const HostDir root = state("state");
    auto tenant = open_state_subdir(root, {"tenants", "acme"});
    ASSERT_TRUE(tenant) << tenant.error().message;
    EXPECT_EQ(tenant->path(), root.path() + "/tenants/acme");
    const std::string elsewhere = dir_ + "/elsewhere";
    fs::create_directories(elsewhere);
    fs::create_symlink(elsewhere, dir_ + "/state/tenants/beta");
    EXPECT_THAT(open_state_subdir(root, {"tenants", "beta"}), HasErrc(Errc::kPermissionDenied));
    EXPECT_TRUE(fs::is_empty(elsewhere));
}

}  // namespace
}  // namespace stockade::runner
