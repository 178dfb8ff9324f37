// ProcessManagerImpl over a LocalWorkspace: real processes (no sandbox), real pipes and PTYs.
// A helper thread plays the worker's part of reaping children and reporting their status.
#include "runner/session/process_manager.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/unique_fd.h"
#include "runner/session/output_budget.h"
#include "tests/testing/recording_sink.h"
#include "workspace/local_workspace.h"

namespace stockade::runner {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string make_temp_dir(const char* prefix) {
    std::string templ = std::filesystem::temp_directory_path().string() + "/" + prefix + "XXXXXX";
    char* made = ::mkdtemp(templ.data());
    EXPECT_NE(made, nullptr);
    return templ;
}

// A `sleep` argument no other test run on the machine uses at the same time: "300.<our pid>",
// which sleep reads as 300 seconds and a bit.
std::string own(const char* seconds) {
    return std::string(seconds) + "." + std::to_string(::getpid());
}

// Whether a `sleep <arg>` runs (not a zombie) anywhere this process can see.
bool sleeping(const std::string& arg) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(cmdline)), {});
        if (text != std::string("sleep\0", 6) + arg + std::string(1, '\0')) {
            continue;
        }
        std::ifstream stat(entry.path() / "stat");
        std::string line((std::istreambuf_iterator<char>(stat)), {});
        const size_t paren = line.rfind(')');
        if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z') {
            return true;
        }
    }
    return false;
}

class ProcessManagerTest : public ::testing::Test {
protected:
    // `subreaper`: this process takes the orphans of its commands and stops them, as the
    // worker does (LocalWorkspace::Options::stop_leftovers).
    explicit ProcessManagerTest(bool subreaper = false)
        : root_(make_temp_dir("pm-ws")), logs_(make_temp_dir("pm-logs")), subreaper_(subreaper) {
        if (subreaper_) {
            EXPECT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
        }
        auto ws = workspace::LocalWorkspace::open(
            root_, "", workspace::LocalWorkspace::Options{.stop_leftovers = subreaper_});
        EXPECT_TRUE(ws.has_value());
        ws_ = std::make_unique<workspace::LocalWorkspace>(std::move(ws).value());
        reaper_ = std::thread([this] {
            while (!done_) {
                ws_->reap_children();
                std::this_thread::sleep_for(2ms);
            }
        });
    }
    ~ProcessManagerTest() override {
        pm_.reset();
        done_ = true;
        reaper_.join();
        ws_->reap_children();
        if (subreaper_) {
            (void)::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        }
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
        std::filesystem::remove_all(logs_, ec);
    }
    ProcessManagerImpl& pm(ProcessManagerConfig config = {}) {
        config.log_dir = logs_ + "/process-logs";
        pm_ = std::make_unique<ProcessManagerImpl>(*ws_, config, &events_);
        return *pm_;
    }
    static tools::StartRequest shell(const std::string& command, bool background = true) {
        return tools::StartRequest{.command = command,
                                   .argv = {"/bin/sh", "-c", command},
                                   .cwd = "",
                                   .cwd_display = "/ws",
                                   .pty = false,
                                   .interactive = false,
                                   .background = background,
                                   .env = {},
                                   .call_id = "t"};
    }
    std::string all_output(const std::string& id) {
        auto info = pm_->info(id);
        EXPECT_TRUE(info.has_value());
        auto slice = pm_->output(id, 0, info->output_bytes);
        EXPECT_TRUE(slice.has_value());
        return slice->bytes;
    }
    std::vector<std::string> events() const { return events_.types(); }
    // Whether `id` has written `bytes` of output within 10 s.
    bool wait_for_output(const std::string& id, uint64_t bytes) {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < until) {
            auto info = pm_->info(id);
            if (info && info->output_bytes >= bytes) {
                return true;
            }
            std::this_thread::sleep_for(5ms);
        }
        return false;
    }
    // The bytes of every regular file beneath `dir`: what it holds on disk.
    static uint64_t bytes_in(const std::string& dir) {
        uint64_t total = 0;
        for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
            if (entry.is_regular_file()) {
                total += entry.file_size();
            }
        }
        return total;
    }

    std::string root_;
    std::string logs_;
    bool subreaper_ = false;
    std::unique_ptr<workspace::LocalWorkspace> ws_;
    std::unique_ptr<ProcessManagerImpl> pm_;
    std::atomic<bool> done_{false};
    std::thread reaper_;
    stockade::testing::RecordingSink events_;
};

TEST_F(ProcessManagerTest, RecordsOutputExitAndEvents) {
    auto& m = pm();
    auto p = m.start(shell("echo one; echo two >&2; exit 4"));
    ASSERT_TRUE(p.has_value()) << p.error().message;
    EXPECT_EQ(p->id, "p1");
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->state, tools::ProcessState::kExited);
    EXPECT_EQ(done->exit_code, 4);
    EXPECT_TRUE(done->output_closed);
    EXPECT_EQ(done->output_lines, 2U);
    EXPECT_EQ(all_output(p->id), "one\ntwo\n");
    std::ifstream log(done->log_path);
    std::string logged((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(logged, "one\ntwo\n");
    // ProcessExited is emitted on the reader thread just after the state changes.
    for (int i = 0; i < 100 && events().size() < 2; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_THAT(events(), ::testing::ElementsAre("ProcessStarted", "ProcessExited"));
    ASSERT_EQ(m.list().size(), 1U);
}

TEST_F(ProcessManagerTest, APartialLineCountsAndLineStartsAreExact) {
    auto& m = pm();
    auto p = m.start(shell("printf 'a\\nbb\\nccc'"));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->output_lines, 3U);
    EXPECT_EQ(*m.line_start(p->id, 1), 0U);
    EXPECT_EQ(*m.line_start(p->id, 2), 2U);
    EXPECT_EQ(*m.line_start(p->id, 3), 5U);
    EXPECT_EQ(*m.line_start(p->id, 9), 8U);
    auto slice = m.output(p->id, 5, 100);
    ASSERT_TRUE(slice.has_value());
    EXPECT_EQ(slice->bytes, "ccc");
    EXPECT_EQ(slice->first_line, 3U);
}

TEST_F(ProcessManagerTest, OldOutputComesFromTheLogOnceTheRingHasMovedOn) {
    auto& m = pm({.ring_bytes = 4096, .ring_lines = 50});
    auto p = m.start(shell("seq 1 20000"));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 20s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->output_lines, 20000U);
    EXPECT_LE(m.ring_memory(), 4096U);
    for (uint64_t line : {1U, 2U, 4096U, 4097U, 9999U, 19990U, 20000U}) {
        auto at = m.line_start(p->id, line);
        ASSERT_TRUE(at.has_value());
        auto slice = m.output(p->id, *at, 16);
        ASSERT_TRUE(slice.has_value());
        EXPECT_EQ(slice->first_line, line);
        EXPECT_EQ(slice->bytes.substr(0, slice->bytes.find('\n')), std::to_string(line));
    }
}

TEST_F(ProcessManagerTest, TheLogStopsAtItsCapButCountingGoesOn) {
    auto& m = pm({.log_cap_bytes = 1000, .ring_bytes = 4096});
    auto p = m.start(shell("head -c 100000 /dev/zero"));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->output_bytes, 100000U);
    // The log: its first 1000 bytes, where it stopped and why, what it lacks, and the tail the
    // ring still held.
    EXPECT_EQ(done->log_dropped, 100000U - 1000U - 4096U);
    std::ifstream in(done->log_path, std::ios::binary);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(log.substr(0, 1000), std::string(1000, '\0'));
    EXPECT_THAT(log, HasSubstr("[stockade: this log stops here: its cap of"));
    EXPECT_THAT(log, HasSubstr("of output were not kept here; the last 4.0 KB follow.]\n" +
                               std::string(4096, '\0')));
    EXPECT_TRUE(log.ends_with(std::string(4096, '\0')));
    auto tail = m.output(p->id, 99000, 2000);
    ASSERT_TRUE(tail.has_value());
    EXPECT_EQ(tail->bytes.size(), 1000U);
    auto gap = m.output(p->id, 2000, 10);
    ASSERT_TRUE(gap.has_value());
    EXPECT_GE(gap->begin, 100000U - 4096U) << "bytes neither logged nor in memory are skipped";
}

TEST_F(ProcessManagerTest, LogsShareTheSessionsOutputBudgetOldestPrunedFirst) {
    std::filesystem::create_directories(logs_ + "/process-logs");
    {
        std::ofstream old(logs_ + "/grep-old.txt");
        old << std::string(30'000, 'o');
    }
    UniqueFd dir(::open(logs_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    OutputBudget budget(64 << 10, dir.get());
    auto& m = pm({.ring_bytes = 8192, .budget = &budget});
    auto p = m.start(shell("head -c 100000 /dev/zero"));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_FALSE(std::filesystem::exists(logs_ + "/grep-old.txt")) << "the oldest went first";
    std::ifstream in(done->log_path, std::ios::binary);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    // The log took the budget, but for less than the room it keeps for its note (512 bytes),
    // the note on where it stops included; no room was left for its tail, so it ends there.
    const std::string stop =
        "\n[stockade: this log stops here: the session's output budget (64 KB) is full (every "
        "log and spilled result draw on it). What follows is not kept, but for the last part "
        "the process still holds in memory, added when it ends if there is room for it then.]\n";
    ASSERT_GT(log.size(), (64U << 10) - 512U);
    EXPECT_EQ(log, std::string(log.size() - stop.size(), '\0') + stop);
    EXPECT_EQ(done->log_dropped, 100'000U - (log.size() - stop.size()));
    EXPECT_TRUE(done->log_end_dropped);
    EXPECT_EQ(budget.used(), log.size());
    EXPECT_EQ(bytes_in(logs_), budget.used());
    m.forget(p->id);
}

TEST_F(ProcessManagerTest, EverythingALogWritesIsCountedItsNotesAndTailIncluded) {
    UniqueFd dir(::open(logs_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    OutputBudget budget(1 << 20, dir.get());
    auto& m = pm({.log_cap_bytes = 1000, .ring_bytes = 4096, .budget = &budget});
    auto p = m.start(shell("head -c 100000 /dev/zero"));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    // Stopped at its own cap, with room in the budget: the tail is there, and paid for.
    EXPECT_EQ(done->log_dropped, 100'000U - 1000U - 4096U);
    EXPECT_FALSE(done->log_end_dropped);
    std::ifstream in(done->log_path, std::ios::binary);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    EXPECT_THAT(log, HasSubstr("[stockade: this log stops here: its cap of"));
    EXPECT_TRUE(log.ends_with("the last 4.0 KB follow.]\n" + std::string(4096, '\0')));
    EXPECT_EQ(budget.used(), log.size());
    EXPECT_EQ(bytes_in(logs_), budget.used());
}

TEST_F(ProcessManagerTest, ATailPrunesOutputThatStoppedBeingWrittenMeanwhile) {
    UniqueFd dir(::open(logs_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    OutputBudget budget(64 << 10, dir.get());
    auto& m = pm({.ring_bytes = 8192, .budget = &budget});
    // Both wait for a line on stdin before they end, so the test says when.
    auto waiting = [](const std::string& command) {
        auto req = shell(command + "; read line");
        req.interactive = true;
        return req;
    };
    auto first = m.start(waiting("head -c 20000 /dev/zero"));
    ASSERT_TRUE(first.has_value());
    ASSERT_TRUE(wait_for_output(first->id, 20'000));
    auto flood = m.start(waiting("head -c 100000 /dev/zero"));
    ASSERT_TRUE(flood.has_value());
    ASSERT_TRUE(wait_for_output(flood->id, 100'000));
    // The flood's log stopped where the budget ran out: the first log was still being written.
    EXPECT_GT(budget.used(), budget.cap() - 512U);
    EXPECT_EQ(bytes_in(logs_), budget.used());

    ASSERT_TRUE(m.write(first->id, "\n").has_value());
    ASSERT_TRUE(m.wait_exit(first->id, std::chrono::steady_clock::now() + 10s, {}, {}));
    ASSERT_TRUE(m.write(flood->id, "\n").has_value());
    auto done = m.wait_exit(flood->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    // At its end, the first log (no longer in use) made room for the flood's tail.
    EXPECT_FALSE(std::filesystem::exists(logs_ + "/process-logs/p1.log"));
    std::ifstream in(done->log_path, std::ios::binary);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(log.ends_with("the last 8.0 KB follow.]\n" + std::string(8192, '\0')));
    EXPECT_FALSE(done->log_end_dropped);
    EXPECT_LE(budget.used(), budget.cap());
    EXPECT_EQ(bytes_in(logs_), budget.used());
}

TEST_F(ProcessManagerTest, ATailReclaimsTheTenantsEndedSessionsOrIsNotWritten) {
    UniqueFd dir(::open(logs_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    // An ended session's output, which the pool may reclaim only once the test says so.
    const std::string ended = root_ + "/ended-session-output.txt";
    std::ofstream(ended) << std::string(30'000, 'e');
    std::atomic<bool> reclaimable{false};
    auto pool = std::make_shared<DiskPool>(64 << 10, 30'000, [&](uint64_t) -> uint64_t {
        if (!reclaimable || !std::filesystem::remove(ended)) {
            return 0;
        }
        return 30'000;
    });
    OutputBudget budget(uint64_t{1} << 30, dir.get(), pool);
    auto& m = pm({.ring_bytes = 8192, .budget = &budget});
    auto req = shell("head -c 100000 /dev/zero; read line");
    req.interactive = true;
    auto p = m.start(req);
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(wait_for_output(p->id, 100'000));
    EXPECT_GT(pool->used(), pool->cap() - 512U);
    EXPECT_EQ(bytes_in(logs_) + 30'000U, pool->used());

    reclaimable = true;
    ASSERT_TRUE(m.write(p->id, "\n").has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_FALSE(std::filesystem::exists(ended)) << "reclaimed for the tail";
    std::ifstream in(done->log_path, std::ios::binary);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(log.ends_with("the last 8.0 KB follow.]\n" + std::string(8192, '\0')));
    EXPECT_LE(pool->used(), pool->cap());
    EXPECT_EQ(bytes_in(logs_), pool->used());
    EXPECT_EQ(bytes_in(logs_), budget.used());
}

TEST_F(ProcessManagerTest, StopEndsTheGroupAndWriteReachesStdin) {
    auto& m = pm();
    auto req = shell("sleep 300 & read line; echo got:$line; wait");
    req.interactive = true;  // stdin is a pipe
    auto p = m.start(req);
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(m.write(p->id, "hello\n").has_value());
    auto out = m.wait_output(p->id, 0, std::chrono::steady_clock::now() + 5s, 50ms, {});
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(all_output(p->id), "got:hello\n");
    auto stopped = m.stop(p->id, 3s);
    ASSERT_TRUE(stopped.has_value());
    EXPECT_EQ(stopped->state, tools::ProcessState::kStopped);
    EXPECT_EQ(stopped->signal, SIGTERM);
    auto drained = m.wait_exit(p->id, std::chrono::steady_clock::now() + 5s, {}, {});
    EXPECT_TRUE(drained->output_closed) << "the backgrounded sleep died with the group";
    EXPECT_FALSE(m.write(p->id, "more\n").has_value());
}

TEST_F(ProcessManagerTest, ForegroundProcessesAreHiddenUntilAdopted) {
    auto& m = pm();
    auto p = m.start(shell("echo early; sleep 0.5; echo late", false));
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->id.rfind("cmd-", 0), 0U);
    EXPECT_TRUE(m.list().empty());
    auto timed = m.wait_exit(p->id, std::chrono::steady_clock::now() + 100ms, {}, {});
    EXPECT_EQ(timed->state, tools::ProcessState::kRunning);
    auto adopted = m.adopt(p->id);
    ASSERT_TRUE(adopted.has_value());
    EXPECT_EQ(*adopted, "p1");
    ASSERT_EQ(m.list().size(), 1U);
    EXPECT_THAT(m.list()[0].log_path, HasSubstr("p1.log"));
    auto done = m.wait_exit("p1", std::chrono::steady_clock::now() + 10s, {}, {});
    EXPECT_EQ(done->exit_code, 0);
    EXPECT_EQ(all_output("p1"), "early\nlate\n");
    EXPECT_FALSE(m.info(p->id).has_value()) << "the foreground id is gone";
}

// What a command leaves running is reparented to the reaper (the worker, pid 1 in the
// sandbox; here, this test process made a child subreaper), which stops it and reports it with
// the leader's status.
class LeftoverTest : public ProcessManagerTest {
protected:
    LeftoverTest() : ProcessManagerTest(true) {}
};

TEST_F(LeftoverTest, WhatACommandLeftRunningIsStoppedAndReportedWithItsExit) {
    auto& m = pm({.drain_quiet = 50ms});
    auto p = m.start(shell("sleep " + own("300") + " & setsid sleep " + own("301") +
                               " </dev/null >/dev/null 2>&1 & (sleep " + own("302") +
                               " </dev/null >/dev/null 2>&1 &) ; echo started",
                           false));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->state, tools::ProcessState::kExited);
    EXPECT_EQ(done->leftovers, 3U);
    // Each by its command name at that moment: `setsid` until it has exec'd its sleep.
    EXPECT_THAT(done->leftover_names, ::testing::Each(::testing::AnyOf("sleep", "setsid", "sh")));
    bool closed = false;
    for (int i = 0; i < 500 && !closed; ++i) {
        closed = m.info(p->id)->output_closed;
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(closed) << "SIGTERM ended the sleep that held the pipe";
    for (const char* n : {"300", "301", "302"}) {
        EXPECT_FALSE(sleeping(own(n))) << "sleep " << n << " outlived its command";
    }
    m.forget(p->id);
}

TEST_F(LeftoverTest, ACommandThatIgnoresSigtermIsKilledAfterTheGrace) {
    auto& m = pm({.drain_quiet = 50ms});
    // The leader waits a little, so that its child has set its trap and become the sleep.
    auto p = m.start(shell(
        "(trap '' TERM; exec sleep " + own("303") + ") </dev/null >/dev/null 2>&1 & sleep 0.5",
        false));
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->leftovers, 1U);
    EXPECT_TRUE(sleeping(own("303"))) << "still in its grace period";
    for (int i = 0; i < 100 && sleeping(own("303")); ++i) {
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_FALSE(sleeping(own("303"))) << "SIGKILL after the grace";
    m.forget(p->id);
}

TEST_F(LeftoverTest, WhatARunningCommandStartsStaysBeneathIt) {
    auto& m = pm();
    auto p = m.start(
        shell("setsid sleep " + own("304") + " </dev/null >/dev/null 2>&1 & sleep 30", true));
    ASSERT_TRUE(p.has_value());
    for (int i = 0; i < 100 && !sleeping(own("304")); ++i) {
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(sleeping(own("304"))) << "nothing is stopped while its command runs";
    auto stopped = m.stop(p->id, 2s);
    ASSERT_TRUE(stopped.has_value());
    EXPECT_EQ(stopped->state, tools::ProcessState::kStopped);
    // The setsid'd sleep left the group, not the command (and the group's own `sleep 30` may
    // still be on its way out of the SIGTERM when its shell has gone).
    EXPECT_GE(stopped->leftovers, 1U);
    for (int i = 0; i < 100 && sleeping(own("304")); ++i) {
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_FALSE(sleeping(own("304")));
}

TEST_F(ProcessManagerTest, APtyMakesTheOutputATerminal) {
    auto& m = pm();
    auto req = shell("test -t 1 && echo is-a-tty");
    req.pty = true;
    auto p = m.start(req);
    ASSERT_TRUE(p.has_value());
    auto done = m.wait_exit(p->id, std::chrono::steady_clock::now() + 10s, {}, {});
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(all_output(p->id), "is-a-tty\n");
}

TEST_F(ProcessManagerTest, UnknownIdsAndMissingCommandsAreErrors) {
    auto& m = pm();
    EXPECT_FALSE(m.info("p9").has_value());
    auto missing = m.start(tools::StartRequest{.command = "nope-xyz", .argv = {"nope-xyz"}});
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().code, Errc::kNotFound);
    EXPECT_THAT(missing.error().message, HasSubstr("nope-xyz: command not found"));
}

TEST_F(ProcessManagerTest, StopAllAtTheEndLeavesNothingRunning) {
    int pid = 0;
    {
        auto& m = pm();
        auto p = m.start(shell("trap '' TERM; sleep 300"));
        ASSERT_TRUE(p.has_value());
        pid = p->pid;
        pm_.reset();  // ignores SIGTERM: SIGKILL after the grace period
    }
    for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_NE(::kill(pid, 0), 0);
}

}  // namespace
}  // namespace stockade::runner
