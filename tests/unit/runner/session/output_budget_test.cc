#include "runner/session/output_budget.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;

class OutputBudgetTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "budget-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        dir_ = templ;
        fs::create_directory(dir_ / "process-logs");
        fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(fd_, 0);
    }
    void TearDown() override {
        ::close(fd_);
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    // A file of `bytes` whose mtime is `age` seconds in the past.
    void file(const std::string& name, size_t bytes, int age) {
        std::ofstream(dir_ / name) << std::string(bytes, 'x');
        const auto when = fs::file_time_type::clock::now() - std::chrono::seconds(age);
        fs::last_write_time(dir_ / name, when);
    }
    [[nodiscard]] bool exists(const std::string& name) const { return fs::exists(dir_ / name); }

    fs::path dir_;
    int fd_ = -1;
};

TEST_F(OutputBudgetTest, WhatTheDirectoryHoldsCountsFromTheStart) {
    file("grep-1.txt", 300, 10);
    file("process-logs/p1.log", 200, 5);
    OutputBudget budget(1000, fd_);
    EXPECT_EQ(budget.used(), 500U);
    EXPECT_EQ(budget.take(400), 400U);
    EXPECT_EQ(budget.used(), 900U);
}

TEST_F(OutputBudgetTest, TheOldestFilesGoFirstAndALogInUseNever) {
    file("process-logs/p1.log", 400, 30);  // oldest, but its process still writes it
    file("grep-1.txt", 300, 20);
    file("glob-2.txt", 200, 10);
    OutputBudget budget(1000, fd_);
    budget.set_in_use("p1.log", true);
    EXPECT_EQ(budget.take(300), 300U) << "grep-1.txt made room";
    EXPECT_TRUE(exists("process-logs/p1.log"));
    EXPECT_FALSE(exists("grep-1.txt"));
    EXPECT_TRUE(exists("glob-2.txt"));
    // Nothing more to prune but the log in use: only what is left is granted.
    EXPECT_EQ(budget.take(500), 300U);
    EXPECT_FALSE(exists("glob-2.txt"));
    EXPECT_EQ(budget.take(1), 0U);
    // Once its process has ended, the log can go too.
    budget.set_in_use("p1.log", false);
    EXPECT_EQ(budget.take(100), 100U);
    EXPECT_FALSE(exists("process-logs/p1.log"));
}

TEST(DiskPoolTest, GrantsUpToItsCapReclaimingEndedSessionsFirst) {
    uint64_t reclaimable = 300;  // ended sessions' output the reclaim may delete
    std::vector<uint64_t> asked;
    DiskPool pool(1000, 600, [&](uint64_t need) {
        asked.push_back(need);
        const uint64_t freed = std::min(need, reclaimable);
        reclaimable -= freed;
        return freed;
    });
    EXPECT_EQ(pool.take(300), 300U);
    EXPECT_TRUE(asked.empty()) << "room enough: nothing reclaimed";
    EXPECT_EQ(pool.take(200), 200U);  // 1100 > 1000: 100 reclaimed first
    EXPECT_EQ(asked, std::vector<uint64_t>{100});
    EXPECT_EQ(pool.take(500), 200U) << "what the reclaim freed, and no more";
    EXPECT_EQ(pool.used(), 1000U);
    pool.give_back(400);
    EXPECT_EQ(pool.used(), 600U);
    EXPECT_EQ(pool.written(), 300U + 200U + 200U);
}

TEST_F(OutputBudgetTest, TheTenantsPoolBoundsTheSessionBelowItsOwnCap) {
    file("grep-1.txt", 300, 20);                                 // this session's own, older output
    auto pool = std::make_shared<DiskPool>(1000, 900, nullptr);  // others hold 600 of it
    OutputBudget budget(10'000, fd_, pool);
    // 100 left in the pool; the session's own oldest file goes to make room for the rest.
    EXPECT_EQ(budget.take(350), 350U);
    EXPECT_FALSE(exists("grep-1.txt"));
    EXPECT_EQ(pool->used(), 900U - 300U + 350U);
    EXPECT_EQ(budget.take(100), 50U) << "what is left of the pool, and nothing of its own to prune";
    EXPECT_EQ(budget.take(10), 0U);
    EXPECT_THAT(budget.limit_met(), ::testing::HasSubstr("its tenant's disk quota"));
    pool->give_back(100);
    EXPECT_FALSE(budget.take_all(101)) << "all or nothing";
    EXPECT_EQ(pool->used(), 900U) << "what it could have had is given back";
    EXPECT_TRUE(budget.take_all(100));
    EXPECT_THAT(OutputBudget(10, fd_).limit_met(),
                ::testing::HasSubstr("the session's output budget"));
}

TEST_F(OutputBudgetTest, WhatIsGivenBackIsTakenAgainAndNothingIsEverGrantedPastTheCap) {
    file("grep-1.txt", 300, 20);
    auto pool = std::make_shared<DiskPool>(1000, 300, nullptr);
    OutputBudget budget(800, fd_, pool);
    // Room taken for a note, less what it needed: the rest is back for the next write.
    EXPECT_EQ(budget.take(200), 200U);
    budget.give_back(150);
    EXPECT_EQ(budget.used(), 350U);
    EXPECT_EQ(pool->used(), 350U);
    EXPECT_EQ(pool->written(), 50U) << "what was given back was never written";
    // Asked for much more than is left, again and again: the cap is never passed, old output
    // goes to make room, and what could not be had is not counted.
    uint64_t granted = 0;
    for (int i = 0; i < 10; ++i) {
        granted += budget.take(400);
        EXPECT_LE(budget.used(), budget.cap());
        EXPECT_LE(pool->used(), pool->cap());
    }
    EXPECT_FALSE(exists("grep-1.txt"));
    EXPECT_EQ(granted, 800U - 50U) << "the cap, less the 50 still held";
    EXPECT_EQ(budget.used(), 800U);
    EXPECT_FALSE(budget.take_all(1));
    EXPECT_EQ(pool->written(), 800U);
    budget.give_back(10'000);  // more than it holds: it holds nothing, never less
    EXPECT_EQ(budget.used(), 0U);
    EXPECT_EQ(pool->used(), 0U);
}

}  // namespace
}  // namespace stockade::runner
