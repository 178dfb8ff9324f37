// `bash` and `process` through `stockade serve` on real sandboxes: commands run in the session's
// worker, their output and lifetime are the supervisor's. Every test ends by checking that the
// session left no process behind.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
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

// Counts the processes inside the sandbox whose command line starts with `needle` (the pattern
// is written so that the counting shell itself does not match).
std::string count_command(const std::string& needle) {
    std::string pattern = "[" + needle.substr(0, 1) + "]" + needle.substr(1);
    return "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c "
           "'^" +
           pattern + "' || true";
}

int first_int(const std::string& text) {
    std::smatch m;
    std::regex re("(\\d+)");
    return std::regex_search(text, m, re) ? std::stoi(m[1]) : -1;
}

std::string process_id_in(const std::string& text) {
    std::smatch m;
    std::regex re("\\b(p\\d+)\\b");
    return std::regex_search(text, m, re) ? std::string(m[1]) : std::string();
}

long supervisor_peak_kib(pid_t pid) {
    auto status = read_file_text("/proc/" + std::to_string(pid) + "/status");
    if (!status) {
        return -1;
    }
    std::smatch m;
    std::regex re("VmHWM:\\s+(\\d+) kB");
    return std::regex_search(*status, m, re) ? std::stol(m[1]) : -1;
}

class ProcessTest : public ::testing::Test {
protected:
    void TearDown() override {
        if (serve_) {
            serve_->close_input();
            EXPECT_EQ(serve_->wait_exit(std::chrono::seconds(20)), 0);
            serve_.reset();
        }
        // Nothing outlives the session: every worker (and so its pid namespace) is gone.
        for (pid_t worker : worker_pids(state_.path())) {
            EXPECT_FALSE(alive(worker)) << "worker " << worker << " outlived its session";
        }
    }
    ServeProcess& serve(const std::vector<std::string>& extra = {}) {
        serve_ = std::make_unique<ServeProcess>(workspace_.path(), state_.path(), extra);
        auto init = serve_->initialize();
        EXPECT_TRUE(init.contains("result")) << init.dump();
        return *serve_;
    }
    std::string bash(const std::string& command, nlohmann::json extra = nlohmann::json::object()) {
        extra["command"] = command;
        return text_of(serve_->call("bash", extra));
    }
    std::string process(nlohmann::json arguments) {
        return text_of(serve_->call("process", std::move(arguments)));
    }

    TempDir workspace_{"stockade-proc-ws"};
    TempDir state_{"stockade-proc-state"};
    std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ProcessTest, BashRunsInTheWorkspaceAndReportsTheExitCode) {
    workspace_.write_file("hello.txt", "hello from the workspace\n");
    serve();
    auto ok = serve_->call("bash", {{"command", "cat hello.txt"}});
    EXPECT_THAT(text_of(ok), HasSubstr("hello from the workspace"));
    EXPECT_THAT(text_of(ok), HasSubstr("[exit code 0 · "));
    EXPECT_FALSE(ok["result"].value("isError", true));
    EXPECT_EQ(ok["result"]["_meta"]["dev.stockade/result"]["exit_code"], 0);

    auto failed = serve_->call("bash", {{"command", "echo to-stderr >&2; exit 3"}});
    EXPECT_THAT(text_of(failed), HasSubstr("to-stderr"));
    EXPECT_THAT(text_of(failed), HasSubstr("[exit code 3 · "));
    EXPECT_FALSE(failed["result"].value("isError", true)) << "a failing command is an observation";

    auto grep = serve_->call("bash", {{"command", "grep nothing-here hello.txt"}});
    EXPECT_EQ(grep["result"]["_meta"]["dev.stockade/result"]["semantic_status"], "ok");

    auto missing = serve_->call("bash", {{"command", "ecko hi"}});
    EXPECT_TRUE(missing["result"].value("isError", false));
    EXPECT_THAT(text_of(missing), HasSubstr("Command failed to start: ecko: command not found"));
}

TEST_F(ProcessTest, ACommandPastItsTimeoutMovesToTheBackgroundWithContinuousOutput) {
    serve();
    auto moved =
        serve_->call("bash", {{"command", "for i in $(seq 1 30); do echo line$i; sleep 0.1; done"},
                              {"timeout_ms", 1000}});
    std::string first = text_of(moved);
    ASSERT_THAT(first, HasSubstr("moved to background as process p")) << first;
    EXPECT_EQ(moved["result"]["_meta"]["dev.stockade/result"]["auto_backgrounded"], true);
    std::string id = moved["result"]["_meta"]["dev.stockade/result"].value("process_id", "");
    ASSERT_FALSE(id.empty()) << moved.dump();

    EXPECT_THAT(process({{"action", "list"}}), HasSubstr(id));
    std::string rest = process({{"action", "wait"}, {"id", id}});
    EXPECT_THAT(rest, HasSubstr("line30"));
    // Every line appears exactly once across the seam.
    for (int i = 1; i <= 30; ++i) {
        std::regex line("\\bline" + std::to_string(i) + "\\b");
        auto count = std::distance(std::sregex_iterator(first.begin(), first.end(), line),
                                   std::sregex_iterator()) +
                     std::distance(std::sregex_iterator(rest.begin(), rest.end(), line),
                                   std::sregex_iterator());
        EXPECT_EQ(count, 1) << "line" << i << "\n--- before ---\n"
                            << first << "\n--- after ---\n"
                            << rest;
    }
}

TEST_F(ProcessTest, StopEndsTheWholeProcessGroupGrandchildrenIncluded) {
    serve();
    std::string started =
        process({{"action", "start"}, {"command", "sleep 4242 & sleep 4243 & wait"}});
    std::string id = process_id_in(started);
    ASSERT_FALSE(id.empty()) << started;
    EXPECT_EQ(first_int(bash(count_command("sleep 424"))), 2);
    std::string stopped = process({{"action", "stop"}, {"id", id}});
    EXPECT_THAT(stopped, HasSubstr("Stopped " + id));
    EXPECT_EQ(first_int(bash(count_command("sleep 424"))), 0) << stopped;
    EXPECT_THAT(process({{"action", "list"}}), HasSubstr("stopped"));
}

TEST_F(ProcessTest, ProcessesGetATerminalAndAReplCanBeDriven) {
    serve();
    std::string tty = process({{"action", "start"}, {"command", "test -t 1 && echo TTY-YES"}});
    EXPECT_THAT(tty, HasSubstr("TTY-YES"));

    std::string repl = process({{"action", "start"}, {"command", "python3 -i -q"}});
    std::string id = process_id_in(repl);
    ASSERT_FALSE(id.empty()) << repl;
    std::string answer = process({{"action", "write"}, {"id", id}, {"input", "print(6 * 7)\n"}});
    EXPECT_THAT(answer, HasSubstr("Sent 13 bytes to " + id));
    if (answer.find("42") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        answer += process({{"action", "read"}, {"id", id}});
    }
    EXPECT_THAT(answer, HasSubstr("42"));
    process({{"action", "write"}, {"id", id}, {"input", "exit()\n"}});
    std::string done = process({{"action", "wait"}, {"id", id}});
    EXPECT_THAT(done, HasSubstr("exited"));
}

TEST_F(ProcessTest, AServerStartedByProcessIsReachableFromBash) {
    serve();
    std::string started = process(
        {{"action", "start"}, {"command", "python3 -m http.server 18765 --bind 127.0.0.1"}});
    std::string id = process_id_in(started);
    ASSERT_FALSE(id.empty()) << started;
    std::string fetched = bash(
        "for i in $(seq 1 50); do python3 -c \"import urllib.request as u; "
        "print('status', u.urlopen('http://127.0.0.1:18765/').status)\" 2>/dev/null && break; "
        "sleep 0.1; done");
    EXPECT_THAT(fetched, HasSubstr("status 200"));
    EXPECT_THAT(process({{"action", "stop"}, {"id", id}}), HasSubstr("Stopped " + id));
}

TEST_F(ProcessTest, CancellingABashCallKillsItsProcessGroupOnly) {
    serve();
    std::string keeper = process({{"action", "start"}, {"command", "sleep 7777"}});
    int id = serve_->send_request(
        "tools/call", {{"name", "bash"}, {"arguments", {{"command", "sleep 8888 & sleep 8889"}}}});
    // Wait until the command runs, then cancel the request.
    for (int i = 0; i < 50 && first_int(bash(count_command("sleep 888"))) < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    serve_->notify("notifications/cancelled", {{"requestId", id}, {"reason", "test"}});
    int left = -1;
    for (int i = 0; i < 50; ++i) {
        left = first_int(bash(count_command("sleep 888")));
        if (left == 0) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(left, 0) << "the cancelled call's processes are gone";
    EXPECT_EQ(first_int(bash(count_command("sleep 7777"))), 1) << "the other process survives";
}

TEST_F(ProcessTest, AGibibyteOfOutputPassesWithBoundedSupervisorMemory) {
    serve({"--process-log-cap", "64M"});
    auto big = serve_->call(
        "bash", {{"command", "head -c 1073741824 /dev/zero | tr '\\0' 'x' | fold -w 100"}}, nullptr,
        std::chrono::minutes(3));
    std::string text = text_of(big);
    EXPECT_THAT(text, HasSubstr("[exit code 0 · "));
    auto meta = big["result"]["_meta"]["dev.stockade/result"];
    EXPECT_EQ(meta["output_bytes"], 1073741824ULL + 1073741824ULL / 100);
    EXPECT_EQ(meta["truncated"], true);
    EXPECT_LT(text.size(), 64U << 10);
    long peak = supervisor_peak_kib(serve_->pid());
    ASSERT_GT(peak, 0);
    EXPECT_LT(peak, 64 * 1024) << "supervisor peak RSS " << peak << " KiB";
}

TEST_F(ProcessTest, TheTruncationMarkersFileIsReadableInsideAndNothingElseOfTheStateIs) {
    // The marker promises "read or grep that file": it must hold as root (whose files the
    // sandbox user does not own) and as an unprivileged user, whatever the umask.
    const mode_t old_mask = ::umask(077);
    serve();
    ::umask(old_mask);
    auto big = serve_->call("bash", {{"command", "seq 1 100000"}});
    const std::string text = text_of(big);
    const std::string marker = "Full output: ";
    const size_t at = text.find(marker);
    ASSERT_NE(at, std::string::npos) << text;
    const size_t start = at + marker.size();
    const std::string log = text.substr(start, text.find(' ', start) - start);
    ASSERT_THAT(log, HasSubstr("/process-logs/")) << text;

    auto read = serve_->call("read", {{"file_path", log}, {"offset", 50000}, {"limit", 2}});
    EXPECT_FALSE(read["result"].value("isError", true)) << read.dump();
    EXPECT_THAT(text_of(read), HasSubstr("50000→50000"));
    auto grep = serve_->call("grep", {{"pattern", "^77777$"}, {"path", log}});
    EXPECT_THAT(text_of(grep), HasSubstr("77777")) << grep.dump();
    EXPECT_THAT(bash("tail -n 1 " + log), HasSubstr("100000"));
    // Read-only inside, and the rest of the state directory (the event log, other sessions)
    // is not there at all.
    EXPECT_THAT(bash("echo x >> " + log + " && echo appended"), Not(HasSubstr("appended")));
    const std::string events = state_.path() + "/sessions";
    EXPECT_THAT(
        bash("ls " + events + " 2>&1; cat " + events + "/*/events.jsonl 2>&1 | head -c 300"),
        Not(HasSubstr("SessionStarted")));
}

TEST_F(ProcessTest, ASessionKeepsNoMoreOutputThanItsBudgetAndSaysWhatItDropped) {
    serve({"--output-budget", "1M"});
    // 6.9 MB of numbered lines: the log keeps its first megabyte, its note on where it stops
    // included; the budget has no room left for the tail the supervisor still held, so the log
    // ends there, and the result says so (and shows the end itself).
    auto big = serve_->call("bash", {{"command", "seq 1 1000000"}});
    const std::string text = text_of(big);
    EXPECT_THAT(text, HasSubstr("Note: the full output's log lacks")) << text;
    EXPECT_THAT(text, HasSubstr("from its end")) << text;
    EXPECT_THAT(text, HasSubstr("it keeps the start only")) << text;
    EXPECT_THAT(text, HasSubstr("1000000")) << "the tail is shown";
    const std::string marker = "Full output: ";
    const size_t at = text.find(marker);
    ASSERT_NE(at, std::string::npos) << text;
    const size_t start = at + marker.size();
    const std::string log = text.substr(start, text.find(' ', start) - start);
    // (Through grep, which leaves no log of its own to take the budget.)
    EXPECT_THAT(text_of(serve_->call("grep", {{"pattern", "^1000$"}, {"path", log}})),
                HasSubstr(": 1000"));
    EXPECT_THAT(text_of(serve_->call("grep", {{"pattern", "^1000000$"}, {"path", log}})),
                HasSubstr("No matches"));
    EXPECT_THAT(text_of(serve_->call("grep", {{"pattern", "this log stops here"}, {"path", log}})),
                HasSubstr("the session's output budget (1.0 MB"));
    EXPECT_LE(std::filesystem::file_size(log), 1U << 20);
    // What the session keeps on disk stays within the budget: the next command's log pruned
    // what came before it.
    (void)serve_->call("bash", {{"command", "seq 1 1000000"}});
    uint64_t kept = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state_.path())) {
        if (entry.is_regular_file() &&
            entry.path().string().find("tool-output") != std::string::npos) {
            kept += entry.file_size();
        }
    }
    EXPECT_LE(kept, 1U << 20) << "the budget, notes and tails included";
    EXPECT_FALSE(std::filesystem::exists(log)) << "pruned for the next command's log";
}

TEST_F(ProcessTest, InCiModeTheSessionsOwnLoopbackIsReachableAndTheNetworkIsNot) {
    workspace_.write_file("page.txt", "served from the session\n");
    serve({"--mode", "ci", "--no-user-settings"});
    EXPECT_THAT(
        process({{"action", "start"}, {"command", "python3 -m http.server 8765 --bind 127.0.0.1"}}),
        HasSubstr("Started p"));
    // A server started with process is not "the network": curl to it runs, even in ci mode.
    const std::string got = bash(
        "for i in $(seq 50); do curl -sS http://127.0.0.1:8765/page.txt && break; sleep 0.2; done");
    EXPECT_THAT(got, HasSubstr("served from the session"));
    EXPECT_THAT(got, HasSubstr("[exit code 0"));
    auto outside = serve_->call("bash", {{"command", "curl -sS https://example.com/"}});
    EXPECT_TRUE(outside["result"].value("isError", false)) << outside.dump();
    EXPECT_THAT(text_of(outside), HasSubstr("in ci mode the network is closed"));
    EXPECT_THAT(text_of(outside), HasSubstr("--network allowlist (or host)"));
    EXPECT_THAT(process({{"action", "stop"}, {"id", "p1"}}), HasSubstr("Stopped p1"));
}

TEST_F(ProcessTest, ManyShortCommandsInARowAndAtOnce) {
    serve();
    for (int i = 0; i < 200; ++i) {
        std::string out = bash("echo run-" + std::to_string(i));
        ASSERT_THAT(out, HasSubstr("run-" + std::to_string(i))) << "call " << i;
    }
    std::vector<int> ids;
    for (int i = 0; i < 32; ++i) {
        ids.push_back(serve_->send_request(
            "tools/call",
            {{"name", "bash"},
             {"arguments", {{"command", "sleep 0.2; echo parallel-" + std::to_string(i)}}}}));
    }
    for (int i = 0; i < 32; ++i) {
        auto response =
            serve_->wait_response(ids[static_cast<size_t>(i)], std::chrono::seconds(60));
        EXPECT_THAT(text_of(response), HasSubstr("parallel-" + std::to_string(i)));
    }
}

TEST_F(ProcessTest, AForkBombIsContainedAndTheSupervisorKeepsServing) {
    workspace_.write_file("still.txt", "still serving\n");
    serve({"--pids", "64"});
    auto bomb =
        serve_->call("bash", {{"command", "bomb() { bomb | bomb & }; bomb"}, {"timeout_ms", 2000}});
    EXPECT_TRUE(bomb.contains("result")) << bomb.dump();
    auto read = serve_->call("read", {{"file_path", "still.txt"}});
    EXPECT_THAT(text_of(read), HasSubstr("still serving"));
    const auto& id = bomb["result"]["_meta"]["dev.stockade/result"]["process_id"];
    if (id.is_string()) {
        process({{"action", "stop"}, {"id", id}});
    }
    // What the bomb left is stopped (SIGTERM, then SIGKILL after 3 s); until then the pid
    // limit may still be full, and a spawn failure says so: the session recovers.
    std::string after;
    for (int i = 0; i < 50 && after.find("[exit code 0") == std::string::npos; ++i) {
        after = bash("echo after");
        if (after.find("[exit code 0") == std::string::npos) {
            EXPECT_THAT(after, HasSubstr("try again")) << after;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
    EXPECT_THAT(after, HasSubstr("after"));
}

TEST_F(ProcessTest, TheEventLogRecordsProcessesAndCallWorks) {
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + state_.path()};
    RunResult r = run_stockade(
        {"call", "--workspace", workspace_.path(), "bash", R"({"command":"echo from-call"})"},
        config);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("from-call"));
    std::string events;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state_.path())) {
        if (entry.path().filename() == "events.jsonl") {
            events += read_file_text(entry.path()).value_or("");
        }
    }
    EXPECT_THAT(events, HasSubstr("\"type\":\"ProcessStarted\""));
    EXPECT_THAT(events, HasSubstr("\"type\":\"ProcessExited\""));
}

}  // namespace
}  // namespace stockade::testing
