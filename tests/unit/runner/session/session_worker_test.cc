// SessionWorker with calls in flight: a real worker (the embedded stockade-worker, or in builds
// without one this test binary, exec'd with the hidden verb, as `stockade` execs itself) at
// --isolation none, so that the test needs no privileges.
// rg blocks on FIFOs of the workspace, which keeps several calls in flight for as long as the
// test wants: nothing here depends on timing.
#include "runner/session/session_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/log.h"
#include "runner/worker/worker_main.h"
#include "tests/testing/matchers.h"
#include "tests/testing/recording_sink.h"
#include "tests/unit/workspace/test_util.h"

namespace stockade::runner {
namespace {

using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using workspace::testing::TempDir;

constexpr std::string_view kStoppedError =
    "The sandbox worker stopped while running this call, so it did not complete. Retry it: the "
    "next call starts a fresh worker.";

class SessionWorkerTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (::access("/usr/bin/rg", X_OK) != 0) {
            GTEST_SKIP() << "ripgrep is not installed (/usr/bin/rg)";
        }
        tmp_.mkdir("ws");
        tmp_.mkdir("spill");
        tmp_.write("ws/a.txt", "alpha\n");
        WorkerConfig config;
        config.workspace = tmp_.at("ws");
        config.sandbox.workspace = HostDir::open(tmp_.at("ws")).value();
        config.spill = HostDir::open(tmp_.at("spill")).value();
        config.sandbox.isolation = sandbox::Isolation::kNone;
        config.sandbox.network = sandbox::NetworkMode::kHost;
        worker_.emplace(config, &events_);
    }

    void TearDown() override {
        release_all();
        if (worker_) {
            worker_->stop();
        }
    }

    // A FIFO in the workspace; an rg searching it blocks in open() until release() opens it
    // for writing.
    std::string fifo(int n) {
        const std::string name = fmt::format("fifo-{}", n);
        EXPECT_EQ(::mkfifo(tmp_.at("ws/" + name).c_str(), 0644), 0);
        fifos_.push_back(name);
        return name;
    }

    // Lets the rg that searches FIFO `name` go: opens it for writing (and closes it, so rg
    // reads an empty file) once rg has it open for reading; waits for that at most 10 s.
    void release(const std::string& name) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            const int fd = ::open(tmp_.at("ws/" + name).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0) {
                (void)::close(fd);
                return;
            }
            if (errno != ENXIO || std::chrono::steady_clock::now() >= until) {
                ADD_FAILURE() << "cannot release " << name << ": " << errno;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

    // Lets every rg still blocked on a FIFO go (after a failed assertion too).
    void release_all() {
        for (const std::string& name : fifos_) {
            const int fd = ::open(tmp_.at("ws/" + name).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0) {
                (void)::close(fd);
            }
        }
    }

    size_t count(std::string_view type) {
        const std::vector<std::string> types = events_.types();
        return static_cast<size_t>(std::count(types.begin(), types.end(), type));
    }

    int worker_pid() {
        const std::vector<testing::RecordingSink::Event> events = events_.events();
        for (auto it = events.rbegin(); it != events.rend(); ++it) {
            if (it->type == "WorkerStarted") {
                EXPECT_TRUE(it->durable);
                return it->fields.value("pid", 0);
            }
        }
        return 0;
    }

    // Waits (at most 10 s) until the worker has `n` children named rg (each blocks opening
    // its FIFO).
    void await_rgs(size_t n) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            if (rg_children() >= n) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ADD_FAILURE() << "fewer than " << n << " rg runs started";
    }

    // Waits (at most 10 s) until `pid` has exited (a zombie until SessionWorker reaps it).
    static void await_exit(int pid) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
            const size_t paren = stat.rfind(')');
            if (paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        ADD_FAILURE() << "worker " << pid << " did not exit";
    }

    size_t rg_children() {
        const std::string children =
            read_text(fmt::format("/proc/{}/task/{}/children", worker_pid(), worker_pid()));
        size_t n = 0;
        size_t at = 0;
        while (at < children.size()) {
            const size_t end = children.find(' ', at);
            const std::string pid = children.substr(at, end - at);
            at = end == std::string::npos ? children.size() : end + 1;
            if (!pid.empty() && read_text(fmt::format("/proc/{}/comm", pid)) == "rg\n") {
                ++n;
            }
        }
        return n;
    }

    static std::string read_text(const std::string& path) {
        std::string out;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return out;
        }
        char buf[4096];
        ssize_t n = 0;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) {
            out.append(buf, static_cast<size_t>(n));
        }
        (void)::close(fd);
        return out;
    }

    TempDir tmp_;
    testing::RecordingSink events_;
    std::vector<std::string> fifos_;
    std::optional<SessionWorker> worker_;
};

// A worker that cannot start says why in the session's record, not only to the caller.
TEST(SessionWorkerStartTest, AWorkerThatCannotStartIsRecordedWithWhy) {
    TempDir tmp;
    tmp.mkdir("ws");
    tmp.mkdir("spill");
    WorkerConfig config;
    config.workspace = tmp.at("ws");
    config.sandbox.workspace = HostDir::open(tmp.at("ws")).value();
    config.spill = HostDir::open(tmp.at("spill")).value();
    config.sandbox.isolation = sandbox::Isolation::kNone;
    config.sandbox.network = sandbox::NetworkMode::kAllowlist;  // needs a network namespace
    testing::RecordingSink events;
    SessionWorker worker(config, &events);
    const Status started = worker.start();
    ASSERT_FALSE(started);
    const std::vector<testing::RecordingSink::Event> recorded = events.events();
    ASSERT_EQ(recorded.size(), 1U);
    EXPECT_EQ(recorded[0].type, "WorkerFailed");
    EXPECT_TRUE(recorded[0].durable);
    EXPECT_EQ(recorded[0].fields["error"], started.error().message);
    EXPECT_THAT(started.error().message, ::testing::HasSubstr("network namespace"));
}

TEST_F(SessionWorkerTest, CallsRunWhileAnRgIsInFlight) {
    ASSERT_THAT(worker_->start(), IsOk());
    std::optional<Result<workspace::RgOutcome>> rg;
    const std::string name = fifo(1);
    std::jthread searcher([&] {
        rg.emplace(worker_->run_rg(workspace::RgRequest{.args = {"-e", "x", "--", name}}));
    });
    await_rgs(1);
    // The worker's lock is not held across the rg: these go through meanwhile.
    auto read = worker_->read(workspace::Root::kWorkspace, "a.txt", 100);
    ASSERT_THAT(read, IsOk());
    EXPECT_EQ(read->bytes, "alpha\n");
    EXPECT_THAT(worker_->stat(workspace::Root::kWorkspace, "a.txt"), IsOk());
    EXPECT_EQ(rg_children(), 1U) << "the rg ended before the calls made beside it";
    release(name);
    searcher.join();
    ASSERT_TRUE(rg.has_value());
    ASSERT_THAT(*rg, IsOk());
    EXPECT_EQ((*rg)->exit_code, 1);  // the FIFO closed empty: no match
    EXPECT_EQ(count("WorkerStarted"), 1U);
}

TEST_F(SessionWorkerTest, EveryCallInFlightOfADeadWorkerFailsAndOneFreshWorkerFollows) {
    ASSERT_THAT(worker_->start(), IsOk());
    const int first = worker_pid();
    ASSERT_GT(first, 0);
    constexpr int kInFlight = 3;
    std::vector<std::optional<Result<workspace::RgOutcome>>> results(kInFlight);
    std::vector<std::jthread> searchers;
    for (int i = 0; i < kInFlight; ++i) {
        const std::string name = fifo(i);
        searchers.emplace_back([&, i, name] {
            results[static_cast<size_t>(i)].emplace(
                worker_->run_rg(workspace::RgRequest{.args = {"-e", "x", "--", name}}));
        });
    }
    await_rgs(kInFlight);
    ASSERT_EQ(::kill(first, SIGKILL), 0);
    searchers.clear();  // joins: every call returned
    for (const auto& r : results) {
        ASSERT_TRUE(r.has_value());
        ASSERT_THAT(*r, HasErrc(Errc::kUnavailable));
        EXPECT_EQ(r->error().message, kStoppedError);
    }
    EXPECT_EQ(count("WorkerExited"), 1U) << "the dead worker was reaped once";

    // The next calls, all at once, share one fresh worker.
    std::atomic<int> ok{0};
    std::latch all_done(4);
    std::vector<std::jthread> next;
    for (int i = 0; i < 4; ++i) {
        next.emplace_back([&] {
            auto st = worker_->stat(workspace::Root::kWorkspace, "a.txt");
            EXPECT_THAT(st, IsOk());
            if (st) {
                ++ok;
            }
            // The worker dies with the thread that started it (PR_SET_PDEATHSIG): none of
            // these threads ends before every call is done.
            all_done.arrive_and_wait();
        });
    }
    next.clear();
    EXPECT_EQ(ok.load(), 4);
    EXPECT_EQ(count("WorkerStarted"), 2U);
    EXPECT_NE(worker_pid(), first);
}

TEST_F(SessionWorkerTest, ASpawnCarriesTheGenerationOfTheWorkerThatRanIt) {
    ASSERT_THAT(worker_->start(), IsOk());
    auto p = worker_->spawn(workspace::SpawnRequest{.argv = {"true"}});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(p->epoch, 1U);
    const int first = worker_pid();
    ASSERT_EQ(::kill(first, SIGKILL), 0);
    await_exit(first);  // dead before the next call looks: it is replaced, not used
    auto again = worker_->spawn(workspace::SpawnRequest{.argv = {"true"}});
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->epoch, 2U);
    // The first worker's group is gone with it: nothing is signalled in the new one.
    auto signalled = worker_->signal_group(
        workspace::ProcessGroupRef{.epoch = p->epoch, .pgid = p->pid}, SIGKILL);
    ASSERT_THAT(signalled, IsOk());
    EXPECT_FALSE(*signalled);
}

}  // namespace
}  // namespace stockade::runner

// Builds without an embedded worker run this binary as the worker, as `stockade` runs itself.
int main(int argc, char** argv) {
    if (int status = 0; stockade::worker::run_worker_if_asked(argc, argv, &status)) {
        return status;
    }
    ::testing::InitGoogleMock(&argc, argv);
    return RUN_ALL_TESTS();
}
