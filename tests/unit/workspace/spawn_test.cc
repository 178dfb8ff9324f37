// LocalWorkspace::spawn, signal_group, reap_children and path_commands, with real processes.
// Every test reaps what it starts (TearDown kills and reaps any leader a failed assertion left).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/syscall.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"
#include "workspace/local_workspace.h"

namespace stockade::workspace {
namespace {

using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kLimit = 5s;

int ms_left(Clock::time_point deadline) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

// Reads until `done(out)` holds, EOF (a pipe) or EIO (a PTY master once no slave is open).
std::string read_while(int fd, const std::function<bool(const std::string&)>& done) {
    std::string out;
    const auto deadline = Clock::now() + kLimit;
    while (!done(out)) {
        if (Clock::now() >= deadline) {
            ADD_FAILURE() << "output did not complete within the limit; got: " << out;
            break;
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, ms_left(deadline)) <= 0) {
            continue;
        }
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno == EIO) {
            break;
        } else if (errno != EINTR && errno != EAGAIN) {
            ADD_FAILURE() << "read: " << errno_string(errno);
            break;
        }
    }
    return out;
}

std::string read_to_eof(int fd) {
    return read_while(fd, [](const std::string&) { return false; });
}

std::string read_until(int fd, std::string_view needle) {
    return read_while(fd,
                      [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

// What the worker does: reap until the leader's status arrives on its status pipe.
std::optional<int> wait_status(LocalWorkspace& ws, int status_fd) {
    const auto deadline = Clock::now() + kLimit;
    while (Clock::now() < deadline) {
        ws.reap_children();
        pollfd p{status_fd, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) {
            continue;
        }
        unsigned char bytes[4] = {};
        size_t got = 0;
        while (got < sizeof bytes) {
            const ssize_t n = ::read(status_fd, bytes + got, sizeof bytes - got);
            if (n <= 0) {
                return std::nullopt;  // EOF without a status
            }
            got += static_cast<size_t>(n);
        }
        char extra = 0;
        EXPECT_EQ(::read(status_fd, &extra, 1), 0) << "the status pipe closes after 4 bytes";
        const uint32_t raw = bytes[0] | (uint32_t{bytes[1]} << 8U) | (uint32_t{bytes[2]} << 16U) |
                             (uint32_t{bytes[3]} << 24U);
        return static_cast<int>(raw);
    }
    ADD_FAILURE() << "no status within the limit";
    return std::nullopt;
}

// A process that has exited (zombie or gone), per /proc.
bool gone(int pid) {
    auto stat = read_file(fmt::format("/proc/{}/stat", pid));
    if (!stat) {
        return true;
    }
    const size_t paren = stat->rfind(')');
    return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

bool wait_gone(int pid) {
    const auto deadline = Clock::now() + kLimit;
    while (Clock::now() < deadline) {
        if (gone(pid)) {
            return true;
        }
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

// No child of this process is left, exited or running.
bool no_children() {
    siginfo_t info{};
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD;
}

class SpawnTest : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_.mkdir("ws/sub");
        tmp_.mkdir("outside");
        tmp_.write("ws/hello.txt", "hello\n");
        open_workspace(LocalWorkspace::Options{});
    }

    void open_workspace(LocalWorkspace::Options options) {
        auto ws = LocalWorkspace::open(tmp_.at("ws"), "", std::move(options));
        ASSERT_THAT(ws, IsOk());
        ws_.emplace(std::move(*ws));
    }

    void TearDown() override {
        // Whatever a failed assertion left running: kill its group and reap it.
        for (int pid : started_) {
            (void)ws_->signal_group(ProcessGroupRef{.pgid = pid}, SIGKILL);
        }
        const auto deadline = Clock::now() + kLimit;
        for (int pid : started_) {
            while (Clock::now() < deadline && ::kill(pid, 0) == 0) {
                ws_->reap_children();
                std::this_thread::sleep_for(5ms);
            }
            EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " was left behind";
        }
        EXPECT_TRUE(no_children());
    }

    Result<SpawnedProcess> spawn(SpawnRequest request) {
        auto r = ws_->spawn(request);
        if (r) {
            started_.push_back(r->pid);
        }
        return r;
    }

    Result<SpawnedProcess> sh(const std::string& script, SpawnRequest base = {}) {
        base.argv = {"/bin/sh", "-c", script};
        return spawn(std::move(base));
    }

    std::optional<int> status_of(const SpawnedProcess& p) {
        return wait_status(*ws_, p.status.get());
    }

    FdLeakChecker leaks_;  // first: checks after everything below is destroyed
    TempDir tmp_;
    std::optional<LocalWorkspace> ws_;
    std::vector<int> started_;
};

bool exited_with(std::optional<int> status, int code) {
    return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}
bool killed_by(std::optional<int> status, int sig) {
    return status && WIFSIGNALED(*status) && WTERMSIG(*status) == sig;
}

TEST_F(SpawnTest, PipeOutputCarriesStdoutAndStderr) {
    auto p = sh("echo hi; echo err >&2");
    ASSERT_THAT(p, IsOk());
    EXPECT_GT(p->pid, 1);
    EXPECT_EQ(p->epoch, 0U);
    EXPECT_FALSE(p->input.valid());
    EXPECT_EQ(read_to_eof(p->output.get()), "hi\nerr\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
    if (p->pidfd) {
        pollfd pfd{p->pidfd.get(), POLLIN, 0};
        EXPECT_EQ(::poll(&pfd, 1, 0), 1) << "the pidfd is readable once the leader exited";
    }
}

TEST_F(SpawnTest, ArgvZeroIsFoundOnPath) {
    auto p = spawn(SpawnRequest{.argv = {"echo", "a b", "c"}});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "a b c\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, TheStatusPipeGetsTheExitStatus) {
    auto p = sh("exit 7");
    ASSERT_THAT(p, IsOk());
    EXPECT_TRUE(exited_with(status_of(*p), 7));
}

TEST_F(SpawnTest, StdinIsDevNullWithoutATerminalWhenNotInteractive) {
    auto p = sh("cat; test -t 0 || echo not-a-tty; (exec 3<>/dev/tty) 2>/dev/null || echo no-ctty");
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "not-a-tty\nno-ctty\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, TheChildLeadsItsOwnSessionAndGroup) {
    auto p = sh("sleep 100");
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(::getpgid(p->pid), p->pid);
    EXPECT_EQ(::getsid(p->pid), p->pid);
    auto sent = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, SIGKILL);
    ASSERT_THAT(sent, IsOk());
    EXPECT_TRUE(*sent);
    EXPECT_TRUE(killed_by(status_of(*p), SIGKILL));
}

TEST_F(SpawnTest, PtyOutputIsATerminalWithPlainNewlines) {
    auto p = sh("test -t 1 && echo tty; test -t 2 && echo err-tty >&2; printf 'a\\nb\\n'",
                SpawnRequest{.pty = true});
    ASSERT_THAT(p, IsOk());
    EXPECT_FALSE(p->input.valid());
    // ONLCR is off: "\n", not "\r\n".
    EXPECT_EQ(read_to_eof(p->output.get()), "tty\nerr-tty\na\nb\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, APtyWithoutInteractiveIsNotTheControllingTerminal) {
    auto p = sh("test -t 0 || echo stdin-not-tty; (exec 3<>/dev/tty) 2>/dev/null || echo no-ctty",
                SpawnRequest{.pty = true});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "stdin-not-tty\nno-ctty\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, InteractivePtyIsStdinAndControllingTerminalWithItsSize) {
    auto p = sh("stty size; (exec 3<>/dev/tty) && echo ctty",
                SpawnRequest{.pty = true, .interactive = true, .rows = 30, .cols = 100});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "30 100\nctty\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, InteractivePtyRunsAReplThroughTheMaster) {
    auto p = spawn(SpawnRequest{.argv = {"cat"}, .pty = true, .interactive = true});
    ASSERT_THAT(p, IsOk());
    const int master = p->output.get();
    ASSERT_EQ(::write(master, "hello\n", 6), 6);
    // The line discipline echoes the line, then cat writes it back.
    EXPECT_EQ(read_until(master, "hello\nhello\n"), "hello\nhello\n");
    ASSERT_EQ(::write(master, "\x04", 1), 1);  // Ctrl-D: end of input
    EXPECT_EQ(read_to_eof(master), "");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, CtrlCThroughTheInteractivePtyInterruptsTheForegroundGroup) {
    auto p = spawn(SpawnRequest{.argv = {"sleep", "100"}, .pty = true, .interactive = true});
    ASSERT_THAT(p, IsOk());
    ASSERT_EQ(::write(p->output.get(), "\x03", 1), 1);
    EXPECT_TRUE(killed_by(status_of(*p), SIGINT));
}

TEST_F(SpawnTest, InteractiveWithoutPtyGetsAStdinPipe) {
    auto p = spawn(SpawnRequest{.argv = {"cat"}, .interactive = true});
    ASSERT_THAT(p, IsOk());
    ASSERT_TRUE(p->input.valid());
    ASSERT_THAT(write_all(p->input.get(), "abc\ndef"), IsOk());
    p->input.reset();
    EXPECT_EQ(read_to_eof(p->output.get()), "abc\ndef");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, AnUnknownCommandIsNotFound) {
    auto p = spawn(SpawnRequest{.argv = {"stockade-no-such-command"}});
    ASSERT_THAT(p, HasErrc(Errc::kNotFound));
    EXPECT_EQ(p.error().message, "stockade-no-such-command: command not found");
}

TEST_F(SpawnTest, ANonExecutableMatchOnPathIsPermissionDenied) {
    tmp_.write("bin/tool", "#!/bin/sh\n", 0644);
    open_workspace(LocalWorkspace::Options{.path_env = tmp_.at("bin")});
    auto p = spawn(SpawnRequest{.argv = {"tool"}});
    ASSERT_THAT(p, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(p.error().message, "tool: permission denied");
}

TEST_F(SpawnTest, ExecFailuresAreErrorsNotExit127) {
    tmp_.write("ws/sub/script.sh", "#!/bin/sh\necho ran\n", 0644);
    auto denied = spawn(SpawnRequest{.argv = {"./script.sh"}, .cwd = "sub"});
    ASSERT_THAT(denied, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(denied.error().message, "./script.sh: permission denied");
    auto missing = spawn(SpawnRequest{.argv = {"./nope"}});
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_EQ(missing.error().message, "./nope: no such file or directory");
    // The failed children were reaped by spawn itself.
    EXPECT_TRUE(no_children());
    ::chmod(tmp_.at("ws/sub/script.sh").c_str(), 0755);
    auto ran = spawn(SpawnRequest{.argv = {"./script.sh"}, .cwd = "sub"});
    ASSERT_THAT(ran, IsOk());
    EXPECT_EQ(read_to_eof(ran->output.get()), "ran\n");
    EXPECT_TRUE(exited_with(status_of(*ran), 0));
}

TEST_F(SpawnTest, TheCwdIsResolvedBeneathTheRoot) {
    auto p = sh("pwd -P", SpawnRequest{.cwd = "sub"});
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()),
              std::filesystem::canonical(tmp_.at("ws/sub")).string() + "\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));

    tmp_.symlink("ws/escape", "../outside");
    auto escape = sh("pwd", SpawnRequest{.cwd = "escape"});
    ASSERT_THAT(escape, HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(escape.error().message, HasSubstr("leaves the workspace"));
    EXPECT_THAT(sh("pwd", SpawnRequest{.cwd = "../outside"}), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(sh("pwd", SpawnRequest{.cwd = "/tmp"}), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(sh("pwd", SpawnRequest{.cwd = "missing"}), HasErrc(Errc::kNotFound));
    auto file = sh("pwd", SpawnRequest{.cwd = "hello.txt"});
    ASSERT_FALSE(file.has_value());
    EXPECT_EQ(file.error().sys_errno, ENOTDIR);
    EXPECT_TRUE(no_children());
}

TEST_F(SpawnTest, TheEnvironmentIsTheWorkersPlusTheRequests) {
    ASSERT_EQ(::setenv("STOCKADE_SPAWN_TEST", "inherited", 1), 0);
    ASSERT_EQ(::setenv("STOCKADE_SPAWN_KEPT", "kept", 1), 0);
    auto p =
        sh("echo $FOO $STOCKADE_SPAWN_TEST $STOCKADE_SPAWN_KEPT; env | grep -c "
           "'^STOCKADE_SPAWN_TEST='",
           SpawnRequest{.env = {"FOO=a=b", "STOCKADE_SPAWN_TEST=replaced"}});
    ::unsetenv("STOCKADE_SPAWN_TEST");
    ::unsetenv("STOCKADE_SPAWN_KEPT");
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "a=b replaced kept\n1\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
    EXPECT_THAT(spawn(SpawnRequest{.argv = {"true"}, .env = {"NOEQUALS"}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(spawn(SpawnRequest{.argv = {}}), HasErrc(Errc::kInvalidArgument));
}

TEST_F(SpawnTest, SignalDispositionsAndTheMaskAreReset) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction old_int {};
    ASSERT_EQ(::sigaction(SIGINT, &ignore, &old_int), 0);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigset_t old_mask;
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &old_mask), 0);
    auto by_int = sh("kill -INT $$; echo survived");
    auto by_term = sh("kill -TERM $$; echo survived");
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    ::sigaction(SIGINT, &old_int, nullptr);
    ASSERT_THAT(by_int, IsOk());
    ASSERT_THAT(by_term, IsOk());
    EXPECT_EQ(read_to_eof(by_int->output.get()), "");
    EXPECT_EQ(read_to_eof(by_term->output.get()), "");
    EXPECT_TRUE(killed_by(status_of(*by_int), SIGINT));
    EXPECT_TRUE(killed_by(status_of(*by_term), SIGTERM));
}

TEST_F(SpawnTest, NoOtherDescriptorReachesTheChild) {
    const int inheritable = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
    ASSERT_GE(inheritable, 0);
    auto p = spawn(SpawnRequest{.argv = {"ls", "/proc/self/fd"}});
    ::close(inheritable);
    ASSERT_THAT(p, IsOk());
    // 0-2, and 3: ls's own descriptor of the directory it lists.
    EXPECT_EQ(read_to_eof(p->output.get()), "0\n1\n2\n3\n");
    EXPECT_TRUE(exited_with(status_of(*p), 0));
}

TEST_F(SpawnTest, SignalGroupKillsGrandchildren) {
    auto p = sh("sleep 100 & echo $!; sleep 100");
    ASSERT_THAT(p, IsOk());
    const std::string line = read_until(p->output.get(), "\n");
    const int grandchild = std::atoi(line.c_str());
    ASSERT_GT(grandchild, 1) << line;
    EXPECT_EQ(::getpgid(grandchild), p->pid);
    UniqueFd grandchild_fd(static_cast<int>(::syscall(SYS_pidfd_open, grandchild, 0)));

    auto probe = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, 0);
    ASSERT_THAT(probe, IsOk());
    EXPECT_TRUE(*probe);
    auto sent = ws_->signal_group(ProcessGroupRef{.epoch = 99, .pgid = p->pid}, SIGKILL);
    ASSERT_THAT(sent, IsOk());
    EXPECT_TRUE(*sent);
    EXPECT_TRUE(killed_by(status_of(*p), SIGKILL));
    if (p->pidfd) {
        pollfd pfd{p->pidfd.get(), POLLIN, 0};
        EXPECT_EQ(::poll(&pfd, 1, 0), 1);
    }
    if (grandchild_fd) {
        pollfd pfd{grandchild_fd.get(), POLLIN, 0};
        EXPECT_EQ(::poll(&pfd, 1, static_cast<int>(kLimit / 1ms)), 1) << "grandchild survived";
    }
    EXPECT_TRUE(wait_gone(grandchild));
    EXPECT_EQ(read_to_eof(p->output.get()), "");

    // The leader is reaped and no member is left: nothing to signal.
    auto again = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, SIGKILL);
    ASSERT_THAT(again, IsOk());
    EXPECT_FALSE(*again);
}

TEST_F(SpawnTest, AGroupOutlivingItsReapedLeaderIsStillSignalled) {
    auto p = sh("sleep 100 & echo $!");
    ASSERT_THAT(p, IsOk());
    const int grandchild = std::atoi(read_until(p->output.get(), "\n").c_str());
    ASSERT_GT(grandchild, 1);
    EXPECT_TRUE(exited_with(status_of(*p), 0));  // the leader is reaped; its group lives on
    auto sent = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, SIGKILL);
    ASSERT_THAT(sent, IsOk());
    EXPECT_TRUE(*sent);
    EXPECT_TRUE(wait_gone(grandchild));
    auto again = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, 0);
    ASSERT_THAT(again, IsOk());
    EXPECT_FALSE(*again);
}

TEST_F(SpawnTest, SignalGroupRefusesInitAndItsOwnGroup) {
    for (int pgid : {-5, 0, 1, static_cast<int>(::getpgrp())}) {
        auto r = ws_->signal_group(ProcessGroupRef{.pgid = pgid}, SIGKILL);
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << pgid;
        EXPECT_THAT(r.error().message, HasSubstr("refusing to signal"));
    }
    auto p = sh("exit 0");
    ASSERT_THAT(p, IsOk());
    EXPECT_TRUE(exited_with(status_of(*p), 0));
    EXPECT_THAT(ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, 65),
                HasErrc(Errc::kInvalidArgument));
    auto reaped = ws_->signal_group(ProcessGroupRef{.pgid = p->pid}, SIGTERM);
    ASSERT_THAT(reaped, IsOk());
    EXPECT_FALSE(*reaped);
}

TEST_F(SpawnTest, ReapChildrenTakesOrphansReparentedToTheWorker) {
    // As pid 1 of its namespace the worker inherits orphans; a subreaper does too.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    auto p = sh("sleep 0.2 & echo $!");
    ASSERT_THAT(p, IsOk());
    const int orphan = std::atoi(read_until(p->output.get(), "\n").c_str());
    ASSERT_GT(orphan, 1);
    EXPECT_TRUE(exited_with(status_of(*p), 0));
    const auto deadline = Clock::now() + kLimit;
    while (Clock::now() < deadline && ::kill(orphan, 0) == 0) {
        ws_->reap_children();
        std::this_thread::sleep_for(10ms);
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    EXPECT_NE(::kill(orphan, 0), 0) << "the orphan was not reaped";
}

TEST_F(SpawnTest, ReapingOnAnotherThreadLosesNoStatusAndLeavesRgAlone) {
    std::atomic<bool> stop{false};
    std::jthread reaper([&] {
        while (!stop) {
            ws_->reap_children();
        }
    });
    for (int i = 0; i < 20; ++i) {
        auto p = sh(fmt::format("exit {}", i));
        ASSERT_THAT(p, IsOk());
        EXPECT_TRUE(exited_with(status_of(*p), i)) << i;
    }
    if (::access("/usr/bin/rg", X_OK) == 0) {
        for (int i = 0; i < 5; ++i) {
            auto rg = ws_->run_rg(RgRequest{.args = {"-l", "-e", "hello"}});
            ASSERT_THAT(rg, IsOk());
            EXPECT_EQ(rg->exit_code, 0);
            EXPECT_EQ(rg->out, "hello.txt\n");
        }
    }
    stop = true;
}

TEST_F(SpawnTest, AClosedStatusPipeDoesNotRaiseSigpipe) {
    auto p = sh("exit 3");
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(read_to_eof(p->output.get()), "");
    p->status.reset();  // the supervisor went away
    const auto deadline = Clock::now() + kLimit;
    while (Clock::now() < deadline && !gone(p->pid)) {
        std::this_thread::sleep_for(5ms);
    }
    ws_->reap_children();  // would die of SIGPIPE here if it were not handled
    EXPECT_NE(::kill(p->pid, 0), 0);
}

TEST_F(SpawnTest, PathCommandsListsEveryExecutableOnce) {
    auto defaults = ws_->path_commands();
    ASSERT_THAT(defaults, IsOk());
    EXPECT_THAT(*defaults, Contains("sh"));
    EXPECT_TRUE(std::is_sorted(defaults->begin(), defaults->end()));
    EXPECT_EQ(std::adjacent_find(defaults->begin(), defaults->end()), defaults->end());

    tmp_.write("bin1/b-tool", "", 0755);
    tmp_.write("bin1/noexec", "", 0644);
    tmp_.mkdir("bin1/dir");
    tmp_.symlink("bin1/link", "b-tool");
    tmp_.symlink("bin1/dangling", "missing");
    tmp_.write("bin2/a-tool", "", 0755);
    tmp_.write("bin2/b-tool", "", 0755);
    open_workspace(LocalWorkspace::Options{
        .path_env = fmt::format("relative:{}::{}:/nonexistent", tmp_.at("bin1"), tmp_.at("bin2"))});
    auto names = ws_->path_commands();
    ASSERT_THAT(names, IsOk());
    EXPECT_THAT(*names, ElementsAre("a-tool", "b-tool", "link"));
}

}  // namespace
}  // namespace stockade::workspace
