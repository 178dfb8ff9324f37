#include <gtest/gtest.h>

#include "tests/unit/tools/fake_process_manager.h"

namespace stockade::tools {
namespace {

using std::chrono::milliseconds;
using testing::expect_golden;
using testing::FakeScript;
using testing::ProcessToolHarness;

std::string numbered(int from, int to, const std::string& prefix = "line ") {
    std::string s;
    for (int i = from; i <= to; ++i) {
        s += prefix + std::to_string(i) + "\r\n";
    }
    return s;
}

class ProcessToolTest : public ::testing::Test {
protected:
    ToolResult process(nlohmann::json args) { return h.call("process", args); }
    ProcessToolHarness h;
};

// ---- start -------------------------------------------------------------------------------

TEST_F(ProcessToolTest, StartShowsTheFirstOutput) {
    h.pm.scripts["npm run dev"] = FakeScript{
        .output =
            "\r\n  \x1b[32m\x1b[1mVITE\x1b[22m v5.4.1\x1b[39m  ready in \x1b[1m431\x1b[22m "
            "ms\r\n\r\n  \x1b[32m\u279c\x1b[39m  \x1b[1mLocal\x1b[22m:   "
            "\x1b[36mhttp://localhost:5173/\x1b[39m\r\n",
        .keeps_running = true,
        .runtime = milliseconds(2100)};
    const ToolResult r = process({{"action", "start"}, {"command", "npm run dev"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_start.txt", r.content);

    ASSERT_EQ(h.pm.starts.size(), 1U);
    const StartRequest& req = h.pm.starts[0];
    EXPECT_EQ(req.argv, (std::vector<std::string>{"/bin/bash", "-c", "npm run dev"}));
    EXPECT_TRUE(req.pty);
    EXPECT_TRUE(req.interactive);
    EXPECT_TRUE(req.background);
    EXPECT_EQ(req.cwd, "");
    EXPECT_EQ(req.cwd_display, "/work/proj");
    EXPECT_EQ(req.env, (std::vector<std::string>{"TERM=dumb", "PAGER=cat", "GIT_PAGER=cat",
                                                 "GIT_TERMINAL_PROMPT=0", "PYTHONUNBUFFERED=1"}));

    // What was shown counts as read.
    EXPECT_EQ(h.pm.proc("p1").cursor, h.pm.proc("p1").data.size());
    const nlohmann::json& m = r.metadata;
    EXPECT_EQ(m["title"], "Process start npm run dev \u00b7 p1 running");
    EXPECT_EQ(m["action"], "start");
    EXPECT_EQ(m["process_id"], "p1");
    EXPECT_EQ(m["status"], "running");
    EXPECT_EQ(m["exit_code"], nullptr);
    EXPECT_EQ(m["new_lines"], 4);
    EXPECT_EQ(m["log_path"], "/state/process-logs/s1/p1.log");
    EXPECT_EQ(m["pid"], 41000);
}

TEST_F(ProcessToolTest, TerminalControlSequencesReachTheModelAsPlainText) {
    h.pm.scripts["npm run dev"] =
        FakeScript{.output =
                       "\x1b]52;c;cHduZWQ=\x07"
                       "copied\r\n\x1b]0;owned\x1b\\titled\r\n\x1b[2J\x1b[H"
                       "cleared\x07\r\n\u009b"
                       "2J c1\r\n",
                   .keeps_running = true};
    const ToolResult r = process({{"action", "start"}, {"command", "npm run dev"}});
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(testing::is_inert(r.content)) << r.content;
    EXPECT_NE(r.content.find("copied\n"), std::string::npos) << r.content;
    EXPECT_NE(r.content.find("titled\n"), std::string::npos) << r.content;
    EXPECT_NE(r.content.find("cleared\n"), std::string::npos) << r.content;
    EXPECT_NE(r.content.find("\\u009b2J c1"), std::string::npos) << r.content;
    EXPECT_EQ(r.content.find("52;"), std::string::npos) << r.content;
}

TEST_F(ProcessToolTest, StartWithoutOutputYet) {
    h.pm.scripts["python3 -m http.server"] = FakeScript{.keeps_running = true};
    const ToolResult r = process({{"action", "start"}, {"command", "python3 -m http.server"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_start_no_output.txt", r.content);
    EXPECT_EQ(r.metadata["new_lines"], 0);
}

TEST_F(ProcessToolTest, StartThatExitsImmediately) {
    h.pm.scripts["npm run dev"] =
        FakeScript{.output = "Error: listen EADDRINUSE: address already in use :::5173\r\n",
                   .exits_at_start = true,
                   .exit_code = 1,
                   .runtime = milliseconds(400)};
    const ToolResult r = process({{"action", "start"}, {"command", "npm run dev"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_start_exited.txt", r.content);
    EXPECT_EQ(r.metadata["status"], "exited");
    EXPECT_EQ(r.metadata["exit_code"], 1);
    EXPECT_EQ(r.metadata["title"], "Process start npm run dev \u00b7 p1 exited 1");
}

TEST_F(ProcessToolTest, StartThatCrashesWithASignal) {
    h.pm.scripts["./server"] =
        FakeScript{.exits_at_start = true, .exit_code = std::nullopt, .signal = 11};
    const ToolResult r = process({{"action", "start"}, {"command", "./server"}});
    EXPECT_EQ(r.content,
              "Process p1 was killed by SIGSEGV right after starting: ./server\n"
              "cwd /work/proj \u00b7 log /state/process-logs/s1/p1.log\n(no output)");
}

TEST_F(ProcessToolTest, StartNeedsACommand) {
    ToolResult r = process({{"action", "start"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_start_missing_command.txt", r.content);
    r = process({{"action", "start"}, {"command", " "}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Invalid input for tool \"process\": parameter \"command\" must not be empty for "
              "action \"start\". Please rewrite the input so it satisfies the expected schema.");
    EXPECT_TRUE(h.pm.starts.empty());
}

TEST_F(ProcessToolTest, StartFailures) {
    h.pm.scripts["npm run dev"] =
        FakeScript{.start_error = Error{Errc::kResourceExhausted, "16 processes are running"}};
    ToolResult r = process({{"action", "start"}, {"command", "npm run dev"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Cannot start npm run dev: 16 processes are running. Stop processes you no longer "
              "need first ({\"action\":\"list\"} shows them).");
    h.pm.scripts["x"] = FakeScript{.start_error = Error{Errc::kUnavailable, "no sandbox"}};
    r = process({{"action", "start"}, {"command", "x"}});
    EXPECT_EQ(r.content, "Command failed to start: no sandbox.");
}

// ---- list --------------------------------------------------------------------------------

TEST_F(ProcessToolTest, ListShowsRunningFirst) {
    h.pm.add_background("npm test", FakeScript{.exit_code = 0}, ProcessState::kExited);
    h.pm.add_background("npm run dev", FakeScript{.runtime = milliseconds(272'000)});
    h.pm.add_background("pytest -x", FakeScript{.runtime = milliseconds(18'000)});
    h.pm.add_background("vite build --watch", FakeScript{.exit_code = std::nullopt, .signal = 15},
                        ProcessState::kStopped);
    auto& failed = h.pm.add_background("cargo watch", FakeScript{.exit_code = std::nullopt},
                                       ProcessState::kFailed);
    failed.info.failure = "the sandbox worker died";
    h.pm.add_background("python3 -m http.server 8000",
                        FakeScript{.runtime = milliseconds(3'723'000)});
    h.pm.load_answer = {.total = 3100,
                        .limit = 4096,
                        .holders = {{.id = "p2", .command = "npm run dev", .processes = 3090},
                                    {.id = "p3", .command = "pytest -x", .processes = 1}},
                        .elsewhere = 9};
    const ToolResult r = process({{"action", "list"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_list.txt", r.content);
    EXPECT_EQ(r.metadata["sandbox_processes"], 3100);
    EXPECT_EQ(r.metadata["process_limit"], 4096);
    EXPECT_EQ(r.metadata["title"], "Process list \u00b7 3 running, 3 ended");
    EXPECT_EQ(r.metadata["processes"].size(), 6U);
    EXPECT_EQ(r.metadata["processes"][0]["id"], "p2");
}

TEST_F(ProcessToolTest, AStartThatFindsTheProcessLimitFullSaysWhatHoldsIt) {
    h.pm.add_background("make -j", FakeScript{.runtime = milliseconds(60'000)});
    h.pm.scripts["npm run dev"] =
        FakeScript{.start_error = Error{Errc::kResourceExhausted,
                                        "spawn: fork: EAGAIN (Resource temporarily "
                                        "unavailable)",
                                        EAGAIN}};
    h.pm.load_answer = {.total = 4096,
                        .limit = 4096,
                        .holders = {{.id = "p1", .command = "make -j", .processes = 4090}},
                        .elsewhere = 6};
    const ToolResult r = process({{"action", "start"}, {"command", "npm run dev"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_start_at_process_limit.txt", r.content);
}

TEST_F(ProcessToolTest, ListWhenEmpty) {
    const ToolResult r = process({{"action", "list"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_list_empty.txt", r.content);
}

TEST_F(ProcessToolTest, ForegroundCommandsAreNotListedOrAddressable) {
    h.pm.scripts["sleep 5"] = FakeScript{.keeps_running = true};
    StartRequest req;
    req.command = "sleep 5";
    req.background = false;
    ASSERT_TRUE(h.pm.start(req).has_value());
    EXPECT_EQ(process({{"action", "list"}}).content,
              "No background processes in this session. Start one with process "
              "{\"action\":\"start\",\"command\":\"npm run dev\"}.");
    const ToolResult r = process({{"action", "read"}, {"id", "fg-1"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_TRUE(r.content.starts_with("No process \"fg-1\"."));
}

// ---- read --------------------------------------------------------------------------------

class ReadTest : public ProcessToolTest {
protected:
    void SetUp() override {
        auto& p = h.pm.add_background("npm run dev", FakeScript{.output = numbered(1, 131)});
        p.cursor = p.data.find("line 84\r\n");
    }
};

TEST_F(ReadTest, NewOutputSinceTheCursor) {
    const ToolResult r = process({{"action", "read"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_read.txt", r.content);
    EXPECT_EQ(h.pm.proc("p1").cursor, h.pm.proc("p1").data.size());
    EXPECT_EQ(r.metadata["new_lines"], 48);
    EXPECT_EQ(r.metadata["title"], "Process read p1 \u00b7 48 lines");
    EXPECT_EQ(r.metadata["status"], "running");

    const ToolResult again = process({{"action", "read"}, {"id", "p1"}});
    EXPECT_FALSE(again.is_error);
    expect_golden("process_read_none.txt", again.content);
    EXPECT_EQ(again.metadata["new_lines"], 0);
}

TEST_F(ReadTest, OffsetRereadsWithoutMovingTheCursor) {
    const uint64_t cursor = h.pm.proc("p1").cursor;
    const ToolResult r = process({{"action", "read"}, {"id", "p1"}, {"offset", 128}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_read_offset.txt", r.content);
    EXPECT_EQ(h.pm.proc("p1").cursor, cursor);
}

TEST_F(ReadTest, OffsetOutOfRange) {
    ToolResult r = process({{"action", "read"}, {"id", "p1"}, {"offset", 500}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_read_offset_beyond.txt", r.content);
    r = process({{"action", "read"}, {"id", "p1"}, {"offset", 0}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "offset is 0, but it is a 1-based line number of p1's output. Use offset=1 to read "
              "from the start, or omit it for new output.");
}

TEST_F(ProcessToolTest, ReadOnAnExitedProcessStatesItsExit) {
    auto& p = h.pm.add_background("npm test",
                                  FakeScript{.output = "PASS a\r\nFAIL b\r\n", .exit_code = 1},
                                  ProcessState::kExited);
    p.cursor = 0;
    const ToolResult r = process({{"action", "read"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_read_exited.txt", r.content);
    const ToolResult none = process({{"action", "read"}, {"id", "p1"}});
    expect_golden("process_read_none_exited.txt", none.content);
}

TEST_F(ProcessToolTest, ReadWithoutAnyOutputAndOffset) {
    h.pm.add_background("sleep 100", FakeScript{});
    const ToolResult r = process({{"action", "read"}, {"id", "p1"}, {"offset", 1}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "p1 has no output yet (still running). Omit offset to read new output as it "
              "arrives.");
}

TEST_F(ProcessToolTest, ReadPagesLongOutput) {
    h.pm.add_background("yes", FakeScript{.output = numbered(1, 450, "y ")});
    const ToolResult r = process({{"action", "read"}, {"id", "p1"}});
    expect_golden("process_read_paged.txt", r.content);
    EXPECT_EQ(r.metadata["new_lines"], 300);
    const ToolResult next = process({{"action", "read"}, {"id", "p1"}});
    EXPECT_TRUE(next.content.starts_with(
        "Output of p1 since last read (lines 301\u2013450 of 450):\ny 301\n"));
    EXPECT_TRUE(next.content.ends_with("\ny 450"));

    const ToolResult by_offset = process({{"action", "read"}, {"id", "p1"}, {"offset", 100}});
    EXPECT_TRUE(by_offset.content.ends_with(
        "\n[51 more lines (357 bytes) not shown: use offset=400 to continue, or read or grep the "
        "full log /state/process-logs/s1/p1.log.]"));
}

// ---- write -------------------------------------------------------------------------------

TEST_F(ProcessToolTest, WriteSendsInputAndShowsTheResponse) {
    auto& p =
        h.pm.add_background("python3", FakeScript{.output = "Python 3.11.2\r\n>>> ",
                                                  .write_response = "print(6*7)\r\n42\r\n>>> "});
    p.cursor = p.data.size();
    const ToolResult r = process({{"action", "write"}, {"id", "p1"}, {"input", "print(6*7)\n"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_write.txt", r.content);
    EXPECT_EQ(h.pm.writes,
              (std::vector<std::pair<std::string, std::string>>{{"p1", "print(6*7)\n"}}));
    EXPECT_EQ(h.pm.proc("p1").cursor, h.pm.proc("p1").data.size());
    EXPECT_EQ(r.metadata["bytes_sent"], 11);
    EXPECT_EQ(r.metadata["title"], "Process write p1 \u00b7 11 bytes");
}

TEST_F(ProcessToolTest, WriteIncludesOutputNotReadBefore) {
    auto& p = h.pm.add_background(
        "python3", FakeScript{.output = "Python 3.11.2\r\n>>> ", .write_response = "1\r\n>>> "});
    p.cursor = 0;
    const ToolResult r = process({{"action", "write"}, {"id", "p1"}, {"input", "1\n"}});
    EXPECT_EQ(r.content,
              "Sent 2 bytes to p1 stdin.\nOutput (since your last read):\n  Python 3.11.2\n  "
              ">>> 1\n  >>> ");
}

TEST_F(ProcessToolTest, WriteWithoutResponse) {
    auto& p = h.pm.add_background("cat", FakeScript{});
    p.cursor = 0;
    const ToolResult r = process({{"action", "write"}, {"id", "p1"}, {"input", "y"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_write_no_output.txt", r.content);
}

TEST_F(ProcessToolTest, WriteToAnExitedProcess) {
    h.pm.add_background("npm test", FakeScript{.exit_code = 1}, ProcessState::kExited);
    const ToolResult r = process({{"action", "write"}, {"id", "p1"}, {"input", "q\n"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_write_exited.txt", r.content);
    EXPECT_TRUE(h.pm.writes.empty());
}

TEST_F(ProcessToolTest, WriteNeedsInput) {
    h.pm.add_background("cat", FakeScript{});
    ToolResult r = process({{"action", "write"}, {"id", "p1"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_write_missing_input.txt", r.content);
    r = process({{"action", "write"}, {"id", "p1"}, {"input", ""}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "input is empty: there is nothing to send. End the text with \\n to submit a line, "
              "e.g. \"yes\\n\".");
}

TEST_F(ProcessToolTest, WriteRefusedByTheProcessManager) {
    h.pm.add_background(
        "server", FakeScript{.write_error = Error{Errc::kFailedPrecondition, "it has no stdin"}});
    const ToolResult r = process({{"action", "write"}, {"id", "p1"}, {"input", "x\n"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Cannot write to p1: it has no stdin. Its output is in "
              "/state/process-logs/s1/p1.log.");
}

// ---- stop --------------------------------------------------------------------------------

TEST_F(ProcessToolTest, StopSendsSigterm) {
    h.pm.add_background("npm run dev", FakeScript{.runtime = milliseconds(372'000)});
    const ToolResult r = process({{"action", "stop"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_stop.txt", r.content);
    EXPECT_EQ(h.pm.stopped, (std::vector<std::string>{"p1"}));
    EXPECT_EQ(r.metadata["status"], "stopped");
    EXPECT_EQ(r.metadata["signal"], "SIGTERM");
    EXPECT_EQ(r.metadata["title"], "Process stop p1 \u00b7 stopped SIGTERM");
}

TEST_F(ProcessToolTest, StopSaysWhatItStoppedThatTheProcessHadStartedOutsideItsGroup) {
    h.pm.add_background("./run-daemons.sh", FakeScript{.runtime = milliseconds(9'000),
                                                       .leftovers = {"redis-server", "node"}});
    const ToolResult r = process({{"action", "stop"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_stop_leftovers.txt", r.content);
    h.pm.add_background("./once.sh",
                        FakeScript{.runtime = milliseconds(1'000), .leftovers = {"sleep"}},
                        ProcessState::kExited);
    expect_golden("process_list_leftovers.txt", process({{"action", "list"}}).content);
}

TEST_F(ProcessToolTest, StopThatNeededSigkill) {
    h.pm.add_background("stubborn", FakeScript{.runtime = milliseconds(65'000), .stop_signal = 9});
    const ToolResult r = process({{"action", "stop"}, {"id", "p1"}});
    expect_golden("process_stop_killed.txt", r.content);
}

TEST_F(ProcessToolTest, StopThatExitedWithItsOwnCode) {
    h.pm.add_background("node server.js", FakeScript{.stop_exit_code = 0});
    EXPECT_EQ(process({{"action", "stop"}, {"id", "p1"}}).content,
              "Stopped p1 (node server.js) \u00b7 exited with code 0 on SIGTERM \u00b7 ran 00:03. "
              "Full log: "
              "/state/process-logs/s1/p1.log");
}

TEST_F(ProcessToolTest, StopRacingAnExit) {
    h.pm.add_background("make", FakeScript{.exit_code = 2, .exits_during_stop = true});
    EXPECT_EQ(process({{"action", "stop"}, {"id", "p1"}}).content,
              "p1 (make) exited with code 2 before it could be stopped \u00b7 ran 00:03. Full "
              "log: /state/process-logs/s1/p1.log");
}

TEST_F(ProcessToolTest, StopAnAlreadyExitedProcess) {
    h.pm.add_background("npm test", FakeScript{.exit_code = 0, .runtime = milliseconds(12'000)},
                        ProcessState::kExited);
    const ToolResult r = process({{"action", "stop"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_stop_already_exited.txt", r.content);
    EXPECT_TRUE(h.pm.stopped.empty());
}

// ---- wait --------------------------------------------------------------------------------

TEST_F(ProcessToolTest, WaitUntilExit) {
    auto& p = h.pm.add_background(
        "pytest -x", FakeScript{.output = "collected 12 items\r\n",
                                .final_output = "............ [100%]\r\n12 passed in 4.20s\r\n",
                                .runtime = milliseconds(71'000),
                                .ticks = 2});
    p.cursor = p.data.size();
    std::vector<std::string> progress;
    h.base.ctx.progress = [&](double, std::optional<double>, std::string m) {
        progress.push_back(std::move(m));
    };
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_wait_exited.txt", r.content);
    EXPECT_EQ(progress, (std::vector<std::string>{"Waiting for p1 \u00b7 00:01",
                                                  "Waiting for p1 \u00b7 00:02"}));
    EXPECT_GT(h.pm.last_wait_budget, std::chrono::seconds(29));
    EXPECT_LE(h.pm.last_wait_budget, std::chrono::seconds(30));
    EXPECT_EQ(r.metadata["exit_code"], 0);
    EXPECT_EQ(r.metadata["new_lines"], 2);
    EXPECT_EQ(r.metadata["title"], "Process wait p1 \u00b7 exited 0");
}

TEST_F(ProcessToolTest, WaitSaysWhatTheAllowlistRefusedTheProcess) {
    h.pm.add_background(
        "npm install",
        FakeScript{.final_output = "npm error network\r\n",
                   .exit_code = 1,
                   .network_refused = {{.host = "registry.example",
                                        .port = 443,
                                        .count = 3,
                                        .reason = "not in the allowlist",
                                        .hint = "the user can add "
                                                "network.access(registry.example)"}}});
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_NE(r.content.find("\nnetwork: refused 3 connections to registry.example:443 (not in "
                             "the allowlist; the user can add network.access(registry.example))"),
              std::string::npos)
        << r.content;
    EXPECT_EQ(r.metadata["network_refused"][0]["count"], 3);
}

TEST_F(ProcessToolTest, WaitStillRunning) {
    auto& p = h.pm.add_background("npm run build", FakeScript{.output = "[1/3] compile\r\n",
                                                              .keeps_running = true,
                                                              .runtime = milliseconds(95'000)});
    p.cursor = 0;
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_FALSE(r.is_error);
    expect_golden("process_wait_running.txt", r.content);
}

TEST_F(ProcessToolTest, WaitCancelled) {
    h.pm.add_background("sleep 100", FakeScript{});
    std::stop_source stop;
    stop.request_stop();
    h.base.ctx.cancel = stop.get_token();
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content, "Waiting for p1 was cancelled; it is still running.");
}

TEST_F(ProcessToolTest, WaitOnAnExitedProcessReturnsAtOnce) {
    h.pm.add_background("npm test", FakeScript{.exit_code = 0}, ProcessState::kExited);
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_TRUE(h.pm.wait_exit_calls.empty());
    EXPECT_EQ(r.content,
              "No new output from p1 since last read.\np1 exited with code 0 \u00b7 ran 00:03. "
              "Full log: /state/process-logs/s1/p1.log");
}

// ---- ids ---------------------------------------------------------------------------------

TEST_F(ProcessToolTest, UnknownIdListsTheActiveOnes) {
    h.pm.add_background("npm run dev", FakeScript{});
    h.pm.add_background("pytest", FakeScript{});
    h.pm.add_background("npm test", FakeScript{}, ProcessState::kExited);
    const ToolResult r = process({{"action", "read"}, {"id", "p7"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_unknown_id.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Process p7 \u00b7 unknown id");
}

TEST_F(ProcessToolTest, UnknownIdSuggestsTheCloseOne) {
    h.pm.add_background("npm run dev", FakeScript{}, ProcessState::kExited);
    const ToolResult r = process({{"action", "stop"}, {"id", "1"}});
    EXPECT_EQ(r.content,
              "No process \"1\". Did you mean \"p1\"? No background process is running now. Use "
              "{\"action\":\"list\"} to see all.");
    EXPECT_TRUE(process({{"action", "stop"}, {"id", "P1"}})
                    .content.starts_with("No process \"P1\". Did you mean \"p1\"?"));
}

TEST_F(ProcessToolTest, UnknownIdWithNoProcesses) {
    const ToolResult r = process({{"action", "wait"}, {"id", "p1"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("process_unknown_id_none.txt", r.content);
}

TEST_F(ProcessToolTest, IdIsRequired) {
    for (const char* action : {"read", "write", "stop", "wait"}) {
        const ToolResult r = process({{"action", action}});
        EXPECT_TRUE(r.is_error) << action;
        EXPECT_EQ(r.content,
                  "Invalid input for tool \"process\": parameter \"id\" is required for "
                  "action \"" +
                      std::string(action) +
                      "\". Please rewrite the input so it satisfies the expected "
                      "schema.");
    }
    expect_golden("process_missing_id.txt", process({{"action", "stop"}}).content);
}

TEST_F(ProcessToolTest, SchemaRejectsUnknownActions) {
    const ToolResult r = process({{"action", "restart"}, {"id", "p1"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Invalid input for tool \"process\": parameter \"action\" must be one of \"start\", "
              "\"list\", \"read\", \"write\", \"stop\", \"wait\", not \"restart\". Please rewrite "
              "the input so it satisfies the expected schema.");
    const ToolAnnotations a = h.tool("process").annotations();
    EXPECT_TRUE(a.destructive);
    EXPECT_TRUE(a.open_world);
    EXPECT_FALSE(a.read_only);
}

}  // namespace
}  // namespace stockade::tools
