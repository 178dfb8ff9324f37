#include "runner/output_budget.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace stockade::runner
