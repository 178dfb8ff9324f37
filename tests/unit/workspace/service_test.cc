#include "workspace/service.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/defer.h"
#include "common/proc_table.h"
#include "common/syscall.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"
#include "workspace/channel.h"
#include "workspace/local_workspace.h"

namespace stockade::workspace {
namespace {

using nlohmann::json;
using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::raw_frame;
using testing::TempDir;
using ::testing::UnorderedElementsAre;

// A stand-in for rg (LocalWorkspace::Options::rg_path), run with cwd = the workspace root:
// notes its first argument in "started", waits until a file "release" exists (the test
// decides when it ends, so nothing depends on timing), then prints its argument.
constexpr std::string_view kFakeRg =
    "#!/bin/sh\n"
    "echo \"$1\" >> started\n"
    "while [ ! -e release ]; do sleep 0.01; done\n"
    "echo \"out $1\"\n";

// The fake rg processes running now: this process's children named after the script.
size_t fake_rgs_running() {
    size_t n = 0;
    for (int pid : own_children().value_or(std::vector<int>{})) {
        auto fd = open_path(fmt::format("/proc/{}/comm", pid), O_RDONLY);
        if (!fd) {
            continue;  // exited meanwhile
        }
        auto comm = read_all(fd->get(), 64);
        if (comm && *comm == "fake-rg\n") {
            ++n;
        }
    }
    return n;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = text.find('\n', at);
        out.push_back(text.substr(at, end - at));
        at = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

// serve_channel on a thread, over a socketpair whose other end the test drives by hand.
class ServeChannelTest : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_.write("ws/a.txt", "alpha");
        tmp_.write("bin/fake-rg", kFakeRg, 0755);
        LocalWorkspace::Options options;
        options.rg_path = tmp_.at("bin/fake-rg");
        auto ws = LocalWorkspace::open(tmp_.at("ws"), "", options);
        ASSERT_THAT(ws, IsOk());
        ws_.emplace(std::move(*ws));
        auto pair = make_socketpair(SOCK_STREAM);
        ASSERT_THAT(pair, IsOk());
        client_ = std::move(pair->first);
        worker_ = std::move(pair->second);
        server_ = std::jthread([this] { exit_code_ = serve_channel(worker_.get(), *ws_); });
    }

    // After a failed assertion: end the loop (and the rg runs it holds) before the members go.
    void TearDown() override {
        client_.reset();
        if (server_.joinable()) {
            server_.join();
        }
    }

    // Sends `frame` and decodes the reply as an answer to `op`.
    channel::Reply exchange(const std::string& frame, channel::Op op) {
        EXPECT_THAT(channel::send_frame(client_.get(), frame), IsOk());
        return receive(op);
    }

    // Decodes the next reply as an answer to `op`.
    channel::Reply receive(channel::Op op) {
        auto got = channel::recv_frame(client_.get(),
                                       std::chrono::steady_clock::now() + std::chrono::seconds(10));
        EXPECT_THAT(got, IsOk());
        if (!got || !got->has_value()) {
            ADD_FAILURE() << "no reply";
            return {};
        }
        auto reply = channel::decode_reply((*got)->frame, op);
        EXPECT_THAT(reply, IsOk());
        return reply ? std::move(*reply) : channel::Reply{};
    }

    void hello() {
        auto reply =
            exchange(raw_frame(json{{"v", 1}, {"id", 1}, {"op", "hello"}}), channel::Op::kHello);
        EXPECT_EQ(reply.id, 1U);
        EXPECT_THAT(reply.result, IsOk());
    }

    void send_rg(uint64_t id, const std::string& name, int64_t timeout_ms = 60'000) {
        ASSERT_THAT(channel::send_frame(client_.get(), raw_frame(json{{"v", 1},
                                                                      {"id", id},
                                                                      {"op", "rg"},
                                                                      {"root", "workspace"},
                                                                      {"args", {name}},
                                                                      {"max_output_bytes", 1000},
                                                                      {"timeout_ms", timeout_ms}})),
                    IsOk());
    }

    void send_stat(uint64_t id) {
        ASSERT_THAT(channel::send_frame(client_.get(), raw_frame(json{{"v", 1},
                                                                      {"id", id},
                                                                      {"op", "stat"},
                                                                      {"root", "workspace"},
                                                                      {"path", "a.txt"}})),
                    IsOk());
    }

    // Waits (at most 10 s) until `lines` fake rg runs have noted their start.
    void await_started(size_t lines) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            const std::string text = tmp_.exists("ws/started") ? tmp_.read("ws/started") : "";
            if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) >= lines) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ADD_FAILURE() << "fewer than " << lines << " fake rg runs started";
    }

    // Closes the client end and returns serve_channel's exit code.
    int finish() {
        client_.reset();
        server_.join();
        return exit_code_;
    }

    FdLeakChecker leaks_;
    TempDir tmp_;
    std::optional<LocalWorkspace> ws_;
    UniqueFd client_;
    UniqueFd worker_;
    int exit_code_ = -1;
    std::jthread server_;
};

TEST_F(ServeChannelTest, ServesRequestsAfterHelloAndEndsCleanlyAtEof) {
    hello();
    auto reply = exchange(raw_frame(json{{"v", 1},
                                         {"id", 2},
                                         {"op", "read"},
                                         {"root", "workspace"},
                                         {"path", "a.txt"},
                                         {"max_bytes", 100}}),
                          channel::Op::kRead);
    EXPECT_EQ(reply.id, 2U);
    ASSERT_THAT(reply.result, IsOk());
    EXPECT_EQ(std::get<ReadData>(*reply.result).bytes, "alpha");
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, ARequestBeforeHelloIsRefused) {
    auto reply = exchange(
        raw_frame(json{{"v", 1}, {"id", 5}, {"op", "stat"}, {"root", "workspace"}, {"path", ""}}),
        channel::Op::kStat);
    EXPECT_EQ(reply.id, 5U);
    ASSERT_THAT(reply.result, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(reply.result.error().message, HasSubstr("starts with hello"));
    hello();
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, AMalformedRequestWithAnIdGetsAnErrorReplyAndServingGoesOn) {
    hello();
    auto bad = exchange(
        raw_frame(json{{"v", 1}, {"id", 9}, {"op", "stat"}, {"root", "workspace"}, {"path", 42}}),
        channel::Op::kStat);
    EXPECT_EQ(bad.id, 9U);
    ASSERT_THAT(bad.result, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.result.error().message, HasSubstr("\"path\" must be a string"));
    auto unknown =
        exchange(raw_frame(json{{"v", 1}, {"id", 10}, {"op", "exec"}}), channel::Op::kStat);
    ASSERT_THAT(unknown.result, HasErrc(Errc::kInvalidArgument));
    auto good = exchange(
        raw_frame(json{{"v", 1}, {"id", 11}, {"op", "stat"}, {"root", "workspace"}, {"path", ""}}),
        channel::Op::kStat);
    EXPECT_THAT(good.result, IsOk());
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, AnotherProtocolVersionIsAnsweredWithTheMismatch) {
    auto reply =
        exchange(raw_frame(json{{"v", 2}, {"id", 1}, {"op", "hello"}}), channel::Op::kHello);
    ASSERT_THAT(reply.result, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(reply.result.error().message, HasSubstr("version 2"));
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, WorkspaceErrorsBecomeErrorReplies) {
    hello();
    auto reply = exchange(raw_frame(json{{"v", 1},
                                         {"id", 3},
                                         {"op", "read"},
                                         {"root", "workspace"},
                                         {"path", "missing"},
                                         {"max_bytes", 10}}),
                          channel::Op::kRead);
    ASSERT_THAT(reply.result, HasErrc(Errc::kNotFound));
    EXPECT_EQ(reply.result.error().sys_errno, ENOENT);
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, AFrameWithoutARecoverableIdEndsTheLoop) {
    hello();
    ASSERT_THAT(channel::send_frame(client_.get(), raw_frame(std::string_view("{not json"))),
                IsOk());
    server_.join();
    EXPECT_EQ(exit_code_, 1);
}

TEST_F(ServeChannelTest, AnOversizedLengthEndsTheLoop) {
    std::string prefix;
    testing::append_le32(prefix, 0xFFFFFFF0U);
    ASSERT_THAT(channel::send_frame(client_.get(), prefix), IsOk());
    server_.join();
    EXPECT_EQ(exit_code_, 1);
}

TEST_F(ServeChannelTest, DescriptorsSentWithARequestAreClosed) {
    hello();
    auto pipe = make_pipe();
    ASSERT_THAT(pipe, IsOk());
    const int fds[] = {pipe->second.get()};
    auto frame =
        raw_frame(json{{"v", 1}, {"id", 2}, {"op", "stat"}, {"root", "workspace"}, {"path", ""}});
    ASSERT_THAT(channel::send_frame(client_.get(), frame, fds), IsOk());
    auto got = channel::recv_frame(client_.get());
    ASSERT_THAT(got, IsOk());
    pipe->second.reset();
    // The worker's copy of the write end is gone too: the read end sees EOF.
    char c = 0;
    EXPECT_EQ(::read(pipe->first.get(), &c, 1), 0);
    EXPECT_EQ(finish(), 0);
}

TEST(ServeChannelHookTest, TheReapHookRunsAfterEveryRequest) {
    FdLeakChecker leaks;
    TempDir tmp;
    tmp.mkdir("ws");
    auto ws = LocalWorkspace::open(tmp.at("ws"), "");
    ASSERT_THAT(ws, IsOk());
    auto pair = make_socketpair(SOCK_STREAM);
    ASSERT_THAT(pair, IsOk());
    std::atomic<int> reaps{0};
    int exit_code = -1;
    std::jthread server([&] {
        exit_code = serve_channel(pair->second.get(), *ws, [&] {
            ++reaps;
            return std::optional<std::chrono::milliseconds>();
        });
    });
    for (uint64_t id = 1; id <= 3; ++id) {
        ASSERT_THAT(channel::send_frame(pair->first.get(),
                                        raw_frame(json{{"v", 1}, {"id", id}, {"op", "hello"}})),
                    IsOk());
        auto got = channel::recv_frame(pair->first.get(),
                                       std::chrono::steady_clock::now() + std::chrono::seconds(10));
        ASSERT_THAT(got, IsOk());
        ASSERT_TRUE(got->has_value());
    }
    pair->first.reset();
    server.join();
    EXPECT_EQ(exit_code, 0);
    EXPECT_GE(reaps.load(), 3);
}

TEST_F(ServeChannelTest, ASpawnReplyCarriesTheCommandsDescriptors) {
    // As in the single-threaded worker, no thread may take SIGCHLD before the signalfd does.
    sigset_t sigchld;
    sigemptyset(&sigchld);
    sigaddset(&sigchld, SIGCHLD);
    sigset_t old_mask;
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &sigchld, &old_mask), 0);
    Defer restore{[&] {
        ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    }};
    hello();
    ASSERT_THAT(channel::send_frame(client_.get(), raw_frame(json{{"v", 1},
                                                                  {"id", 2},
                                                                  {"op", "spawn"},
                                                                  {"argv", {"cat"}},
                                                                  {"cwd", ""},
                                                                  {"env", json::array()},
                                                                  {"pty", false},
                                                                  {"interactive", true},
                                                                  {"rows", 24},
                                                                  {"cols", 80}})),
                IsOk());
    auto got = channel::recv_frame(client_.get(),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(10));
    ASSERT_THAT(got, IsOk());
    ASSERT_TRUE(got->has_value());
    auto reply = channel::decode_reply((*got)->frame, channel::Op::kSpawn, (*got)->fds);
    ASSERT_THAT(reply, IsOk());
    ASSERT_THAT(reply->result, IsOk());
    auto& p = std::get<SpawnedProcess>(*reply->result);
    ASSERT_TRUE(p.input.valid());
    ASSERT_THAT(write_all(p.input.get(), "ping"), IsOk());
    p.input.reset();  // the worker kept no copy: cat sees EOF
    auto out = read_all(p.output.get(), 100);
    ASSERT_THAT(out, IsOk());
    EXPECT_EQ(*out, "ping");
    // The status arrives once the service reaps (on SIGCHLD, or after the next request).
    EXPECT_THAT(
        channel::send_frame(client_.get(), raw_frame(json{{"v", 1}, {"id", 3}, {"op", "hello"}})),
        IsOk());
    auto status = read_all(p.status.get(), 16);
    ASSERT_THAT(status, IsOk());
    ASSERT_EQ(status->size(), 4U);
    EXPECT_EQ(*status, std::string("\0\0\0\0", 4));  // exited 0
    auto hello_reply = channel::recv_frame(client_.get());
    ASSERT_THAT(hello_reply, IsOk());
    EXPECT_EQ(finish(), 0);
}

// ---- rg in the poll loop ---------------------------------------------------------------------

TEST_F(ServeChannelTest, RequestsAreAnsweredWhileRgRunsAndRgIsAnsweredWhenItEnds) {
    hello();
    send_rg(2, "slow");
    await_started(1);
    // rg cannot end before "release" exists: the stat reply comes first, with its own id.
    auto stat = exchange(raw_frame(json{{"v", 1},
                                        {"id", 3},
                                        {"op", "read"},
                                        {"root", "workspace"},
                                        {"path", "a.txt"},
                                        {"max_bytes", 100}}),
                         channel::Op::kRead);
    EXPECT_EQ(stat.id, 3U);
    ASSERT_THAT(stat.result, IsOk());
    EXPECT_EQ(std::get<ReadData>(*stat.result).bytes, "alpha");
    EXPECT_EQ(fake_rgs_running(), 1U);

    tmp_.write("ws/release", "");
    auto rg = receive(channel::Op::kRg);
    EXPECT_EQ(rg.id, 2U);
    ASSERT_THAT(rg.result, IsOk());
    const auto& out = std::get<RgOutcome>(*rg.result);
    EXPECT_EQ(out.exit_code, 0);
    EXPECT_EQ(out.out, "out slow\n");
    EXPECT_FALSE(out.timed_out);
    EXPECT_EQ(finish(), 0);
    EXPECT_EQ(fake_rgs_running(), 0U);
}

TEST_F(ServeChannelTest, AtMostFourRgRunAtOnceAndTheOthersWaitTheirTurn) {
    hello();
    for (uint64_t id = 10; id < 16; ++id) {
        send_rg(id, fmt::format("r{}", id));
    }
    // The worker reads requests in order: once the stat after them is answered, every rg was
    // started or queued, and a started one has already exec'd.
    send_stat(20);
    auto stat = receive(channel::Op::kStat);
    EXPECT_EQ(stat.id, 20U);
    EXPECT_THAT(stat.result, IsOk());
    EXPECT_EQ(fake_rgs_running(), kMaxRgRuns);
    await_started(kMaxRgRuns);
    EXPECT_THAT(lines(tmp_.read("ws/started")), UnorderedElementsAre("r10", "r11", "r12", "r13"));

    tmp_.write("ws/release", "");
    std::set<uint64_t> ids;
    for (int i = 0; i < 6; ++i) {
        auto rg = receive(channel::Op::kRg);
        ASSERT_THAT(rg.result, IsOk());
        EXPECT_EQ(std::get<RgOutcome>(*rg.result).out, fmt::format("out r{}\n", rg.id));
        ids.insert(rg.id);
    }
    EXPECT_EQ(ids, (std::set<uint64_t>{10, 11, 12, 13, 14, 15}));
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, AnRgThatWaitsPastItsTimeoutIsAnsweredAsTimedOutWithoutRunning) {
    hello();
    for (uint64_t id = 10; id < 14; ++id) {
        send_rg(id, fmt::format("r{}", id));
    }
    send_rg(14, "late", /*timeout_ms=*/100);
    // None of the four can end before "release": this reply comes from the queue.
    auto late = receive(channel::Op::kRg);
    EXPECT_EQ(late.id, 14U);
    ASSERT_THAT(late.result, IsOk());
    EXPECT_TRUE(std::get<RgOutcome>(*late.result).timed_out);
    EXPECT_EQ(std::get<RgOutcome>(*late.result).exit_code, -1);

    tmp_.write("ws/release", "");
    for (int i = 0; i < 4; ++i) {
        auto rg = receive(channel::Op::kRg);
        EXPECT_THAT(rg.result, IsOk());
    }
    EXPECT_THAT(tmp_.read("ws/started"), Not(HasSubstr("late")));
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, RgStillRunningAtTheEndOfTheStreamIsKilledAndReaped) {
    hello();
    send_rg(2, "abandoned");
    send_rg(3, "queued-1");
    send_rg(4, "queued-2");
    send_rg(5, "queued-3");
    send_rg(6, "queued-4");
    send_stat(7);
    auto stat = receive(channel::Op::kStat);
    EXPECT_THAT(stat.result, IsOk());
    EXPECT_EQ(fake_rgs_running(), kMaxRgRuns);
    EXPECT_EQ(finish(), 0);
    EXPECT_EQ(fake_rgs_running(), 0U) << "an rg outlived the channel";
}

TEST_F(ServeChannelTest, ACommandThatEndsWhileRgRunsIsReapedWithoutAnotherRequest) {
    // As in the single-threaded worker, no thread may take SIGCHLD before the signalfd does.
    sigset_t sigchld;
    sigemptyset(&sigchld);
    sigaddset(&sigchld, SIGCHLD);
    sigset_t old_mask;
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &sigchld, &old_mask), 0);
    Defer restore{[&] {
        ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    }};
    hello();
    send_rg(2, "slow");
    await_started(1);
    ASSERT_THAT(channel::send_frame(client_.get(),
                                    raw_frame(json{{"v", 1},
                                                   {"id", 3},
                                                   {"op", "spawn"},
                                                   {"argv", {"sh", "-c", "sleep 0.2; exit 3"}},
                                                   {"cwd", ""},
                                                   {"env", {"PATH=/usr/bin:/bin"}},
                                                   {"pty", false},
                                                   {"interactive", false},
                                                   {"rows", 24},
                                                   {"cols", 80}})),
                IsOk());
    // The spawn is answered while rg runs; nothing more is sent until the status came.
    auto got = channel::recv_frame(client_.get(),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(10));
    ASSERT_THAT(got, IsOk());
    ASSERT_TRUE(got->has_value());
    auto reply = channel::decode_reply((*got)->frame, channel::Op::kSpawn, (*got)->fds);
    ASSERT_THAT(reply, IsOk());
    EXPECT_EQ(reply->id, 3U);
    ASSERT_THAT(reply->result, IsOk());
    auto& p = std::get<SpawnedProcess>(*reply->result);
    // The worker reaps it on SIGCHLD from the poll loop, beside the rg run.
    auto status = read_all(p.status.get(), 16);
    ASSERT_THAT(status, IsOk());
    ASSERT_EQ(status->size(), 4U);
    int wait_status = 0;
    std::memcpy(&wait_status, status->data(), sizeof wait_status);
    EXPECT_TRUE(WIFEXITED(wait_status));
    EXPECT_EQ(WEXITSTATUS(wait_status), 3);
    EXPECT_EQ(fake_rgs_running(), 1U) << "rg ended before the command was reaped";

    tmp_.write("ws/release", "");
    auto rg = receive(channel::Op::kRg);
    EXPECT_EQ(rg.id, 2U);
    EXPECT_THAT(rg.result, IsOk());
    EXPECT_EQ(finish(), 0);
}

TEST_F(ServeChannelTest, AnRgThatCannotStartIsAnsweredAtOnce) {
    hello();
    ASSERT_THAT(channel::send_frame(client_.get(), raw_frame(json{{"v", 1},
                                                                  {"id", 2},
                                                                  {"op", "rg"},
                                                                  {"root", "spill"},
                                                                  {"args", {"x"}},
                                                                  {"max_output_bytes", 10},
                                                                  {"timeout_ms", 1000}})),
                IsOk());
    auto rg = receive(channel::Op::kRg);
    EXPECT_EQ(rg.id, 2U);
    EXPECT_THAT(rg.result, HasErrc(Errc::kUnavailable));  // this session has no spill root
    EXPECT_EQ(finish(), 0);
}

}  // namespace
}  // namespace stockade::workspace
