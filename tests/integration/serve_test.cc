// `stockade serve` and `stockade call` on real sandboxes: the session worker, its lifetime and
// its view of the filesystem.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A `stockade serve` child driven line by line over pipes.
class ServeProcess {
public:
    ServeProcess(const std::string& workspace, const std::string& state) {
        int in[2];
        int out[2];
        EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
        EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 2);
            ::setenv("STOCKADE_STATE_DIR", state.c_str(), 1);
            std::string bin = stockade_path();
            ::execl(bin.c_str(), bin.c_str(), "serve", "--workspace", workspace.c_str(), nullptr);
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        to_ = in[1];
        from_ = out[0];
    }
    ~ServeProcess() {
        close_input();
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (from_ >= 0) {
            ::close(from_);
        }
    }
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    nlohmann::json request(const std::string& method, nlohmann::json params) {
        nlohmann::json msg = {
            {"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}};
        std::string line = msg.dump() + "\n";
        EXPECT_EQ(::write(to_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
        return read_line();
    }
    nlohmann::json call(const std::string& tool, nlohmann::json arguments) {
        return request("tools/call", {{"name", tool}, {"arguments", arguments}});
    }
    void close_input() {
        if (to_ >= 0) {
            ::close(to_);
            to_ = -1;
        }
    }
    // Exit status after stdin EOF, within `limit`.
    int wait_exit(std::chrono::milliseconds limit) {
        auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return -1;
    }
    [[nodiscard]] pid_t pid() const { return pid_; }

private:
    nlohmann::json read_line() {
        std::string line;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < deadline) {
            size_t nl = buffer_.find('\n');
            if (nl != std::string::npos) {
                line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return nlohmann::json::parse(line, nullptr, false);
            }
            pollfd p{from_, POLLIN, 0};
            if (::poll(&p, 1, 1000) <= 0) {
                continue;
            }
            char chunk[65536];
            ssize_t n = ::read(from_, chunk, sizeof chunk);
            if (n <= 0) {
                break;
            }
            buffer_.append(chunk, static_cast<size_t>(n));
        }
        ADD_FAILURE() << "no response from stockade serve";
        return nlohmann::json();
    }

    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    int id_ = 0;
    std::string buffer_;
};

std::vector<pid_t> worker_pids(const std::string& state) {
    std::vector<pid_t> pids;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state)) {
        if (entry.path().filename() != "events.jsonl") {
            continue;
        }
        for (const auto& line : split_lines(read_file_text(entry.path()).value_or(""))) {
            auto event = nlohmann::json::parse(line, nullptr, false);
            if (!event.is_discarded() && event.value("type", "") == "WorkerStarted") {
                pids.push_back(event.value("pid", -1));
            }
        }
    }
    return pids;
}

bool alive(pid_t pid) {
    return pid > 0 && ::kill(pid, 0) == 0;
}

std::string text_of(const nlohmann::json& response) {
    if (!response.contains("result")) {
        return response.dump();
    }
    return response["result"]["content"][0].value("text", "");
}

class ServeTest : public ::testing::Test {
protected:
    TempDir workspace_{"stockade-serve-ws"};
    TempDir state_{"stockade-serve-state"};
};

TEST_F(ServeTest, AWorkerKilledBetweenCallsIsReplacedAndTheEventLogSaysSo) {
    workspace_.write_file("a.txt", "alpha\n");
    ServeProcess serve(workspace_.path(), state_.path());
    auto init = serve.request("initialize", {{"protocolVersion", "2025-11-25"},
                                             {"capabilities", nlohmann::json::object()},
                                             {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    ASSERT_TRUE(init.contains("result")) << init.dump();
    auto first = serve.call("read", {{"file_path", "a.txt"}});
    EXPECT_THAT(text_of(first), HasSubstr("alpha"));
    auto workers = worker_pids(state_.path());
    ASSERT_EQ(workers.size(), 1U);
    ASSERT_EQ(::kill(workers[0], SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto second = serve.call("read", {{"file_path", "a.txt"}});
    EXPECT_THAT(text_of(second), HasSubstr("alpha"));
    EXPECT_FALSE(second["result"].value("isError", true));
    EXPECT_EQ(worker_pids(state_.path()).size(), 2U) << "a fresh worker for the second call";
}

TEST_F(ServeTest, StdinEofEndsTheSessionAndLeavesNoWorkerBehind) {
    ServeProcess serve(workspace_.path(), state_.path());
    serve.request("initialize", {{"protocolVersion", "2025-11-25"},
                                 {"capabilities", nlohmann::json::object()},
                                 {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    serve.call("glob", {{"pattern", "*"}});
    auto workers = worker_pids(state_.path());
    ASSERT_EQ(workers.size(), 1U);
    EXPECT_TRUE(alive(workers[0]));
    serve.close_input();
    EXPECT_EQ(serve.wait_exit(std::chrono::seconds(10)), 0);
    EXPECT_FALSE(alive(workers[0])) << "the worker outlived the session";
}

TEST_F(ServeTest, NothingButProtocolReachesStdout) {
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + state_.path()};
    config.stdin_data =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
        "not json\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"read\","
        "\"arguments\":{\"file_path\":\"missing.txt\"}}}\n";
    RunResult r = run_stockade({"serve", "--workspace", workspace_.path()}, config);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (const auto& line : split_lines(r.out)) {
        auto msg = nlohmann::json::parse(line, nullptr, false);
        ASSERT_FALSE(msg.is_discarded()) << "not protocol on stdout: " << line;
        EXPECT_EQ(msg.value("jsonrpc", ""), "2.0");
    }
    EXPECT_THAT(r.err, HasSubstr("stockade serve: session"));
}

TEST_F(ServeTest, TheWorkerRefusesASymlinkOutOfTheWorkspace) {
    TempDir outside{"stockade-serve-outside"};
    std::string secret = outside.write_file("secret.txt", "host secret\n");
    ASSERT_EQ(::symlink(secret.c_str(), workspace_.sub("link").c_str()), 0);
    ASSERT_EQ(::symlink(outside.path().c_str(), workspace_.sub("dirlink").c_str()), 0);
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + state_.path()};
    for (const char* path : {"link", "dirlink/secret.txt"}) {
        RunResult r = run_stockade({"call", "--workspace", workspace_.path(), "read",
                                    nlohmann::json{{"file_path", path}}.dump()},
                                   config);
        EXPECT_EQ(r.exit_code, 1) << r.describe();
        EXPECT_THAT(r.out, Not(HasSubstr("host secret"))) << r.describe();
        EXPECT_THAT(r.out, HasSubstr("symbolic link that leads outside the workspace"))
            << r.describe();
    }
    // And the sandbox itself does not even contain the outside directory.
    RunResult ls = run_stockade({"run", "--workspace", workspace_.path(), "--", "cat", secret});
    EXPECT_NE(ls.exit_code, 0) << ls.describe();
    EXPECT_THAT(ls.out, Not(HasSubstr("host secret")));
}

TEST_F(ServeTest, CallPrintsTheModelFacingTextOrTheWholeResult) {
    workspace_.write_file("notes.md", "one\ntwo\n");
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + state_.path()};
    RunResult text = run_stockade(
        {"call", "--workspace", workspace_.path(), "read", R"({"file_path":"notes.md"})"}, config);
    ASSERT_EQ(text.exit_code, 0) << text.describe();
    EXPECT_THAT(text.out, HasSubstr("     2→two"));
    RunResult json = run_stockade(
        {"call", "--workspace", workspace_.path(), "glob", R"({"pattern":"*.md"})", "--json"},
        config);
    ASSERT_EQ(json.exit_code, 0) << json.describe();
    auto result = nlohmann::json::parse(json.out, nullptr, false);
    ASSERT_FALSE(result.is_discarded()) << json.describe();
    EXPECT_EQ(result["structuredContent"]["files"], 1);
    EXPECT_EQ(result["isError"], false);
    RunResult bad =
        run_stockade({"call", "--workspace", workspace_.path(), "read", "{oops"}, config);
    EXPECT_EQ(bad.exit_code, 2) << bad.describe();
    RunResult unknown =
        run_stockade({"call", "--workspace", workspace_.path(), "frobnicate", "{}"}, config);
    EXPECT_EQ(unknown.exit_code, 2) << unknown.describe();
    EXPECT_THAT(unknown.err, HasSubstr("read, write, edit, grep, glob"));
}

}  // namespace
}  // namespace stockade::testing
