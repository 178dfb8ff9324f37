// Escape attempts from commands the agent runs with `bash` and `process`: they share the
// session worker's sandbox, so they must not reach the worker's channel, memory or
// descriptors, kill it, push input into a terminal, or leave processes behind.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SessionEscapeTest : public ::testing::Test {
protected:
    void SetUp() override {
        workspace_.write_file("marker.txt", "still here\n");
        serve_ = std::make_unique<ServeProcess>(workspace_.path(), state_.path());
        auto init = serve_->initialize();
        ASSERT_TRUE(init.contains("result")) << init.dump();
    }
    void TearDown() override {
        end_session();
        for (pid_t worker : worker_pids(state_.path())) {
            EXPECT_FALSE(alive(worker)) << "worker " << worker << " outlived its session";
        }
    }
    void end_session() {
        if (serve_->pid() > 0) {
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

}  // namespace
}  // namespace stockade::testing
