#include "common/host_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

TEST(SplitDirNameTest, TakesRelativeNamesOfSafeComponentsOnly) {
    EXPECT_THAT(split_dir_name("projects/api").value(), ElementsAre("projects", "api"));
    EXPECT_THAT(split_dir_name("a.b_c-1").value(), ElementsAre("a.b_c-1"));
    EXPECT_THAT(split_dir_name("...").value(), ElementsAre("..."));
    for (const std::string& bad :
         std::vector<std::string>{"", "/abs", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a b",
                                  "a\\b", "a\nb", std::string("a\0b", 3), "caf\xc3\xa9",
                                  std::string(256, 'x'), std::string(1025, 'a')}) {
        auto split = split_dir_name(bad);
        ASSERT_THAT(split, HasErrc(Errc::kInvalidArgument)) << bad;
        EXPECT_THAT(split.error().message, HasSubstr("e.g. projects/api"));
    }
    std::string deep = "a";
    for (int i = 1; i < 32; ++i) {
        deep += "/a";
    }
    EXPECT_THAT(split_dir_name(deep), IsOk());
    EXPECT_THAT(split_dir_name(deep + "/a"), HasErrc(Errc::kInvalidArgument)) << "33 components";
}

TEST(PathWithinTest, ComparesWholeComponents) {
    EXPECT_TRUE(path_within("/srv/a", "/srv/a"));
    EXPECT_TRUE(path_within("/srv/a/b", "/srv/a"));
    EXPECT_TRUE(path_within("/srv/a", "/"));
    EXPECT_FALSE(path_within("/srv/ab", "/srv/a"));
    EXPECT_FALSE(path_within("/srv", "/srv/a"));
}

class HostDirTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-hostdir-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = fs::canonical(tmpl).string();
        fs::create_directories(dir_ + "/root");
        fs::create_directories(dir_ + "/outside");
        root_ = HostDir::open(dir_ + "/root").value();
    }
    void TearDown() override { fs::remove_all(dir_); }

    Result<UniqueFd> open(const std::string& name, bool create = false) const {
        auto components = split_dir_name(name);
        EXPECT_THAT(components, IsOk());
        return open_dir_beneath(root_.fd(), *components,
                                create ? std::optional(DirCreation{.mode = 0750}) : std::nullopt);
    }

    std::string dir_;
    HostDir root_;
};

TEST_F(HostDirTest, OpeningNamesTheRealPathAndHoldsTheDirectory) {
    fs::create_symlink(dir_ + "/root", dir_ + "/alias");
    auto opened = HostDir::open(dir_ + "/alias");
    ASSERT_THAT(opened, IsOk());
    EXPECT_EQ(opened->path(), dir_ + "/root") << "the operator's link is followed, and resolved";
    const HostDir copy = *opened;
    EXPECT_EQ(copy.fd(), opened->fd()) << "copies share the descriptor";
    EXPECT_THAT(HostDir::open(dir_ + "/missing"), HasErrc(Errc::kNotFound));
    std::ofstream(dir_ + "/file") << "x";
    EXPECT_FALSE(HostDir::open(dir_ + "/file"));
}

TEST_F(HostDirTest, ARemovedDirectoryHasNoPath) {
    fs::create_directories(dir_ + "/gone");
    auto opened = HostDir::open(dir_ + "/gone");
    ASSERT_THAT(opened, IsOk());
    fs::remove(dir_ + "/gone");
    EXPECT_THAT(path_of_fd(opened->fd()), HasErrc(Errc::kNotFound));
}

TEST_F(HostDirTest, CreatesMissingDirectoriesWithTheirModeWhateverTheUmask) {
    const mode_t old = ::umask(0077);
    auto made = open("a/b/c", /*create=*/true);
    ::umask(old);
    ASSERT_THAT(made, IsOk());
    EXPECT_EQ(path_of_fd(made->get()).value(), dir_ + "/root/a/b/c");
    for (const char* d : {"/root/a", "/root/a/b", "/root/a/b/c"}) {
        EXPECT_EQ(fs::status(dir_ + d).permissions(),
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec)
            << d;
    }
    EXPECT_THAT(open("a/b/c"), IsOk()) << "and opens what exists";
    EXPECT_THAT(open("a/x"), HasErrc(Errc::kNotFound)) << "without create, nothing is made";
}

TEST_F(HostDirTest, ASymlinkAnywhereOnTheWayIsRefusedAndNothingIsCreatedThroughIt) {
    fs::create_symlink(dir_ + "/outside", dir_ + "/root/esc");
    fs::create_directories(dir_ + "/root/in");
    fs::create_symlink("../in", dir_ + "/root/rel");  // even one that stays beneath the root
    for (const std::string name : {"esc", "esc/proj", "rel", "rel/proj"}) {
        for (const bool create : {false, true}) {
            auto opened = open(name, create);
            ASSERT_THAT(opened, HasErrc(Errc::kPermissionDenied)) << name;
            EXPECT_EQ(opened.error().sys_errno, ELOOP);
            EXPECT_THAT(opened.error().message, HasSubstr("symbolic link"));
        }
    }
    EXPECT_TRUE(fs::is_empty(dir_ + "/outside"));
    EXPECT_TRUE(fs::is_empty(dir_ + "/root/in"));
    // Deeper: a link below a real directory.
    fs::create_directories(dir_ + "/root/p");
    fs::create_symlink("/", dir_ + "/root/p/q");
    EXPECT_THAT(open("p/q/r", true), HasErrc(Errc::kPermissionDenied));
    EXPECT_FALSE(fs::exists("/r"));
}

TEST_F(HostDirTest, AFileOnTheWayIsNotADirectory) {
    std::ofstream(dir_ + "/root/f") << "x";
    EXPECT_THAT(open("f"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(open("f/g", true), HasErrc(Errc::kInvalidArgument));
    ASSERT_EQ(::mkfifo((dir_ + "/root/fifo").c_str(), 0600), 0);
    EXPECT_THAT(open("fifo"), HasErrc(Errc::kInvalidArgument)) << "a FIFO is never opened";
}

TEST_F(HostDirTest, TheRootItselfIsWhereAnEmptyListLeads) {
    auto same = open_dir_beneath(root_.fd(), {});
    ASSERT_THAT(same, IsOk());
    EXPECT_EQ(path_of_fd(same->get()).value(), root_.path());
    EXPECT_NE(same->get(), root_.fd()) << "a descriptor of its own";
}

}  // namespace
}  // namespace stockade
