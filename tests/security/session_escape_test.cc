// Escape attempts from commands the agent runs with `bash` and `process`: they share the
// session worker's sandbox, so they must not reach the worker's channel, memory or
// descriptors, kill it, push input into a terminal, or leave processes behind. Under ctest the
// suite runs again with every session on an imported image (STOCKADE_TEST_IMAGE=1,
// tests/testing/test_image.h: busybox, the host's libc and the host programs the commands are
// written in) rather than the host's /usr.
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"
#include "tests/testing/test_image.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SessionEscapeTest : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        workspace_.write_file("marker.txt", "still here\n");
        serve_ = start_serve(workspace_.path());
        auto init = serve_->initialize();
        ASSERT_TRUE(init.contains("result")) << init.dump();
    }
    void TearDown() override {
        end_session();
        for (pid_t worker : worker_pids(state_.path())) {
            EXPECT_FALSE(alive(worker)) << "worker " << worker << " outlived its session";
        }
    }
    // `stockade serve` on `workspace` with `flags`, and on the test image when it is wanted.
    std::unique_ptr<ServeProcess> start_serve(const std::string& workspace,
                                              std::vector<std::string> flags = {}) const {
        const std::vector<std::string> image = test_image_flags();
        flags.insert(flags.end(), image.begin(), image.end());
        ServeLaunch launch;
        launch.env = test_image_env();
        return std::make_unique<ServeProcess>(workspace, state_.path(), flags, launch);
    }

    void end_session() {
        if (serve_ && serve_->pid() > 0) {
            serve_->close_input();
            EXPECT_EQ(serve_->wait_exit(std::chrono::seconds(20)), 0);
        }
    }
    std::string bash(const std::string& command) {
        return text_of(serve_->call("bash", {{"command", command}}));
    }

    TempDir workspace_{"stockade-sess-ws"};
    TempDir state_{"stockade-sess-state"};
    std::unique_ptr<ServeProcess> serve_;
};

TEST_F(SessionEscapeTest, ACommandCannotReachTheWorkerChannelOrItsDescriptors) {
    // The channel is fd 3 of the worker only; the command has nothing past stderr.
    std::string fds = bash("ls /proc/self/fd | sort -n | tr '\\n' ' '");
    EXPECT_THAT(fds, HasSubstr("0 1 2 3 ")) << fds;  // 3 is ls's own directory
    EXPECT_THAT(fds, Not(HasSubstr("0 1 2 3 4"))) << fds;
    EXPECT_THAT(bash("echo hi >&4 2>&1 && echo WROTE-FD4 || echo no-fd4"), HasSubstr("no-fd4"));
    // The worker is non-dumpable: its fds, memory and environment are closed to the command.
    std::string probe = bash(
        "ls /proc/1/fd >/dev/null 2>&1 && echo FDS-OPEN || echo fds-closed; "
        "head -c 1 /proc/1/mem >/dev/null 2>&1 && echo MEM-OPEN || echo mem-closed; "
        "cat /proc/1/environ >/dev/null 2>&1 && echo ENV-OPEN || echo env-closed");
    EXPECT_THAT(probe, HasSubstr("fds-closed"));
    EXPECT_THAT(probe, HasSubstr("mem-closed"));
    EXPECT_THAT(probe, HasSubstr("env-closed"));
}

TEST_F(SessionEscapeTest, ACommandCannotKillOrTraceTheWorker) {
    std::string killed = bash("kill -KILL 1; kill -TERM 1; echo sent");
    EXPECT_THAT(killed, HasSubstr("sent"));
    auto read = serve_->call("read", {{"file_path", "marker.txt"}});
    EXPECT_THAT(text_of(read), HasSubstr("still here"));
    EXPECT_EQ(worker_pids(state_.path()).size(), 1U) << "the worker survived: no restart";
    std::string traced = bash(
        "python3 -c \"import ctypes; r = ctypes.CDLL(None).ptrace(16, 1, 0, 0); "
        "print('attach', r)\"");
    EXPECT_THAT(traced, HasSubstr("attach -1"));
}

TEST_F(SessionEscapeTest, NoInputCanBePushedIntoATerminal) {
    auto started = serve_->call(
        "process", {{"action", "start"},
                    {"command",
                     "python3 -c \"import fcntl, termios\ntry:\n    fcntl.ioctl(0, "
                     "termios.TIOCSTI, b'x')\n    print('PUSHED')\nexcept OSError as e:\n    "
                     "print('refused', e.errno)\""}});
    std::string text = text_of(started);
    EXPECT_THAT(text, HasSubstr("refused")) << text;
    EXPECT_THAT(text, Not(HasSubstr("PUSHED")));
}

// Takes every inotify instance and queues every real-time signal the sandbox may, reports
// how many, and holds them.
constexpr const char* kExhaust = R"py(import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
queued = 0
while queued < 200000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(1)) == 0:
    queued += 1
print("held inotify=%d signals=%d" % (len(fds), queued), flush=True)
time.sleep(120)
)py";

// What the host (this test's user) can still take: inotify instances (up to `want`) and one
// queued signal.
std::pair<int, bool> host_can_take(int want) {
    std::vector<UniqueFd> fds;
    while (static_cast<int>(fds.size()) < want) {
        UniqueFd fd(::inotify_init1(IN_CLOEXEC));
        if (!fd) {
            break;
        }
        fds.push_back(std::move(fd));
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &set, &old);
    const bool queued = ::sigqueue(::getpid(), SIGRTMIN + 1, sigval{.sival_int = 1}) == 0;
    if (queued) {
        const timespec zero{};
        (void)::sigtimedwait(&set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return {static_cast<int>(fds.size()), queued};
}

TEST_F(SessionEscapeTest, ASessionExhaustingItsKernelQuotasLeavesTheHostAndOtherSessionsTheirs) {
    // The kernel counts inotify instances and queued signals per user, and up the user
    // namespaces to their owners: a sandbox made by root, or sharing its caller's budget,
    // could leave the host and every other session none.
    workspace_.write_file("exhaust.py", kExhaust);
    auto hold = [](ServeProcess& serve) {
        auto started =
            serve.call("process", {{"action", "start"}, {"command", "python3 exhaust.py"}});
        std::string seen = text_of(started);
        for (int i = 0; i < 20 && seen.find("held inotify") == std::string::npos; ++i) {
            seen += text_of(serve.call("process", {{"action", "wait"}, {"id", "p1"}}));
        }
        std::smatch m;
        const std::regex re("held inotify=(\\d+) signals=(\\d+)");
        if (!std::regex_search(seen, m, re)) {
            ADD_FAILURE() << "the exhausting process did not report: " << seen;
            return std::pair<int, int>{-1, -1};
        }
        return std::pair<int, int>{std::stoi(m[1]), std::stoi(m[2])};
    };
    const auto [inotify, signals] = hold(*serve_);
    EXPECT_GT(inotify, 0);
    EXPECT_LE(inotify, 64) << "the session's share of inotify instances";
    EXPECT_GT(signals, 0);
    EXPECT_LE(signals, 4096) << "the session's share of queued signals";
    const auto [host_inotify, host_signal] = host_can_take(16);
    EXPECT_EQ(host_inotify, 16) << "the host lost its inotify instances to the session";
    EXPECT_TRUE(host_signal) << "the host cannot queue a signal any more";

    TempDir other_ws{"stockade-sess-ws2"};
    other_ws.write_file("exhaust.py", kExhaust);
    const std::unique_ptr<ServeProcess> other = start_serve(other_ws.path());
    ASSERT_TRUE(other->initialize().contains("result"));
    const auto [other_inotify, other_signals] = hold(*other);
    EXPECT_GT(other_inotify, 0) << "a second session got no inotify instance";
    EXPECT_GT(other_signals, 0) << "a second session could not queue a signal";
    other->close_input();
    EXPECT_EQ(other->wait_exit(std::chrono::seconds(20)), 0);
}

TEST_F(SessionEscapeTest, ADaemonThatLeavesItsGroupStillDiesWithTheSession) {
    // setsid leaves the process group `stop` signals; the pid namespace still ends it.
    std::string out = bash("setsid sleep 9191 </dev/null >/dev/null 2>&1 & echo launched");
    EXPECT_THAT(out, HasSubstr("launched"));
    end_session();
    bool found = false;
    for (int attempt = 0; attempt < 50; ++attempt) {
        found = false;
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
            auto cmdline = read_file_text(entry.path().string() + "/cmdline");
            if (cmdline && cmdline->find("9191") != std::string::npos &&
                cmdline->rfind("sleep", 0) == 0) {
                found = true;
            }
        }
        if (!found) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_FALSE(found) << "a setsid'd process outlived the session";
}

// Whether a process with this exact command line runs (not a zombie) anywhere on the host.
bool running(const std::string& cmdline) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        auto text = read_file_text(entry.path().string() + "/cmdline");
        if (!text || *text != cmdline) {
            continue;
        }
        auto stat = read_file_text(entry.path().string() + "/stat");
        const size_t paren = stat ? stat->rfind(')') : std::string::npos;
        if (paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] != 'Z') {
            return true;
        }
    }
    return false;
}

bool gone_soon(const std::string& cmdline) {
    for (int i = 0; i < 100 && running(cmdline); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return !running(cmdline);
}

TEST_F(SessionEscapeTest, WhatABashCallLeavesRunningIsStoppedWhenItReturns) {
    // setsid, a double fork and nohup all leave the command's process group; none of them
    // leaves the command.
    std::string out = bash(
        "setsid sleep 9201 </dev/null >/dev/null 2>&1 & "
        "(sleep 9202 </dev/null >/dev/null 2>&1 &) ; "
        "nohup sleep 9203 </dev/null >/dev/null 2>&1 & echo launched");
    EXPECT_THAT(out, HasSubstr("launched"));
    EXPECT_THAT(out, HasSubstr("Stopped 3 processes this command left running")) << out;
    for (const char* n : {"9201", "9202", "9203"}) {
        EXPECT_TRUE(gone_soon(std::string("sleep\0", 6) + n + std::string(1, '\0')))
            << "sleep " << n << " outlived its bash call";
    }
}

TEST_F(SessionEscapeTest, StoppingAProcessStopsWhatItStartedOutsideItsGroup) {
    auto started = serve_->call(
        "process", {{"action", "start"},
                    {"command", "setsid sleep 9204 </dev/null >/dev/null 2>&1 & sleep 600"}});
    ASSERT_THAT(text_of(started), HasSubstr("Started p1"));
    const std::string daemon = std::string("sleep\0", 6) + "9204" + std::string(1, '\0');
    for (int i = 0; i < 100 && !running(daemon); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(running(daemon)) << "it runs while its process does";
    auto stopped = serve_->call("process", {{"action", "stop"}, {"id", "p1"}});
    EXPECT_THAT(text_of(stopped), HasSubstr("it left running")) << text_of(stopped);
    EXPECT_TRUE(gone_soon(daemon)) << "the setsid'd child outlived `process stop`";
}

TEST_F(SessionEscapeTest, NoCommandCanTakeALeaseThatWouldFreezeTheWorker) {
    // A write lease on a script makes every other open and exec of it wait for the lease to be
    // broken (lease-break-time, 45 s): the worker's read, and its exec of the script.
    workspace_.write_file("run.sh", "#!/bin/sh\necho ran\n");
    ASSERT_EQ(::chmod(workspace_.sub("run.sh").c_str(), 0755), 0);
    auto held = serve_->call(
        "process", {{"action", "start"},
                    {"command",
                     "python3 -c \"import fcntl, time\nf = open('run.sh')\ntry:\n    "
                     "fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_WRLCK)\n    print('LEASED', "
                     "flush=True)\nexcept OSError as e:\n    print('refused', e.errno, "
                     "flush=True)\ntime.sleep(60)\""}});
    std::string seen = text_of(held);
    for (int i = 0; i < 20 && seen.find("LEASED") == std::string::npos &&
                    seen.find("refused") == std::string::npos;
         ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        seen += text_of(serve_->call("process", {{"action", "read"}, {"id", "p1"}}));
    }
    EXPECT_THAT(seen, HasSubstr("refused 1")) << seen;
    const auto started = std::chrono::steady_clock::now();
    EXPECT_THAT(bash("./run.sh"), HasSubstr("ran"));
    EXPECT_THAT(text_of(serve_->call("read", {{"file_path", "run.sh"}})), HasSubstr("echo ran"));
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20))
        << "the worker waited on a lease";
    (void)serve_->call("process", {{"action", "stop"}, {"id", "p1"}});
}

TEST_F(SessionEscapeTest, AProcessThatFillsTheProcessLimitIsNamedByTheNextFailure) {
    end_session();
    serve_ = start_serve(workspace_.path(), {"--pids", "40"});
    ASSERT_TRUE(serve_->initialize().contains("result"));
    auto started = serve_->call(
        "process", {{"action", "start"},
                    {"command", "for i in $(seq 1 60); do sleep 600 & done 2>/dev/null; wait"}});
    ASSERT_THAT(text_of(started), HasSubstr("Started p1"));
    std::string list;
    for (int i = 0; i < 50; ++i) {
        list = text_of(serve_->call("process", {{"action", "list"}}));
        if (list.find("Near the limit") != std::string::npos) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_THAT(list, HasSubstr("of 40 allowed")) << list;
    EXPECT_THAT(list, HasSubstr("Near the limit")) << list;
    auto refused = serve_->call("bash", {{"command", "true"}});
    EXPECT_TRUE(refused["result"].value("isError", false)) << refused.dump();
    EXPECT_THAT(text_of(refused), HasSubstr("p1 (for i in"));
    EXPECT_THAT(text_of(refused), HasSubstr(R"({"action":"stop","id":"p1"})"));
    (void)serve_->call("process", {{"action", "stop"}, {"id", "p1"}});
    EXPECT_THAT(bash("echo room again"), HasSubstr("room again"));
}

}  // namespace
}  // namespace stockade::testing
