// `stockade serve` and `stockade call` on real sandboxes: the session worker, its lifetime and
// its view of the filesystem.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
    // The model is told, once, why its session's processes are gone.
    EXPECT_THAT(text_of(second),
                HasSubstr("the session's sandbox worker was killed by SIGKILL; a new one serves"));
    EXPECT_THAT(text_of(serve.call("read", {{"file_path", "a.txt"}})),
                Not(HasSubstr("sandbox worker")));
    EXPECT_EQ(worker_pids(state_.path()).size(), 2U) << "a fresh worker for the second call";
}

// The value of `key` in a /proc/<pid>/limits line ("Max processes  4096  4096  processes").
std::string soft_limit(pid_t pid, const std::string& key) {
    for (const std::string& line :
         split_lines(read_file_text("/proc/" + std::to_string(pid) + "/limits").value_or(""))) {
        if (line.rfind(key, 0) == 0) {
            std::istringstream fields(line.substr(key.size()));
            std::string soft;
            fields >> soft;
            return soft;
        }
    }
    return "";
}

TEST_F(ServeTest, ServeWithNoOptionsHasLimits) {
    ServeProcess serve(workspace_.path(), state_.path());
    ASSERT_TRUE(serve.initialize().contains("result"));
    // A 1 GiB /tmp of its own.
    EXPECT_THAT(text_of(serve.call("bash", {{"command", "df -k /tmp | tail -n 1"}})),
                HasSubstr(" 1048576 "));
    const auto workers = worker_pids(state_.path());
    ASSERT_EQ(workers.size(), 1U);
    const pid_t worker = workers[0];
    // Processes: the pids cgroup where there is one, else RLIMIT_NPROC; memory: a memory
    // cgroup only (an address-space rlimit would break V8 and the JVM).
    std::string memory_cgroup;
    std::string pids_cgroup;
    for (const std::string& line :
         split_lines(read_file_text("/proc/" + std::to_string(worker) + "/cgroup").value_or(""))) {
        const size_t colon = line.rfind(':');
        const std::string path = line.substr(colon + 1);
        if (path.find("/stockade/") == std::string::npos) {
            continue;
        }
        if (line.find(":memory:") != std::string::npos) {
            memory_cgroup = "/sys/fs/cgroup/memory" + path;
        } else if (line.find(":pids:") != std::string::npos) {
            pids_cgroup = "/sys/fs/cgroup/pids" + path;
        } else if (line.rfind("0::", 0) == 0) {
            memory_cgroup = pids_cgroup = "/sys/fs/cgroup" + path;
        }
    }
    if (pids_cgroup.empty()) {
        EXPECT_EQ(soft_limit(worker, "Max processes"), "4096");
    } else {
        auto pids = read_file_text(pids_cgroup + "/pids.max");
        if (!pids) {  // v2: the worker sits in the leaf's `worker` child
            pids = read_file_text(pids_cgroup + "/../pids.max");
        }
        EXPECT_EQ(pids.value_or(""), "4096\n");
    }
    if (!memory_cgroup.empty()) {
        auto limit = read_file_text(memory_cgroup + "/memory.limit_in_bytes");
        if (!limit) {
            limit = read_file_text(memory_cgroup + "/../memory.max");
        }
        ASSERT_TRUE(limit.has_value());
        EXPECT_NE(*limit, "max\n");
        EXPECT_LT(std::stoull(*limit), uint64_t{1} << 50) << "a limit, not the unlimited value";
    } else {
        EXPECT_EQ(soft_limit(worker, "Max address space"), "unlimited")
            << "no RLIMIT_AS by default: it would break V8 and the JVM";
    }
    serve.close_input();
    EXPECT_EQ(serve.wait_exit(std::chrono::seconds(20)), 0);
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
    // Not a terminal: no banner either (agent CLIs log every stderr line as an error).
    EXPECT_THAT(r.err, Not(HasSubstr("stockade serve: session"))) << r.err;
}

TEST_F(ServeTest, AStateDirectoryTheSandboxCouldReachIsRefused) {
    // Inside the workspace, a command could rename the session's directory and put a symlink
    // where the supervisor writes (as root): refused before anything is created there.
    for (const std::string& state : {workspace_.sub(".stockade"), workspace_.path()}) {
        RunResult r =
            run_stockade({"serve", "--workspace", workspace_.path(), "--state-dir", state});
        EXPECT_EQ(r.exit_code, 2) << r.describe();
        EXPECT_THAT(r.err, HasSubstr("the state directory"));
        EXPECT_THAT(r.err, HasSubstr("--state-dir")) << r.describe();
        EXPECT_FALSE(std::filesystem::exists(state + "/sessions"));
    }
    // A relative one is taken from the current directory, and works.
    RunConfig config;
    config.cwd = state_.path();
    config.stdin_data = "";
    RunResult ok = run_stockade({"call", "--workspace", workspace_.path(), "--state-dir", "rel",
                                 "glob", R"({"pattern":"*"})"},
                                config);
    EXPECT_EQ(ok.exit_code, 0) << ok.describe();
    EXPECT_TRUE(std::filesystem::is_directory(state_.sub("rel/sessions")));
}

TEST_F(ServeTest, AsRootEachSessionGetsAHostUidOfItsOwn) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "host uids are given to sessions by a root supervisor only";
    }
    auto worker_uid = [](const std::string& state) {
        const auto workers = worker_pids(state);
        if (workers.size() != 1) {
            return std::string("no single worker");
        }
        const auto status = read_file_text("/proc/" + std::to_string(workers[0]) + "/status");
        const size_t at = status ? status->find("\nUid:") : std::string::npos;
        return at == std::string::npos
                   ? std::string("?")
                   : status->substr(at + 5, status->find('\n', at + 1) - at - 5);
    };
    TempDir other_state{"stockade-serve-state2"};
    ServeProcess first(workspace_.path(), state_.path());
    ServeProcess second(workspace_.path(), other_state.path());
    ASSERT_TRUE(first.initialize().contains("result"));
    ASSERT_TRUE(second.initialize().contains("result"));
    const std::string a = worker_uid(state_.path());
    const std::string b = worker_uid(other_state.path());
    EXPECT_THAT(a, Not(HasSubstr("\t0\t"))) << a;
    EXPECT_NE(a, b) << "two sessions share a host uid";
    // A uid asked for is taken as it is.
    ServeProcess chosen(workspace_.path(), other_state.path(), {"--host-uid", "1879110000"});
    ASSERT_TRUE(chosen.initialize().contains("result"));
    const auto workers = worker_pids(other_state.path());
    bool seen = false;
    for (pid_t pid : workers) {
        const auto status = read_file_text("/proc/" + std::to_string(pid) + "/status");
        seen = seen || (status && status->find("1879110000") != std::string::npos);
    }
    EXPECT_TRUE(seen) << "no worker runs as the --host-uid given";
    // A range of the operator's: the session's uid comes from it.
    TempDir ranged_state{"stockade-serve-state3"};
    ServeProcess ranged(workspace_.path(), ranged_state.path(),
                        {"--host-uid-range", "1879120000-1879120009"});
    ASSERT_TRUE(ranged.initialize().contains("result"));
    const std::string c = worker_uid(ranged_state.path());
    EXPECT_THAT(c, HasSubstr("18791200")) << c;
}

TEST_F(ServeTest, AStateDirectoryBehindAPrivateDirectoryWorks) {
    // As root the default is ~/.local/state under /root (0700), which the sandbox's host uid
    // cannot traverse: the spill directory is still bound in, and its files readable there.
    const std::string home = state_.make_dir("home", 0700);
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + home + "/.local/state/stockade"};
    RunResult r = run_stockade(
        {"call", "--workspace", workspace_.path(), "bash", R"({"command": "seq 1 100000"})"},
        config);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    const size_t at = r.out.find("Full output: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string log = r.out.substr(at + 13, r.out.find(' ', at + 13) - at - 13);
    EXPECT_THAT(log, HasSubstr(home));
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
    EXPECT_EQ(result["_meta"]["dev.stockade/result"]["files"], 1);
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
