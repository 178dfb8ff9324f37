#include "workspace/remote_workspace.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/syscall.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"
#include "workspace/channel.h"
#include "workspace/local_workspace.h"
#include "workspace/service.h"

namespace stockade::workspace {
namespace {

using nlohmann::json;
using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::raw_frame;
using ::testing::StartsWith;
using testing::TempDir;

// ---- Against the real service ---------------------------------------------------------------

// RemoteWorkspace → socketpair → serve_channel(LocalWorkspace) on a std::jthread.
class RemoteWorkspaceTest : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_.mkdir("ws");
        tmp_.write("ws/hello.txt", "hello world\n");
        tmp_.write("ws/src/a.cc", "int main() {}\n");
        tmp_.write("outside/secret", "host secret\n");
        tmp_.write("spill/out-1.txt", "spilled\n");
        auto local = LocalWorkspace::open(tmp_.at("ws"), tmp_.at("spill"), local_options());
        ASSERT_THAT(local, IsOk());
        local_.emplace(std::move(*local));
        auto pair = make_socketpair(SOCK_STREAM);
        ASSERT_THAT(pair, IsOk());
        worker_fd_ = std::move(pair->second);
        server_ = std::jthread([this] { served_ = serve_channel(worker_fd_.get(), *local_); });
        remote_.emplace(std::move(pair->first), tmp_.at("ws"), tmp_.at("spill"));
    }

    virtual LocalWorkspace::Options local_options() { return {}; }

    void TearDown() override {
        remote_.reset();  // closes the channel: the service sees EOF
        if (server_.joinable()) {
            server_.join();
        }
        EXPECT_EQ(served_, 0);
    }

    FdLeakChecker leaks_;
    TempDir tmp_;
    std::optional<LocalWorkspace> local_;
    UniqueFd worker_fd_;
    int served_ = -1;
    std::jthread server_;
    std::optional<RemoteWorkspace> remote_;
};

TEST_F(RemoteWorkspaceTest, EveryOperationRoundTrips) {
    ASSERT_THAT(remote_->handshake(), IsOk());
    EXPECT_EQ(remote_->root_path(Root::kWorkspace), tmp_.at("ws"));
    EXPECT_EQ(remote_->root_path(Root::kSpill), tmp_.at("spill"));

    auto st = remote_->stat(Root::kWorkspace, "hello.txt");
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->type, FileType::kFile);
    EXPECT_EQ(st->size, 12U);

    auto rd = remote_->read(Root::kWorkspace, "hello.txt", 5);
    ASSERT_THAT(rd, IsOk());
    EXPECT_EQ(rd->bytes, "hello");
    EXPECT_TRUE(rd->truncated);

    std::string binary("\0\x01\xff\n\"{}", 7);
    auto wr =
        remote_->write(WriteRequest{.path = "new/dir/file.bin", .bytes = binary, .mode = 0600});
    ASSERT_THAT(wr, IsOk());
    EXPECT_TRUE(wr->created);
    EXPECT_EQ(wr->info.size, binary.size());
    EXPECT_EQ(tmp_.read("ws/new/dir/file.bin"), binary);
    EXPECT_EQ(tmp_.mode("ws/new/dir/file.bin"), 0600U);

    ASSERT_THAT(remote_->make_dirs(Root::kWorkspace, "x/y"), IsOk());
    EXPECT_TRUE(tmp_.exists("ws/x/y"));

    auto ls = remote_->list(Root::kWorkspace, "", 100);
    ASSERT_THAT(ls, IsOk());
    std::vector<std::string> names;
    for (const auto& e : *ls) {
        names.push_back(e.name);
    }
    EXPECT_THAT(names, ElementsAre("hello.txt", "new", "src", "x"));

    auto spilled = remote_->read(Root::kSpill, "out-1.txt", 100);
    ASSERT_THAT(spilled, IsOk());
    EXPECT_EQ(spilled->bytes, "spilled\n");

    if (::access("/usr/bin/rg", X_OK) == 0) {
        auto rg = remote_->run_rg(RgRequest{.args = {"-l", "-e", "main"}});
        ASSERT_THAT(rg, IsOk());
        EXPECT_EQ(rg->exit_code, 0);
        EXPECT_EQ(rg->out, "src/a.cc\n");
    }
    EXPECT_FALSE(remote_->broken());
}

TEST_F(RemoteWorkspaceTest, TheFirstCallSaysHelloByItself) {
    auto st = remote_->stat(Root::kWorkspace, "");
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->type, FileType::kDirectory);
}

TEST_F(RemoteWorkspaceTest, WorkerErrorsPassThroughAndKeepTheChannel) {
    EXPECT_THAT(remote_->read(Root::kWorkspace, "missing", 10), HasErrc(Errc::kNotFound));
    auto spill = remote_->write(WriteRequest{.root = Root::kSpill, .path = "x", .bytes = "x"});
    EXPECT_THAT(spill, HasErrc(Errc::kPermissionDenied));
    tmp_.symlink("ws/escape", "../outside/secret");
    auto esc = remote_->read(Root::kWorkspace, "escape", 100);
    ASSERT_THAT(esc, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(esc.error().message, "path \"escape\" leaves the workspace through a symlink");
    EXPECT_FALSE(remote_->broken());
    EXPECT_THAT(remote_->stat(Root::kWorkspace, "hello.txt"), IsOk());
}

TEST_F(RemoteWorkspaceTest, NamesThatAreNotUtf8AreListedWithoutBreakingTheChannel) {
    tmp_.write("ws/d/a\xf0\x9f\x98\x80", "");
    tmp_.write("ws/d/a\xff", "");
    tmp_.write("ws/d/a\xfe", "");
    auto ls = remote_->list(Root::kWorkspace, "d", 10);
    ASSERT_THAT(ls, IsOk());
    ASSERT_EQ(ls->size(), 3U);
    EXPECT_EQ((*ls)[0].name, "a\xef\xbf\xbd");
    EXPECT_EQ((*ls)[1].name, "a\xef\xbf\xbd");
    EXPECT_EQ((*ls)[2].name, "a\xf0\x9f\x98\x80");
    EXPECT_FALSE(remote_->broken());
}

TEST_F(RemoteWorkspaceTest, RequestsThatCannotBeEncodedFailWithoutBreakingTheChannel) {
    EXPECT_THAT(remote_->stat(Root::kWorkspace, std::string("a\0b", 3)),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(remote_->write(WriteRequest{
                    .path = "big", .bytes = std::string(channel::kMaxPayloadBytes + 1, 'x')}),
                HasErrc(Errc::kResourceExhausted));
    EXPECT_THAT(remote_->read(Root::kWorkspace, "hello.txt", uint64_t{1} << 40),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_FALSE(remote_->broken());
    EXPECT_THAT(remote_->stat(Root::kWorkspace, "hello.txt"), IsOk());
}

TEST_F(RemoteWorkspaceTest, ConcurrentCallsEachGetTheirOwnReply) {
    std::vector<std::jthread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                auto path = fmt::format("t{}/f{}", t, i);
                auto content = fmt::format("thread {} item {}", t, i);
                if (!remote_->write(WriteRequest{.path = path, .bytes = content})) {
                    ++failures;
                }
                auto back = remote_->read(Root::kWorkspace, path, 100);
                if (!back || back->bytes != content) {
                    ++failures;
                }
                auto info = remote_->stat(Root::kWorkspace, path);
                if (!info || info->size != content.size()) {
                    ++failures;
                }
                auto dir = remote_->list(Root::kWorkspace, fmt::format("t{}", t), 1000);
                if (!dir || dir->size() != static_cast<size_t>(i + 1)) {
                    ++failures;
                }
            }
        });
    }
    threads.clear();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_FALSE(remote_->broken());
}

// ---- Commands through the real service ------------------------------------------------------

// Reads `fd` to EOF (or EIO: a PTY master whose slave is closed), for at most 5 s.
std::string read_to_eof(int fd) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno == EIO) {
            return out;
        } else if (errno != EINTR) {
            break;
        }
    }
    ADD_FAILURE() << "no EOF within 5 s; got: " << out;
    return out;
}

// The 4-byte wait status the worker writes when it reaps the leader; nothing else is asked of
// the worker meanwhile, so it comes from the service's own reaping.
std::optional<int> await_status(int fd) {
    std::string bytes = read_to_eof(fd);
    if (bytes.size() != 4) {
        ADD_FAILURE() << "status of " << bytes.size() << " bytes";
        return std::nullopt;
    }
    uint32_t raw = 0;
    for (unsigned i = 0; i < 4; ++i) {
        raw |= uint32_t{static_cast<unsigned char>(bytes[i])} << (8U * i);
    }
    return static_cast<int>(raw);
}

// The worker is single-threaded and serve_channel blocks SIGCHLD. Here the test's own thread
// must block it too: a thread that leaves SIGCHLD unblocked may take (and discard) it before
// the service's signalfd sees it.
class BlockSigchld {
public:
    BlockSigchld() {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        EXPECT_EQ(::pthread_sigmask(SIG_BLOCK, &set, &old_), 0);
    }
    ~BlockSigchld() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
    BlockSigchld(const BlockSigchld&) = delete;
    BlockSigchld& operator=(const BlockSigchld&) = delete;

private:
    sigset_t old_{};
};

TEST_F(RemoteWorkspaceTest, SpawnRoundTripsAndTheServiceReapsWhileIdle) {
    BlockSigchld block;
    // The sleep outlasts the reap that follows each request: the status comes from SIGCHLD.
    auto p = remote_->spawn(SpawnRequest{.argv = {"sh", "-c", "sleep 0.2; echo hi; exit 3"}});
    ASSERT_THAT(p, IsOk());
    EXPECT_GT(p->pid, 1);
    EXPECT_EQ(p->epoch, 0U);
    EXPECT_TRUE(p->status.valid());
    EXPECT_FALSE(p->input.valid());
    EXPECT_EQ(read_to_eof(p->output.get()), "hi\n");
    auto status = await_status(p->status.get());
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << *status;
    if (p->pidfd) {
        pollfd pfd{p->pidfd.get(), POLLIN, 0};
        EXPECT_EQ(::poll(&pfd, 1, 1000), 1);
    }
    EXPECT_FALSE(remote_->broken());
}

TEST_F(RemoteWorkspaceTest, StdinPtySignalsAndCommandsRoundTrip) {
    BlockSigchld block;
    // The worker keeps no copy of the input pipe: closing ours ends cat's input.
    auto cat = remote_->spawn(SpawnRequest{.argv = {"cat"}, .interactive = true});
    ASSERT_THAT(cat, IsOk());
    ASSERT_TRUE(cat->input.valid());
    ASSERT_THAT(write_all(cat->input.get(), "abc"), IsOk());
    cat->input.reset();
    EXPECT_EQ(read_to_eof(cat->output.get()), "abc");
    auto cat_status = await_status(cat->status.get());
    EXPECT_TRUE(cat_status && WIFEXITED(*cat_status) && WEXITSTATUS(*cat_status) == 0);

    auto sleeper = remote_->spawn(SpawnRequest{.argv = {"sleep", "100"}, .pty = true});
    ASSERT_THAT(sleeper, IsOk());
    EXPECT_EQ(::isatty(sleeper->output.get()), 1);
    auto probe = remote_->signal_group(ProcessGroupRef{.pgid = sleeper->pid}, 0);
    ASSERT_THAT(probe, IsOk());
    EXPECT_TRUE(*probe);
    auto killed = remote_->signal_group(ProcessGroupRef{.pgid = sleeper->pid}, SIGKILL);
    ASSERT_THAT(killed, IsOk());
    EXPECT_TRUE(*killed);
    auto status = await_status(sleeper->status.get());
    EXPECT_TRUE(status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
    auto again = remote_->signal_group(ProcessGroupRef{.pgid = sleeper->pid}, SIGKILL);
    ASSERT_THAT(again, IsOk());
    EXPECT_FALSE(*again);

    // The worker's errors pass through and keep the channel.
    auto init = remote_->signal_group(ProcessGroupRef{.pgid = 1}, SIGKILL);
    EXPECT_THAT(init, HasErrc(Errc::kInvalidArgument));
    auto missing = remote_->spawn(SpawnRequest{.argv = {"stockade-no-such-command"}});
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_EQ(missing.error().message, "stockade-no-such-command: command not found");
    tmp_.symlink("ws/escape", "../outside");
    EXPECT_THAT(remote_->spawn(SpawnRequest{.argv = {"true"}, .cwd = "escape"}),
                HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(remote_->spawn(SpawnRequest{.argv = {"true"}, .rows = 0}),
                HasErrc(Errc::kInvalidArgument));

    auto names = remote_->path_commands();
    ASSERT_THAT(names, IsOk());
    EXPECT_THAT(*names, Contains("sh"));
    EXPECT_TRUE(std::is_sorted(names->begin(), names->end()));
    EXPECT_FALSE(remote_->broken());
}

// ---- A slow rg does not hold up the other calls ----------------------------------------------

// The service with a stand-in for rg that runs for 2 s; "rg-running" exists (in the workspace,
// its cwd) exactly while it does.
class RemoteWorkspaceSlowRgTest : public RemoteWorkspaceTest {
protected:
    LocalWorkspace::Options local_options() override {
        tmp_.write("bin/slow-rg", "#!/bin/sh\n: > rg-running\nsleep 2\nrm rg-running\necho slow\n",
                   0755);
        LocalWorkspace::Options options;
        options.rg_path = tmp_.at("bin/slow-rg");
        return options;
    }
};

TEST_F(RemoteWorkspaceSlowRgTest, AReadAStatAndASpawnFinishBeforeTheRgDoes) {
    BlockSigchld block;
    ASSERT_THAT(remote_->handshake(), IsOk());
    std::atomic<bool> rg_done{false};
    std::optional<Result<RgOutcome>> rg;
    std::jthread searcher([&] {
        rg.emplace(remote_->run_rg(RgRequest{.args = {"-e", "x"}}));
        rg_done = true;
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!tmp_.exists("ws/rg-running") && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(tmp_.exists("ws/rg-running")) << "the slow rg did not start";

    auto rd = remote_->read(Root::kWorkspace, "hello.txt", 100);
    ASSERT_THAT(rd, IsOk());
    EXPECT_EQ(rd->bytes, "hello world\n");
    auto st = remote_->stat(Root::kWorkspace, "src/a.cc");
    ASSERT_THAT(st, IsOk());
    auto p = remote_->spawn(SpawnRequest{.argv = {"sh", "-c", "echo spawned"}});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "spawned\n");
    // rg has not ended: every one of the three was answered while it ran.
    EXPECT_TRUE(tmp_.exists("ws/rg-running"));
    EXPECT_FALSE(rg_done.load());

    searcher.join();
    ASSERT_TRUE(rg.has_value());
    ASSERT_THAT(*rg, IsOk());
    EXPECT_EQ((*rg)->exit_code, 0);
    EXPECT_EQ((*rg)->out, "slow\n");
    EXPECT_FALSE(tmp_.exists("ws/rg-running"));
    EXPECT_FALSE(remote_->broken());
}

// ---- Against a fake, hostile worker ---------------------------------------------------------

// A worker that answers hello correctly and then hands every later request to `script`, which
// writes whatever it likes to the channel (or nothing, or closes it).
class FakeWorker {
public:
    using Script = std::function<void(int fd, const channel::Request& request)>;

    explicit FakeWorker(Script script, int hello_version = 1) : script_(std::move(script)) {
        auto pair = make_socketpair(SOCK_STREAM);
        EXPECT_THAT(pair, IsOk());
        client_ = std::move(pair->first);
        fd_ = std::move(pair->second);
        thread_ = std::jthread([this, hello_version] { run(hello_version); });
    }
    FakeWorker(const FakeWorker&) = delete;
    FakeWorker& operator=(const FakeWorker&) = delete;
    ~FakeWorker() {
        if (thread_.joinable()) {
            ::shutdown(fd_.get(), SHUT_RDWR);
            thread_.join();
        }
    }

    UniqueFd take_client() { return std::move(client_); }

private:
    void run(int hello_version) {
        auto hello = channel::recv_frame(fd_.get());
        if (!hello || !hello->has_value()) {
            return;
        }
        auto request = channel::decode_request((*hello)->frame);
        if (!request) {
            return;
        }
        (void)channel::send_frame(
            fd_.get(), raw_frame(json{{"v", hello_version}, {"id", request->id}, {"ok", true}}));
        for (;;) {
            auto next = channel::recv_frame(fd_.get());
            if (!next || !next->has_value()) {
                return;
            }
            auto req = channel::decode_request((*next)->frame);
            if (!req) {
                return;
            }
            script_(fd_.get(), *req);
        }
    }

    Script script_;
    UniqueFd client_;
    UniqueFd fd_;
    std::jthread thread_;
};

json file_info(uint64_t size = 1, const char* type = "file") {
    return {{"type", type}, {"size", size}, {"mtime_ns", 1}, {"mode", 0644}};
}
json entry(const std::string& name) {
    return {{"name", name}, {"type", "file"}, {"size", 1}, {"mtime_ns", 1}};
}

// One hostile reply: the call to make and the bytes the fake worker answers it with.
struct HostileCase {
    const char* name;
    std::function<Status(RemoteWorkspace&)> call;
    std::function<std::string(uint64_t id)> reply;
    const char* message;
};

template <class T>
Status status_of(Result<T> r) {
    if (!r) {
        return std::move(r).error();
    }
    return {};
}

class RemoteWorkspaceHostileTest : public ::testing::TestWithParam<HostileCase> {
protected:
    FdLeakChecker leaks_;
};

TEST_P(RemoteWorkspaceHostileTest, IsAnInvalidReplyAndBreaksTheChannel) {
    const HostileCase& c = GetParam();
    FakeWorker worker([&](int fd, const channel::Request& request) {
        (void)channel::send_frame(fd, c.reply(request.id));
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    Status st = c.call(remote);
    ASSERT_THAT(st, HasErrc(Errc::kInternal));
    EXPECT_THAT(st.error().message, StartsWith("worker sent an invalid reply: "));
    EXPECT_THAT(st.error().message, HasSubstr(c.message));
    EXPECT_TRUE(remote.broken());
    auto later = remote.stat(Root::kWorkspace, "");
    ASSERT_THAT(later, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(later.error().message, StartsWith("the sandbox worker is gone"));
}

std::string le32_prefix(uint32_t v) {
    std::string s;
    testing::append_le32(s, v);
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RemoteWorkspaceHostileTest,
    ::testing::Values(
        HostileCase{"WrongId",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t id) {
                        return raw_frame(
                            json{{"v", 1}, {"id", id + 1}, {"ok", true}, {"info", file_info()}});
                    },
                    "answers no request"},
        HostileCase{"ReadLongerThanAsked",
                    [](RemoteWorkspace& r) { return status_of(r.read(Root::kWorkspace, "a", 4)); },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"info", file_info(5)},
                                              {"truncated", false}},
                                         "12345");
                    },
                    "read returned 5 bytes, 4 were asked for"},
        HostileCase{"ReadTruncatedBelowMax",
                    [](RemoteWorkspace& r) { return status_of(r.read(Root::kWorkspace, "a", 10)); },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"info", file_info(3)},
                                              {"truncated", true}},
                                         "abc");
                    },
                    "truncated"},
        HostileCase{"ReadOfADirectory",
                    [](RemoteWorkspace& r) { return status_of(r.read(Root::kWorkspace, "a", 10)); },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"info", file_info(3, "directory")},
                                              {"truncated", false}},
                                         "abc");
                    },
                    "regular file"},
        HostileCase{"StatSizeMistyped",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t id) {
                        json bad = file_info();
                        bad["size"] = "12";
                        return raw_frame(json{{"v", 1}, {"id", id}, {"ok", true}, {"info", bad}});
                    },
                    "\"size\" must be an unsigned integer"},
        HostileCase{"ListMoreThanAsked",
                    [](RemoteWorkspace& r) { return status_of(r.list(Root::kWorkspace, "", 1)); },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"entries", json::array({entry("a"), entry("b")})}});
                    },
                    "list returned 2 entries, 1 were asked for"},
        HostileCase{"ListUnsorted",
                    [](RemoteWorkspace& r) { return status_of(r.list(Root::kWorkspace, "", 10)); },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"entries", json::array({entry("b"), entry("a")})}});
                    },
                    "not sorted"},
        HostileCase{"ListNameWithSlash",
                    [](RemoteWorkspace& r) { return status_of(r.list(Root::kWorkspace, "", 10)); },
                    [](uint64_t id) {
                        return raw_frame(
                            json{{"v", 1},
                                 {"id", id},
                                 {"ok", true},
                                 {"entries", json::array({entry("../../etc/shadow")})}});
                    },
                    "not a single path component"},
        HostileCase{"ListNameWithNul",
                    [](RemoteWorkspace& r) { return status_of(r.list(Root::kWorkspace, "", 10)); },
                    [](uint64_t id) {
                        return raw_frame(
                            json{{"v", 1},
                                 {"id", id},
                                 {"ok", true},
                                 {"entries", json::array({entry(std::string("a\0b", 3))})}});
                    },
                    "not a single path component"},
        HostileCase{
            "RgOutputAboveTheCap",
            [](RemoteWorkspace& r) {
                return status_of(r.run_rg(RgRequest{.args = {"-e", "x"}, .max_output_bytes = 4}));
            },
            [](uint64_t id) {
                return raw_frame(json{{"v", 1},
                                      {"id", id},
                                      {"ok", true},
                                      {"exit_code", 0},
                                      {"truncated", false},
                                      {"timed_out", false},
                                      {"out_bytes", 5}},
                                 "12345");
            },
            "rg returned 5 bytes of output"},
        HostileCase{"RgTimedOutButExited",
                    [](RemoteWorkspace& r) {
                        return status_of(r.run_rg(RgRequest{.args = {"-e", "x"}}));
                    },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"exit_code", 0},
                                              {"truncated", false},
                                              {"timed_out", true},
                                              {"out_bytes", 0}});
                    },
                    "disagree"},
        HostileCase{"WriteSizeMismatch",
                    [](RemoteWorkspace& r) {
                        return status_of(r.write(WriteRequest{.path = "a", .bytes = "abc"}));
                    },
                    [](uint64_t id) {
                        return raw_frame(json{{"v", 1},
                                              {"id", id},
                                              {"ok", true},
                                              {"created", true},
                                              {"info", file_info(999)}});
                    },
                    "999 bytes"},
        HostileCase{"OversizedFrame",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t) { return le32_prefix(0x7FFFFFFFU); }, "exceeds"},
        HostileCase{"HeaderLengthBeyondFrame",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t) { return le32_prefix(12) + le32_prefix(100) + "{}{}"; },
                    "header length 100"},
        HostileCase{"InvalidJson",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t) { return raw_frame(std::string_view(R"({"v":1,"id":)")); },
                    "not valid JSON"},
        HostileCase{"ClaimsAPolicyDecision",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t id) {
                        return raw_frame(
                            json{{"v", 1},
                                 {"id", id},
                                 {"ok", false},
                                 {"error",
                                  {{"code", "policy-denied"}, {"message", "no"}, {"errno", 0}}}});
                    },
                    "policy decision"},
        HostileCase{"PayloadOnAStatReply",
                    [](RemoteWorkspace& r) { return status_of(r.stat(Root::kWorkspace, "a")); },
                    [](uint64_t id) {
                        return raw_frame(
                            json{{"v", 1}, {"id", id}, {"ok", true}, {"info", file_info()}},
                            "extra");
                    },
                    "unexpected payload"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(RemoteWorkspaceFakeWorkerTest, DescriptorsOnAReplyBreakTheChannel) {
    FdLeakChecker leaks;
    FakeWorker worker([](int fd, const channel::Request& request) {
        auto pipe = make_pipe();
        ASSERT_THAT(pipe, IsOk());
        const int fds[] = {pipe->first.get()};
        (void)channel::send_frame(
            fd, raw_frame(json{{"v", 1}, {"id", request.id}, {"ok", true}, {"info", file_info()}}),
            fds);
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    auto r = remote.stat(Root::kWorkspace, "a");
    ASSERT_THAT(r, HasErrc(Errc::kInternal));
    EXPECT_THAT(r.error().message, HasSubstr("unexpected descriptors"));
    EXPECT_TRUE(remote.broken());
}

TEST(RemoteWorkspaceFakeWorkerTest, AWorkerThatDiesMidCallIsUnavailable) {
    FdLeakChecker leaks;
    FakeWorker worker([](int fd, const channel::Request&) {
        // Half a reply, then the worker is gone.
        std::string frame = raw_frame(json{{"v", 1}, {"id", 2}, {"ok", true}});
        (void)channel::send_frame(fd, std::string_view(frame).substr(0, 6));
        ::shutdown(fd, SHUT_RDWR);
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    auto r = remote.read(Root::kWorkspace, "a", 10);
    ASSERT_THAT(r, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(r.error().message, StartsWith("the sandbox worker died during \"read\""));
    EXPECT_TRUE(remote.broken());
    auto start = std::chrono::steady_clock::now();
    auto later = remote.stat(Root::kWorkspace, "");
    ASSERT_THAT(later, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(later.error().message, StartsWith("the sandbox worker is gone"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(RemoteWorkspaceFakeWorkerTest, AWorkerThatClosesBeforeReplyingIsUnavailable) {
    FdLeakChecker leaks;
    FakeWorker worker([](int fd, const channel::Request&) { ::shutdown(fd, SHUT_RDWR); });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    auto r = remote.list(Root::kWorkspace, "", 10);
    ASSERT_THAT(r, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(r.error().message, HasSubstr("the sandbox worker died during \"list\""));
}

TEST(RemoteWorkspaceFakeWorkerTest, AWorkerThatNeverAnswersHitsTheCallDeadline) {
    FdLeakChecker leaks;
    FakeWorker worker([](int, const channel::Request&) {});
    RemoteWorkspace remote(
        worker.take_client(), "/ws", "/spill",
        RemoteWorkspace::Options{.call_timeout = std::chrono::milliseconds(200)});
    auto start = std::chrono::steady_clock::now();
    auto r = remote.stat(Root::kWorkspace, "a");
    ASSERT_THAT(r, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(r.error().message, HasSubstr("did not answer \"stat\""));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_TRUE(remote.broken());
}

TEST(RemoteWorkspaceFakeWorkerTest, AWorkerOfAnotherVersionIsRefusedAtHello) {
    FdLeakChecker leaks;
    FakeWorker worker([](int, const channel::Request&) {}, /*hello_version=*/2);
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    auto r = remote.handshake();
    ASSERT_THAT(r, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(r.error().message, HasSubstr("peer speaks version 2"));
    EXPECT_TRUE(remote.broken());
}

enum class FakeFd : uint8_t { kPipeRead, kPipeWrite, kSocket };

// A spawn (or commands) reply with descriptors of the given kinds attached.
struct HostileFdCase {
    const char* name;
    std::function<Status(RemoteWorkspace&)> call;
    std::function<json(uint64_t id)> header;
    std::vector<FakeFd> fds;
    const char* message;
};

class RemoteWorkspaceHostileFdTest : public ::testing::TestWithParam<HostileFdCase> {
protected:
    FdLeakChecker leaks_;
};

TEST_P(RemoteWorkspaceHostileFdTest, IsAnInvalidReplyAndBreaksTheChannel) {
    const HostileFdCase& c = GetParam();
    FakeWorker worker([&](int fd, const channel::Request& request) {
        std::vector<UniqueFd> keep;
        std::vector<int> fds;
        for (FakeFd kind : c.fds) {
            auto pair = kind == FakeFd::kSocket ? make_socketpair(SOCK_STREAM) : make_pipe();
            ASSERT_THAT(pair, IsOk());
            fds.push_back(kind == FakeFd::kPipeWrite ? pair->second.get() : pair->first.get());
            keep.push_back(std::move(pair->first));
            keep.push_back(std::move(pair->second));
        }
        (void)channel::send_frame(fd, raw_frame(c.header(request.id)), fds);
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    Status st = c.call(remote);
    ASSERT_THAT(st, HasErrc(Errc::kInternal));
    EXPECT_THAT(st.error().message, StartsWith("worker sent an invalid reply: "));
    EXPECT_THAT(st.error().message, HasSubstr(c.message));
    EXPECT_TRUE(remote.broken());
}

Status spawn_echo(RemoteWorkspace& r) {
    return status_of(r.spawn(SpawnRequest{.argv = {"echo"}}));
}

json spawn_reply(uint64_t id, int pid = 42, bool has_input = false, bool has_pidfd = false) {
    return json{{"v", 1},
                {"id", id},
                {"ok", true},
                {"pid", pid},
                {"has_input", has_input},
                {"has_pidfd", has_pidfd}};
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RemoteWorkspaceHostileFdTest,
    ::testing::Values(
        HostileFdCase{"FewerDescriptorsThanAnnounced",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id); },
                      {FakeFd::kPipeRead},
                      "announces 2 descriptors but carries 1"},
        HostileFdCase{"MoreDescriptorsThanAnnounced",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead, FakeFd::kPipeRead},
                      "announces 2 descriptors but carries 3"},
        HostileFdCase{"APidfdAnnouncedButMissing",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id, 42, false, true); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead},
                      "announces 3 descriptors but carries 2"},
        HostileFdCase{"PidOne",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id, 1); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead},
                      "spawn pid 1 is out of range"},
        HostileFdCase{"OutputIsASocket",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id); },
                      {FakeFd::kSocket, FakeFd::kPipeRead},
                      "output descriptor is not a pipe's read end"},
        HostileFdCase{"OutputIsAWriteEnd",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id); },
                      {FakeFd::kPipeWrite, FakeFd::kPipeRead},
                      "output descriptor is not a pipe's read end"},
        HostileFdCase{"OutputIsNotAPtyMaster",
                      [](RemoteWorkspace& r) {
                          return status_of(r.spawn(SpawnRequest{.argv = {"echo"}, .pty = true}));
                      },
                      [](uint64_t id) { return spawn_reply(id); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead},
                      "output descriptor is not a PTY master"},
        HostileFdCase{"AnUnaskedForInputPipe",
                      spawn_echo,
                      [](uint64_t id) { return spawn_reply(id, 42, true); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead, FakeFd::kPipeWrite},
                      "unasked-for input pipe"},
        HostileFdCase{"InputIsAReadEnd",
                      [](RemoteWorkspace& r) {
                          return status_of(
                              r.spawn(SpawnRequest{.argv = {"cat"}, .interactive = true}));
                      },
                      [](uint64_t id) { return spawn_reply(id, 42, true); },
                      {FakeFd::kPipeRead, FakeFd::kPipeRead, FakeFd::kPipeRead},
                      "input descriptor is not a pipe's write end"},
        HostileFdCase{"DescriptorsOnACommandsReply",
                      [](RemoteWorkspace& r) { return status_of(r.path_commands()); },
                      [](uint64_t id) {
                          return json{{"v", 1}, {"id", id}, {"ok", true}, {"names", {"sh"}}};
                      },
                      {FakeFd::kPipeRead},
                      "1 unexpected descriptors"},
        HostileFdCase{"CommandsNotSorted",
                      [](RemoteWorkspace& r) { return status_of(r.path_commands()); },
                      [](uint64_t id) {
                          return json{{"v", 1}, {"id", id}, {"ok", true}, {"names", {"sh", "ls"}}};
                      },
                      {},
                      "not sorted and unique"},
        HostileFdCase{"ASignalReplyWithoutDelivered",
                      [](RemoteWorkspace& r) {
                          return status_of(r.signal_group(ProcessGroupRef{.pgid = 5}, SIGTERM));
                      },
                      [](uint64_t id) {
                          return json{{"v", 1}, {"id", id}, {"ok", true}};
                      },
                      {},
                      "\"delivered\" is missing"}),
    [](const auto& p) { return std::string(p.param.name); });

// ---- Multiplexing against the fake worker ---------------------------------------------------

using std::chrono::seconds;

json stat_reply(uint64_t id, uint64_t size) {
    return json{{"v", 1}, {"id", id}, {"ok", true}, {"info", file_info(size)}};
}

std::string read_reply(uint64_t id, const std::string& bytes) {
    return raw_frame(json{{"v", 1},
                          {"id", id},
                          {"ok", true},
                          {"info", file_info(bytes.size())},
                          {"truncated", false}},
                     bytes);
}

// A read sent first and held by the fake worker, then a stat from the test's thread: the
// fake's script decides what happens to the stat (and to the read it holds, `read_id`).
struct HeldRead {
    std::promise<uint64_t> seen;  // the read's id, once the fake has it
    std::optional<Result<ReadData>> result;
    std::jthread thread;

    // Starts the read on its own thread and waits until the fake worker holds it.
    uint64_t start(RemoteWorkspace& remote) {
        std::future<uint64_t> id = seen.get_future();
        thread = std::jthread(
            [this, &remote] { result.emplace(remote.read(Root::kWorkspace, "r", 10)); });
        EXPECT_EQ(id.wait_for(seconds(10)), std::future_status::ready);
        return id.get();
    }
    Result<ReadData> finish() {
        thread.join();
        return std::move(*result);
    }
};

TEST(RemoteWorkspaceMultiplexTest, RepliesInAnotherOrderReachTheCallersTheyAnswer) {
    FdLeakChecker leaks;
    HeldRead read;
    std::promise<void> stat_returned;
    std::future<void> stat_returned_future = stat_returned.get_future();
    uint64_t read_id = 0;
    FakeWorker worker([&](int fd, const channel::Request& request) {
        if (std::holds_alternative<channel::ReadArgs>(request.args)) {
            read_id = request.id;
            read.seen.set_value(request.id);
            return;
        }
        // The stat, sent after the read, is answered first; the read only once the stat's
        // caller has its result.
        (void)channel::send_frame(fd, raw_frame(stat_reply(request.id, 7)));
        (void)stat_returned_future.wait_for(seconds(10));
        (void)channel::send_frame(fd, read_reply(read_id, "abc"));
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    read.start(remote);

    auto st = remote.stat(Root::kWorkspace, "s");
    stat_returned.set_value();
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->size, 7U);
    auto rd = read.finish();
    ASSERT_THAT(rd, IsOk());
    EXPECT_EQ(rd->bytes, "abc");
    EXPECT_FALSE(remote.broken());
}

TEST(RemoteWorkspaceMultiplexTest, AReplyWithAnIdNoCallWaitsForBreaksTheChannelForEveryCall) {
    FdLeakChecker leaks;
    HeldRead read;
    FakeWorker worker([&](int fd, const channel::Request& request) {
        if (std::holds_alternative<channel::ReadArgs>(request.args)) {
            read.seen.set_value(request.id);
            return;
        }
        (void)channel::send_frame(fd, raw_frame(stat_reply(request.id + 1000, 7)));  // forged
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    read.start(remote);

    auto st = remote.stat(Root::kWorkspace, "s");
    ASSERT_THAT(st, HasErrc(Errc::kInternal));
    EXPECT_THAT(st.error().message, StartsWith("worker sent an invalid reply: reply id "));
    EXPECT_THAT(st.error().message, HasSubstr("answers no request"));
    // Nobody can tell which call the forged reply was meant for: the read fails alike.
    auto rd = read.finish();
    ASSERT_THAT(rd, HasErrc(Errc::kInternal));
    EXPECT_EQ(rd.error().message, st.error().message);
    EXPECT_TRUE(remote.broken());
    auto later = remote.stat(Root::kWorkspace, "");
    ASSERT_THAT(later, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(later.error().message, StartsWith("the sandbox worker is gone"));
}

TEST(RemoteWorkspaceMultiplexTest, ASecondReplyToACallBreaksTheChannel) {
    FdLeakChecker leaks;
    HeldRead read;
    FakeWorker worker([&](int fd, const channel::Request& request) {
        if (std::holds_alternative<channel::ReadArgs>(request.args)) {
            read.seen.set_value(request.id);
            return;
        }
        (void)channel::send_frame(fd, raw_frame(stat_reply(request.id, 7)));
        (void)channel::send_frame(fd, raw_frame(stat_reply(request.id, 8)));  // again
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    read.start(remote);

    auto st = remote.stat(Root::kWorkspace, "s");  // the first reply is valid
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->size, 7U);
    auto rd = read.finish();  // the duplicate is read while the read still waits
    ASSERT_THAT(rd, HasErrc(Errc::kInternal));
    EXPECT_THAT(rd.error().message, HasSubstr("answers no request"));
    EXPECT_TRUE(remote.broken());
}

TEST(RemoteWorkspaceMultiplexTest, AReplyShapedForAnotherOpBreaksTheChannel) {
    FdLeakChecker leaks;
    HeldRead read;
    FakeWorker worker([&](int fd, const channel::Request& request) {
        if (std::holds_alternative<channel::ReadArgs>(request.args)) {
            read.seen.set_value(request.id);
            return;
        }
        // The stat's reply, sent with the read's id.
        (void)channel::send_frame(fd, raw_frame(stat_reply(request.id - 1, 7)));
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    const uint64_t read_id = read.start(remote);

    auto st = remote.stat(Root::kWorkspace, "s");
    ASSERT_EQ(read_id + 1, 3U) << "ids are given in order: hello 1, read 2, stat 3";
    auto rd = read.finish();
    ASSERT_THAT(rd, HasErrc(Errc::kInternal));
    EXPECT_THAT(rd.error().message, StartsWith("worker sent an invalid reply: "));
    ASSERT_THAT(st, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(st.error().message,
                StartsWith("the sandbox worker is gone (worker sent an invalid"));
    EXPECT_TRUE(remote.broken());
}

TEST(RemoteWorkspaceMultiplexTest, AWorkerThatDiesFailsEveryCallInFlight) {
    FdLeakChecker leaks;
    HeldRead read;
    FakeWorker worker([&](int fd, const channel::Request& request) {
        if (std::holds_alternative<channel::ReadArgs>(request.args)) {
            read.seen.set_value(request.id);
            return;
        }
        ::shutdown(fd, SHUT_RDWR);
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill");
    ASSERT_THAT(remote.handshake(), IsOk());
    read.start(remote);

    auto st = remote.stat(Root::kWorkspace, "s");
    ASSERT_THAT(st, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(st.error().message, StartsWith("the sandbox worker died during \"stat\""));
    auto rd = read.finish();
    ASSERT_THAT(rd, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(rd.error().message, StartsWith("the sandbox worker died during \"read\""));
    EXPECT_TRUE(remote.broken());
}

TEST(RemoteWorkspaceMultiplexTest, EachCallKeepsItsOwnDeadlineWhoeverReads) {
    FdLeakChecker leaks;
    std::promise<void> rg_seen;
    FakeWorker worker([&](int, const channel::Request& request) {
        if (std::holds_alternative<RgRequest>(request.args)) {
            rg_seen.set_value();
        }
        // Nothing is ever answered.
    });
    RemoteWorkspace remote(worker.take_client(), "/ws", "/spill",
                           RemoteWorkspace::Options{.call_timeout = std::chrono::milliseconds(200),
                                                    .rg_grace = std::chrono::milliseconds(60'000)});
    ASSERT_THAT(remote.handshake(), IsOk());
    // The rg call waits first, so it reads; its deadline is a minute away.
    std::optional<Result<RgOutcome>> rg;
    std::jthread searcher([&] { rg.emplace(remote.run_rg(RgRequest{.args = {"-e", "x"}})); });
    ASSERT_EQ(rg_seen.get_future().wait_for(seconds(10)), std::future_status::ready);

    auto st = remote.stat(Root::kWorkspace, "s");
    ASSERT_THAT(st, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(st.error().message, HasSubstr("did not answer \"stat\" within 0.2 s"));
    searcher.join();  // the stat's deadline broke the channel: the rg fails with it
    ASSERT_TRUE(rg.has_value());
    ASSERT_THAT(*rg, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(
        rg->error().message,
        StartsWith("the sandbox worker is gone (the sandbox worker did not answer \"stat\""));
    EXPECT_TRUE(remote.broken());
}

}  // namespace
}  // namespace stockade::workspace
