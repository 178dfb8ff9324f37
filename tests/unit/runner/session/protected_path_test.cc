// check_protected_path inside a workspace looks beneath the descriptor the session opened, one
// component at a time, never following a link: what the workspace's path leads to now, or
// what a link planted in it leads to, is never where the check looks.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/session/sandbox_config.h"
#include "tests/testing/matchers.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

class ProtectedPathTest : public ::testing::Test {
protected:
    void SetUp() override {
        fs::create_directories(dir_ + "/ws/sub");
        auto opened = HostDir::open(dir_ + "/ws");
        ASSERT_THAT(opened, IsOk());
        ws_ = *opened;
    }

    Result<std::string> check(const std::string& path) const {
        return check_protected_path("--mask", path, "/", {ws_.path()}, ws_);
    }

    testing::TempDir temp_{"stockade-protected"};
    const std::string dir_ = temp_.path();
    HostDir ws_;
};

TEST_F(ProtectedPathTest, PathsWithoutALinkPassWhetherOrNotTheyExist) {
    ::close(::creat((dir_ + "/ws/sub/.env").c_str(), 0600));
    EXPECT_THAT(check(dir_ + "/ws/sub/.env"), IsOk());
    EXPECT_THAT(check(dir_ + "/ws/sub/not-yet/deeper"), IsOk());
    EXPECT_THAT(check(dir_ + "/ws"), IsOk());
    auto normal = check(dir_ + "/ws/sub/../sub/.env/");
    ASSERT_THAT(normal, IsOk());
    EXPECT_EQ(*normal, dir_ + "/ws/sub/.env");
}

TEST_F(ProtectedPathTest, ALinkOnTheWaySaysWhereItLeads) {
    fs::create_directory_symlink("/etc", dir_ + "/ws/etc-link");
    auto out = check(dir_ + "/ws/etc-link/passwd");
    ASSERT_THAT(out, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(out.error().message, HasSubstr("\"" + dir_ + "/ws/etc-link\" is a symbolic link"));
    EXPECT_THAT(out.error().message, HasSubstr("leads out of the workspace, to \"/etc\""));

    fs::create_symlink("sub", dir_ + "/ws/relative");
    out = check(dir_ + "/ws/relative/x");
    ASSERT_THAT(out, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(out.error().message, HasSubstr("(\"" + dir_ + "/ws/sub\")"));

    fs::create_symlink("gone", dir_ + "/ws/dangling");
    out = check(dir_ + "/ws/dangling");
    ASSERT_THAT(out, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(out.error().message, HasSubstr("it points nowhere"));
}

TEST_F(ProtectedPathTest, TheCheckLooksAtTheDirectoryOpenedNotWhatItsPathLeadsToNow) {
    // The opened workspace holds a link; its path is then swapped for a directory without one.
    fs::create_directory_symlink("/", dir_ + "/ws/sub/link");
    fs::rename(dir_ + "/ws", dir_ + "/ws.opened");
    fs::create_directories(dir_ + "/elsewhere/sub/link");
    fs::create_directory_symlink(dir_ + "/elsewhere", dir_ + "/ws");
    auto out = check(dir_ + "/ws/sub/link/x");
    ASSERT_THAT(out, HasErrc(Errc::kInvalidArgument)) << "the path's new target was looked at";
    EXPECT_THAT(out.error().message, HasSubstr("symbolic link"));
    // And the other way round: a link at the path's new target is not the workspace's.
    fs::create_directories(dir_ + "/ws.opened/plain");
    fs::create_directory_symlink("/", dir_ + "/elsewhere/plain");
    EXPECT_THAT(check(dir_ + "/ws/plain/x"), IsOk());
}

TEST_F(ProtectedPathTest, ExistenceIsLookedAtTheSameWay) {
    ::close(::creat((dir_ + "/ws/sub/file").c_str(), 0600));
    fs::create_directory_symlink("/etc", dir_ + "/ws/etc-link");
    EXPECT_TRUE(protected_path_exists(dir_ + "/ws/sub/file", ws_));
    EXPECT_TRUE(protected_path_exists(dir_ + "/ws/sub", ws_));
    EXPECT_FALSE(protected_path_exists(dir_ + "/ws/sub/missing", ws_));
    // /etc/passwd exists on the host; through a link it is not followed, and the link counts.
    EXPECT_TRUE(protected_path_exists(dir_ + "/ws/etc-link/passwd", ws_));
    EXPECT_TRUE(protected_path_exists(dir_ + "/ws/etc-link/no-such-file-anywhere", ws_));
    // Outside the workspace: an operator's path, looked at by path.
    EXPECT_TRUE(protected_path_exists("/etc/passwd", ws_));
    EXPECT_FALSE(protected_path_exists("/etc/no-such-file-anywhere", ws_));
}

}  // namespace
}  // namespace stockade::runner
