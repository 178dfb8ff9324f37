#include "runner/session/event_log.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/unique_fd.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

class EventLogTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-events-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/events.jsonl";
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string dir_;
    std::string path_;
    testing::FdLeakChecker fd_leak_checker_;
};

TEST_F(EventLogTest, AppendsVersionedNumberedEventsThatReadBack) {
    {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        log->record("ToolRequested", {{"call", "c1"}, {"tool", "read"}}, true);
        log->record("FileRead", {{"path", "/w/a"}, {"sha256", "ab"}}, true);
    }
    auto replay = EventLog::read_all(path_);
    ASSERT_TRUE(replay);
    ASSERT_EQ(replay->events.size(), 2U);
    EXPECT_EQ(replay->skipped, 0U);
    const auto& first = replay->events[0];
    EXPECT_EQ(first["v"], kEventSchemaVersion);
    EXPECT_EQ(first["seq"], 1);
    EXPECT_EQ(first["session"], "s-1");
    EXPECT_EQ(first["type"], "ToolRequested");
    EXPECT_EQ(first["tool"], "read");
    EXPECT_EQ(replay->events[1]["seq"], 2);
    EXPECT_EQ(replay->events[1]["path"], "/w/a");
}

TEST_F(EventLogTest, ADurableEventIsInTheFileWhenRecordReturns) {
    auto log = EventLog::open(path_, "s-1");
    ASSERT_TRUE(log);
    for (int i = 1; i <= 50; ++i) {
        log->record("FileModified", {{"n", i}}, true);
        // Another reader (a crash's survivor) sees it at once, before any sync is known done.
        auto replay = EventLog::read_all(path_);
        ASSERT_TRUE(replay);
        ASSERT_EQ(replay->events.size(), static_cast<size_t>(i));
        EXPECT_EQ(replay->events.back()["n"], i);
    }
    log->flush();
}

TEST_F(EventLogTest, ThreadsRecordingDurableEventsWhileLogsCloseLoseNothing) {
    // Logs closed while their syncs are queued or running: each closes its own descriptor
    // (FdLeakChecker) and every event is there, numbered once.
    constexpr int kThreads = 6;
    constexpr int kEvents = 150;
    for (int round = 0; round < 20; ++round) {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&log, t] {
                for (int i = 0; i < kEvents; ++i) {
                    log->record("ToolCompleted", {{"t", t}, {"i", i}}, i % 3 == 0);
                }
            });
        }
        for (auto& thread : threads) {
            thread.join();
        }
    }
    auto replay = EventLog::read_all(path_);
    ASSERT_TRUE(replay);
    ASSERT_EQ(replay->events.size(), size_t{20} * kThreads * kEvents);
    for (size_t i = 0; i < replay->events.size(); ++i) {
        ASSERT_EQ(replay->events[i]["seq"], i + 1);
    }
}

TEST_F(EventLogTest, SequenceContinuesWhenAResumedSessionReopensItsLog) {
    {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        log->record("SessionStarted", nlohmann::json::object(), true);
    }
    auto log = EventLog::open(path_, "s-1");
    ASSERT_TRUE(log);
    log->record("SessionResumed", nlohmann::json::object(), true);
    auto replay = EventLog::read_all(path_);
    ASSERT_TRUE(replay);
    ASSERT_EQ(replay->events.size(), 2U);
    EXPECT_EQ(replay->events[1]["seq"], 2);
}

TEST_F(EventLogTest, TornAndForeignLinesAreSkippedNotFatal) {
    {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        log->record("FileRead", {{"path", "/w/a"}}, true);
    }
    std::ofstream(path_, std::ios::app)
        << "{\"v\":99,\"type\":\"FromTheFuture\"}\nnot json\n{\"v\":1,\"type\":\"Fi";
    auto replay = EventLog::read_all(path_);
    ASSERT_TRUE(replay);
    EXPECT_EQ(replay->events.size(), 1U);
    EXPECT_EQ(replay->skipped, 3U);
}

TEST_F(EventLogTest, ValuesThatAreNotUtf8DoNotLoseTheEvent) {
    {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        log->record("ToolRequested", {{"arguments", std::string("bad \xff byte")}}, true);
    }
    auto replay = EventLog::read_all(path_);
    ASSERT_TRUE(replay);
    ASSERT_EQ(replay->events.size(), 1U);
}

TEST_F(EventLogTest, OnlyALogTheSupervisorWroteIsReplayed) {
    {
        auto log = EventLog::open(path_, "s-1");
        ASSERT_TRUE(log);
        log->record("SessionStarted", nlohmann::json::object(), true);
    }
    UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    auto mine = EventLog::read_supervisor_log(dir.get(), "events.jsonl", path_);
    ASSERT_TRUE(mine) << mine.error().message;
    EXPECT_EQ(mine->events.size(), 1U);
    // Writable by others: someone else may have written it.
    ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
    EXPECT_THAT(EventLog::read_supervisor_log(dir.get(), "events.jsonl", path_),
                testing::HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(EventLog::open_at(dir.get(), "events.jsonl", path_, "s-1"),
                testing::HasErrc(Errc::kPermissionDenied));
    ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
    // A symlink in its place is never followed.
    ASSERT_EQ(::rename(path_.c_str(), (dir_ + "/real.jsonl").c_str()), 0);
    ASSERT_EQ(::symlink("real.jsonl", path_.c_str()), 0);
    EXPECT_THAT(EventLog::read_supervisor_log(dir.get(), "events.jsonl", path_),
                testing::HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(EventLog::open_at(dir.get(), "events.jsonl", path_, "s-1"),
                testing::HasErrc(Errc::kPermissionDenied));
    ASSERT_EQ(::unlink(path_.c_str()), 0);
    EXPECT_THAT(EventLog::read_supervisor_log(dir.get(), "events.jsonl", path_),
                testing::HasErrc(Errc::kNotFound));
    auto fresh = EventLog::open_at(dir.get(), "events.jsonl", path_, "s-1");
    EXPECT_TRUE(fresh) << fresh.error().message;
}

}  // namespace
}  // namespace stockade::runner
