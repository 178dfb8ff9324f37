#include "workspace/service.h"

#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <csignal>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/defer.h"
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
using testing::raw_frame;
using testing::TempDir;

// serve_channel on a thread, over a socketpair whose other end the test drives by hand.
class ServeChannelTest : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_.write("ws/a.txt", "alpha");
        auto ws = LocalWorkspace::open(tmp_.at("ws"), "");
        ASSERT_THAT(ws, IsOk());
        ws_.emplace(std::move(*ws));
        auto pair = make_socketpair(SOCK_STREAM);
        ASSERT_THAT(pair, IsOk());
        client_ = std::move(pair->first);
        worker_ = std::move(pair->second);
        server_ = std::jthread([this] { exit_code_ = serve_channel(worker_.get(), *ws_); });
    }

    // Sends `frame` and decodes the reply as an answer to `op`.
    channel::Reply exchange(const std::string& frame, channel::Op op) {
        EXPECT_THAT(channel::send_frame(client_.get(), frame), IsOk());
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

}  // namespace
}  // namespace stockade::workspace
