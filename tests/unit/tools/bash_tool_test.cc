#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/tools/fake_process_manager.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

using std::chrono::milliseconds;
using testing::expect_golden;
using testing::FakeScript;
using testing::ProcessToolHarness;

std::string numbered(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) {
        s += "line " + std::to_string(i) + "\r\n";
    }
    return s;
}

class BashToolTest : public ::testing::Test {
protected:
    ToolResult bash(const std::string& command, nlohmann::json extra = nlohmann::json::object()) {
        extra["command"] = command;
        return h.call("bash", extra);
    }
    ProcessToolHarness h;
};

TEST_F(BashToolTest, SuccessRendersOutputAndTheStatusLine) {
    h.pm.scripts["npm test"] = FakeScript{
        .output =
            "\x1b[1m> proj@0.3.1 test\x1b[22m\r\n> vitest run\r\n\r\n \x1b[32m\u2713\x1b[39m "
            "src/context/engine.test.ts (14 tests)\r\n\x1b[2K\rTest Files  1 passed (1)\r\n",
        .runtime = milliseconds(3200)};
    const ToolResult r = bash("npm test");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_success.txt", r.content);

    ASSERT_EQ(h.pm.starts.size(), 1U);
    const StartRequest& req = h.pm.starts[0];
    EXPECT_EQ(req.argv, (std::vector<std::string>{"npm", "test"}));
    EXPECT_EQ(req.command, "npm test");
    EXPECT_EQ(req.cwd, "");
    EXPECT_EQ(req.cwd_display, "/work/proj");
    EXPECT_FALSE(req.pty) << "bash uses pipes: a PTY moves ~23 MB/s";
    EXPECT_FALSE(req.interactive);
    EXPECT_FALSE(req.background);
    EXPECT_EQ(req.env, (std::vector<std::string>{"TERM=dumb", "PAGER=cat", "GIT_PAGER=cat",
                                                 "GIT_TERMINAL_PROMPT=0", "PYTHONUNBUFFERED=1"}));
    EXPECT_EQ(req.call_id, "call1");

    const nlohmann::json& m = r.metadata;
    EXPECT_EQ(m["title"], "Run npm test \u00b7 exit 0 \u00b7 3.2s");
    EXPECT_EQ(m["command"], "npm test");
    EXPECT_EQ(m["exit_code"], 0);
    EXPECT_EQ(m["signal"], nullptr);
    EXPECT_EQ(m["semantic_status"], "ok");
    EXPECT_EQ(m["semantic_message"], nullptr);
    EXPECT_EQ(m["warning"], nullptr);
    EXPECT_EQ(m["runtime_ms"], 3200);
    EXPECT_TRUE(m.contains("duration_ms"));
    EXPECT_EQ(m["timed_out"], false);
    EXPECT_EQ(m["auto_backgrounded"], false);
    EXPECT_EQ(m["process_id"], nullptr);
    EXPECT_EQ(m["shell_kind"], "direct");
    EXPECT_EQ(m["cwd"], "/work/proj");
    EXPECT_EQ(m["output_lines"], 5);
    EXPECT_EQ(m["truncated"], false);
    EXPECT_EQ(m["truncated_bytes"], 0);
    EXPECT_EQ(m["spill_path"], nullptr);
    EXPECT_FALSE(m.contains("truncation"));
    EXPECT_EQ(m["log_path"], "/state/process-logs/s1/fg-1.log");

    // The foreground process is forgotten once the call returns; nothing is left over.
    EXPECT_EQ(h.pm.forgotten, (std::vector<std::string>{"fg-1"}));
    EXPECT_FALSE(m.contains("leftovers_stopped"));
    EXPECT_EQ(h.pm.process_count(), 0U);
}

TEST_F(BashToolTest, TerminalControlSequencesReachTheModelAsPlainText) {
    // OSC 52 (clipboard write), OSC 0 (window title), CSI 2J + cursor home, BEL, an 8-bit CSI
    // as UTF-8 (U+009B, which the renderer does not know as an escape: the backstop escapes it).
    h.pm.scripts["cat notes"] =
        FakeScript{.output =
                       "\x1b]52;c;cHduZWQ=\x07"
                       "copied\n\x1b]0;owned\x1b\\titled\n\x1b[2J\x1b[Hcleared"
                       "\x07\n\u009b"
                       "2J c1\n"};
    const ToolResult r = bash("cat notes");
    EXPECT_FALSE(r.is_error) << r.content;
    EXPECT_TRUE(testing::is_inert(r.content)) << r.content;
    expect_golden("bash_terminal_sequences.txt", r.content);
}

TEST_F(BashToolTest, AWriteRefusedOnAProtectedPathIsExplained) {
    const std::vector<ProtectedPath> protected_paths = {
        {.path = "/work/proj/.git/config", .reason = "hooks could run outside the sandbox."},
        {.path = "/work/proj/vendor", .reason = "a deny rule makes it read-only."}};
    h.base.ctx.protected_paths = &protected_paths;
    h.pm.scripts["git config user.name me"] = FakeScript{
        .output = "error: could not write config file .git/config: Device or resource busy\n",
        .exit_code = 255};
    const ToolResult r = bash("git config user.name me");
    EXPECT_THAT(r.content,
                ::testing::EndsWith("\nNote: .git/config is protected in this sandbox: hooks could "
                                    "run outside the sandbox."));
    EXPECT_THAT(r.content, ::testing::Not(::testing::HasSubstr("vendor")));
    // Naming a protected path is not enough: the output must show a write to it failing.
    h.pm.scripts["cat .git/config"] = FakeScript{.output = "[core]\n\tbare = false\n"};
    EXPECT_THAT(bash("cat .git/config").content, ::testing::Not(::testing::HasSubstr("Note:")));
}

TEST_F(BashToolTest, ShellSyntaxRunsThroughBash) {
    h.pm.fallback = FakeScript{.output = "3\n"};
    const ToolResult r = bash("ls src | wc -l");
    ASSERT_EQ(h.pm.starts.size(), 1U);
    EXPECT_EQ(h.pm.starts[0].argv, (std::vector<std::string>{"/bin/bash", "-c", "ls src | wc -l"}));
    EXPECT_EQ(r.metadata["shell_kind"], "bash");
}

TEST_F(BashToolTest, NonZeroExitIsNotAnErrorResult) {
    h.pm.scripts["npm run lint"] = FakeScript{
        .output = "src/a.ts:3:1  error  'x' is defined but never used\r\n\r\n\u2716 1 problem\r\n",
        .exit_code = 1,
        .runtime = milliseconds(4100)};
    const ToolResult r = bash("npm run lint");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_nonzero_exit.txt", r.content);
    EXPECT_EQ(r.metadata["exit_code"], 1);
    EXPECT_EQ(r.metadata["semantic_status"], "error");
    EXPECT_EQ(r.metadata["title"], "Run npm run lint \u00b7 exit 1 \u00b7 4.1s");
}

TEST_F(BashToolTest, GrepWithoutMatchesIsOk) {
    h.pm.scripts["grep -rn TODO src"] = FakeScript{.exit_code = 1, .runtime = milliseconds(120)};
    const ToolResult r = bash("grep -rn TODO src");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_no_matches.txt", r.content);
    EXPECT_EQ(r.metadata["semantic_status"], "ok");
    EXPECT_EQ(r.metadata["semantic_message"], "No matches found");
    EXPECT_EQ(r.metadata["exit_code"], 1);
}

TEST_F(BashToolTest, KilledBySignal) {
    h.pm.scripts["node leak.js"] = FakeScript{.output = "allocating\r\n",
                                              .exit_code = std::nullopt,
                                              .signal = 9,
                                              .runtime = milliseconds(12'400)};
    const ToolResult r = bash("node leak.js");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_signal.txt", r.content);
    EXPECT_EQ(r.metadata["exit_code"], nullptr);
    EXPECT_EQ(r.metadata["signal"], "SIGKILL");
    EXPECT_EQ(r.metadata["semantic_status"], "signal");
    EXPECT_EQ(r.metadata["title"], "Run node leak.js \u00b7 killed by SIGKILL \u00b7 12.4s");
}

TEST_F(BashToolTest, LongOutputIsCutMiddleOutWithTheLogAsSpill) {
    h.pm.scripts["cat build.log"] = FakeScript{.output = numbered(1, 1000)};
    const ToolResult r = bash("cat build.log");
    expect_golden("bash_truncated.txt", r.content);
    const nlohmann::json& m = r.metadata;
    EXPECT_EQ(m["truncated"], true);
    EXPECT_EQ(m["spill_path"], "/state/process-logs/s1/fg-1.log");
    EXPECT_EQ(m["output_lines"], 1000);
    EXPECT_EQ(m["output_bytes"], numbered(1, 1000).size());
    EXPECT_EQ(m["truncated_bytes"], numbered(251, 850).size());
    EXPECT_EQ(m["truncation"]["shown_head_lines"], 250);
    EXPECT_EQ(m["truncation"]["shown_tail_lines"], 150);
    EXPECT_EQ(m["truncation"]["omitted_lines"], 600);
    EXPECT_EQ(m["truncation"]["spill_path"], "/state/process-logs/s1/fg-1.log");
    EXPECT_LE(r.content.size(), 30U * 1024);
}

TEST_F(BashToolTest, HugeOutputIsNeverReadWhole) {
    std::string big;
    for (int i = 0; i < 200'000; ++i) {
        big += "row " + std::to_string(i) + " " + std::string(40, '-') + "\n";
    }
    h.pm.scripts["./gen"] = FakeScript{.output = big};
    const ToolResult r = bash("./gen");
    EXPECT_LT(h.pm.bytes_served, 256U * 1024);
    EXPECT_LE(r.content.size(), 30U * 1024 + 200);
    EXPECT_EQ(r.metadata["truncated"], true);
}

TEST_F(BashToolTest, TimeoutMovesTheCommandToTheBackground) {
    h.pm.scripts["npm run build"] =
        FakeScript{.output = "building...\r\n[1/3] compile\r\n[2/3] bundle\r\n",
                   .keeps_running = true,
                   .runtime = milliseconds(5000)};
    const ToolResult r = bash("npm run build", {{"timeout_ms", 5000}});
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_background.txt", r.content);
    EXPECT_EQ(h.pm.adopted, (std::vector<std::pair<std::string, std::string>>{{"fg-1", "p1"}}));
    EXPECT_TRUE(h.pm.forgotten.empty());
    EXPECT_TRUE(h.pm.killed.empty());
    const nlohmann::json& m = r.metadata;
    EXPECT_EQ(m["auto_backgrounded"], true);
    EXPECT_EQ(m["timed_out"], true);
    EXPECT_EQ(m["process_id"], "p1");
    EXPECT_EQ(m["exit_code"], nullptr);
    EXPECT_EQ(m["log_path"], "/state/process-logs/s1/p1.log");
    EXPECT_EQ(m["title"], "Run npm run build \u00b7 moved to background as p1");

    // The read cursor sits right after what was shown: output continues across the seam.
    EXPECT_EQ(h.pm.proc("p1").cursor, h.pm.proc("p1").data.size());
    h.pm.append("p1", "[3/3] minify\r\n");
    const ToolResult read = h.call("process", {{"action", "read"}, {"id", "p1"}});
    EXPECT_EQ(read.content, "Output of p1 since last read (lines 4\u20134 of 4):\n[3/3] minify");
}

TEST_F(BashToolTest, TimeoutDefaultsAndClamps) {
    h.pm.fallback = FakeScript{};
    (void)bash("make");
    EXPECT_GT(h.pm.last_wait_budget, std::chrono::seconds(119));
    EXPECT_LE(h.pm.last_wait_budget, std::chrono::seconds(120));

    const ToolResult r = bash("make", {{"timeout_ms", 999'999}});
    EXPECT_GT(h.pm.last_wait_budget, std::chrono::seconds(299));
    EXPECT_LE(h.pm.last_wait_budget, std::chrono::seconds(300));
    EXPECT_EQ(r.metadata["timeout_ms"], 300'000);
    EXPECT_EQ(r.metadata["timeout_clamped"], true);
}

TEST_F(BashToolTest, NonPositiveTimeoutIsRepairProse) {
    const ToolResult r = bash("make", {{"timeout_ms", 0}});
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_timeout_invalid.txt", r.content);
    EXPECT_TRUE(h.pm.starts.empty());
}

TEST_F(BashToolTest, EmptyCommandIsRefused) {
    const ToolResult r = bash("  \n");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content, "command is empty. Give the shell command to run, e.g. \"npm test\".");
}

TEST_F(BashToolTest, CancellationKillsTheProcessGroup) {
    h.pm.scripts["sleep 100"] = FakeScript{.runtime = milliseconds(2500)};
    std::stop_source stop;
    stop.request_stop();
    h.base.ctx.cancel = stop.get_token();
    const ToolResult r = bash("sleep 100");
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_cancelled.txt", r.content);
    EXPECT_EQ(h.pm.killed, (std::vector<std::string>{"fg-1"}));
    EXPECT_EQ(h.pm.forgotten, (std::vector<std::string>{"fg-1"}));
    EXPECT_TRUE(h.pm.adopted.empty());
    EXPECT_EQ(r.metadata["cancelled"], true);
    EXPECT_EQ(r.metadata["signal"], "SIGKILL");
}

TEST_F(BashToolTest, SpawnFailureSuggestsTheClosestCommand) {
    h.pm.scripts["npmm install"] =
        FakeScript{.start_error = Error{Errc::kNotFound, "npmm: command not found"}};
    const ToolResult r = bash("npmm install");
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_spawn_failure_suggestion.txt", r.content);
    EXPECT_EQ(r.metadata["title"], "Run npmm install \u00b7 failed to start");
}

TEST_F(BashToolTest, SpawnFailureWithoutSuggestion) {
    h.pm.scripts["zzqx --version"] =
        FakeScript{.start_error = Error{Errc::kNotFound, "zzqx: command not found"}};
    const ToolResult r = bash("zzqx --version");
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_spawn_failure.txt", r.content);
}

TEST_F(BashToolTest, BashCommandNotFoundIsTheSameSpawnFailure) {
    h.pm.scripts["npmm install && npm test"] =
        FakeScript{.output = "/bin/bash: line 1: npmm: command not found\r\n", .exit_code = 127};
    const ToolResult r = bash("npmm install && npm test");
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_spawn_failure_suggestion.txt", r.content);
    EXPECT_EQ(r.metadata["exit_code"], 127);
    EXPECT_EQ(h.pm.forgotten, (std::vector<std::string>{"fg-1"}));
}

TEST_F(BashToolTest, BashMissingScript) {
    h.pm.scripts["./deploy.sh prod"] =
        FakeScript{.output = "/bin/bash: line 1: ./deploy.sh: No such file or directory\r\n",
                   .exit_code = 127};
    // Plain words, but a path: executed directly, so the worker reports it; through a shell
    // (here forced by the quoting) bash does.
    h.pm.scripts["./deploy.sh 'prod'"] = h.pm.scripts["./deploy.sh prod"];
    const ToolResult r = bash("./deploy.sh 'prod'");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content, "Command failed to start: ./deploy.sh: No such file or directory.");
}

TEST_F(BashToolTest, Exit127WithOtherOutputIsAnOrdinaryResult) {
    h.pm.scripts["make check"] =
        FakeScript{.output = "checking\r\nsh: 1: foo: not found\r\n", .exit_code = 127};
    const ToolResult r = bash("make check");
    EXPECT_FALSE(r.is_error);
    EXPECT_TRUE(r.content.ends_with("[exit code 127 \u00b7 3.2s \u00b7 cwd /work/proj]"));
}

TEST_F(BashToolTest, AStartThatFindsTheProcessLimitFullSaysWhatHoldsIt) {
    h.pm.scripts["make test"] = FakeScript{
        .start_error = Error{Errc::kResourceExhausted,
                             "spawn: fork: EAGAIN (Resource temporarily unavailable)", EAGAIN}};
    h.pm.load_answer = {.total = 512, .limit = 512, .holders = {}, .elsewhere = 512};
    const ToolResult r = bash("make test");
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_start_at_process_limit.txt", r.content);
}

TEST_F(BashToolTest, OtherStartFailures) {
    h.pm.scripts["a"] =
        FakeScript{.start_error = Error{Errc::kResourceExhausted, "64 processes are running"}};
    ToolResult r = bash("a");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content,
              "Command failed to start: 64 processes are running. Stop background processes you "
              "no longer need (process {\"action\":\"list\"} shows them) and try again.");
    h.pm.scripts["b"] = FakeScript{.start_error = Error{Errc::kUnavailable, "the sandbox is gone"}};
    r = bash("b");
    EXPECT_EQ(r.content, "Command failed to start: the sandbox is gone.");
}

TEST_F(BashToolTest, WhatTheCommandLeftRunningWasStoppedAndTheResultSaysSo) {
    h.pm.scripts["npm start & setsid python3 -m http.server &"] = FakeScript{
        .output = "started\r\n", .output_closed = false, .leftovers = {"node", "python3"}};
    const ToolResult r = bash("npm start & setsid python3 -m http.server &");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_leftovers.txt", r.content);
    EXPECT_EQ(r.metadata["leftovers_stopped"], 2);
    EXPECT_EQ(r.metadata["leftover_names"], (nlohmann::json{"node", "python3"}));
}

TEST_F(BashToolTest, ConnectionsTheAllowlistRefusedAreInTheResult) {
    h.pm.scripts["curl -sS https://evil.example/"] =
        FakeScript{.output = "curl: (56) CONNECT tunnel failed, response 403\n",
                   .exit_code = 56,
                   .network_refused = {{.host = "evil.example",
                                        .port = 443,
                                        .count = 2,
                                        .reason = "not in the allowlist",
                                        .hint = "the user can add network.access(evil.example)"}}};
    ToolResult r = bash("curl -sS https://evil.example/");
    expect_golden("bash_network_refused.txt", r.content);
    EXPECT_EQ(r.metadata["network_refused"][0]["host"], "evil.example");
    EXPECT_EQ(r.metadata["network_refused"][0]["count"], 2);

    // Several targets: the first three by name, the rest counted.
    h.pm.scripts["./fetch-all.sh"] = FakeScript{
        .output = "done\n",
        .network_refused = {
            {.host = "a.example",
             .port = 443,
             .count = 1,
             .reason = "not in the allowlist",
             .hint = "the user can add network.access(a.example)"},
            {.host = "10.0.0.7",
             .port = 80,
             .count = 3,
             .reason = "10.0.0.7 is a private address (RFC 1918), which is never reached through "
                       "the proxy"},
            {.host = "::1", .port = 8080, .count = 1, .reason = "denied by network.access(*)"},
            {.host = "b.example", .port = 443, .count = 2, .reason = "not in the allowlist"},
            {.host = "", .port = 0, .count = 40}}};
    r = bash("./fetch-all.sh");
    expect_golden("bash_network_refused_many.txt", r.content);

    // A name that resolves to a private address (a registry mirror on the operator's network):
    // the exact pin that would allow it, for the user to decide on.
    h.pm.scripts["npm install"] = FakeScript{
        .output = "npm error code E403\n",
        .exit_code = 1,
        .network_refused = {
            {.host = "registry.npmjs.org",
             .port = 443,
             .count = 1,
             .reason = "registry.npmjs.org resolves to a private address (RFC 1918) (10.20.0.5), "
                       "which is never reached through the proxy",
             .hint = "if it is meant to be reached, the user can pin it: --resolve "
                     "registry.npmjs.org=10.20.0.5 (settings: sandbox.network.resolve)"}}};
    r = bash("npm install");
    expect_golden("bash_network_refused_private_name.txt", r.content);
}

TEST_F(BashToolTest, ALogThatRanOutOfBudgetSaysWhatItLacks) {
    h.pm.scripts["make -j"] = FakeScript{.output = "built\n", .log_dropped = 3'400'000'000};
    const ToolResult r = bash("make -j");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_log_dropped.txt", r.content);
    EXPECT_EQ(r.metadata["log_dropped_bytes"], 3'400'000'000ULL);
}

TEST_F(BashToolTest, ALogWithNoRoomForItsEndSaysItKeepsTheStartOnly) {
    h.pm.scripts["make -j"] = FakeScript{
        .output = "compiled a.o\ncompiled b.o\nbuilt\n", .log_dropped = 6, .log_end_dropped = true};
    const ToolResult r = bash("make -j");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_log_end_dropped.txt", r.content);
    EXPECT_EQ(r.metadata["log_dropped_bytes"], 6U);
    EXPECT_EQ(r.metadata["log_end_dropped"], true);
}

TEST_F(BashToolTest, ALogWithNoRoomForAnyOfItSaysSo) {
    h.pm.scripts["make -j"] =
        FakeScript{.output = "built\n", .log_dropped = 6, .log_end_dropped = true};
    const ToolResult r = bash("make -j");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_log_empty.txt", r.content);
}

TEST_F(BashToolTest, OutputHeldOpenButNothingLeft) {
    h.pm.scripts["x"] = FakeScript{.output = "ok\n", .output_closed = false};
    const ToolResult r = bash("x");
    EXPECT_EQ(r.content.find("Note:"), std::string::npos);
    EXPECT_EQ(r.content.find("Stopped"), std::string::npos);
}

TEST_F(BashToolTest, DestructiveCommandsCarryAWarning) {
    h.pm.scripts["rm -rf build && git reset --hard"] = FakeScript{.runtime = milliseconds(300)};
    const ToolResult r = bash("rm -rf build && git reset --hard");
    EXPECT_FALSE(r.is_error);
    expect_golden("bash_warning.txt", r.content);
    EXPECT_EQ(r.metadata["warning"],
              "may force-remove files recursively (rm -rf); may discard uncommitted changes (git "
              "reset --hard)");
}

TEST_F(BashToolTest, ProgressReportsElapsedSeconds) {
    h.pm.scripts["npm test"] = FakeScript{.ticks = 3};
    std::vector<std::pair<double, std::string>> seen;
    h.base.ctx.progress = [&](double done, std::optional<double> total, std::string message) {
        EXPECT_FALSE(total.has_value());
        seen.emplace_back(done, std::move(message));
    };
    (void)bash("npm test");
    ASSERT_EQ(seen.size(), 3U);
    EXPECT_DOUBLE_EQ(seen[0].first, 1.0);
    EXPECT_DOUBLE_EQ(seen[2].first, 3.0);
    EXPECT_EQ(seen[0].second, "Running npm test \u00b7 1s");
    EXPECT_EQ(seen[2].second, "Running npm test \u00b7 3s");
}

TEST_F(BashToolTest, WorkdirInsideTheWorkspace) {
    h.base.ws.mkdir("packages/web");
    h.pm.fallback = FakeScript{.output = "ok\n"};
    const ToolResult r = bash("npm test", {{"workdir", "packages/web"}});
    ASSERT_EQ(h.pm.starts.size(), 1U);
    EXPECT_EQ(h.pm.starts[0].cwd, "packages/web");
    EXPECT_EQ(h.pm.starts[0].cwd_display, "/work/proj/packages/web");
    EXPECT_EQ(r.metadata["cwd"], "/work/proj/packages/web");
    EXPECT_TRUE(r.content.ends_with("cwd /work/proj/packages/web]"));

    (void)bash("npm test", {{"workdir", "/work/proj/packages/web/"}});
    EXPECT_EQ(h.pm.starts[1].cwd, "packages/web");
}

TEST_F(BashToolTest, WorkdirErrors) {
    h.base.ws.put("README.md", "hi\n");
    h.base.ws.mkdir("packages/web");
    ToolResult r = bash("ls", {{"workdir", "/etc"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_workdir_outside.txt", r.content);

    r = bash("ls", {{"workdir", "packages/wbe"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_workdir_missing.txt", r.content);

    r = bash("ls", {{"workdir", "README.md"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_workdir_not_directory.txt", r.content);

    r = bash("ls", {{"workdir", "/state/tool-output/s1"}});
    EXPECT_TRUE(r.is_error);
    expect_golden("bash_workdir_spill.txt", r.content);
    EXPECT_TRUE(h.pm.starts.empty());
}

TEST_F(BashToolTest, WithoutAProcessManager) {
    h.base.ctx.processes = nullptr;
    const ToolResult r = bash("ls");
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(r.content, "bash is not available in this session (no process manager).");
}

TEST_F(BashToolTest, SchemaAndAnnotations) {
    const Tool& t = h.tool("bash");
    EXPECT_EQ(t.name(), "bash");
    EXPECT_EQ(t.title(), "Run command");
    const ToolAnnotations a = t.annotations();
    EXPECT_FALSE(a.read_only);
    EXPECT_TRUE(a.destructive);
    EXPECT_TRUE(a.open_world);
    const ToolResult r = h.call("bash", {{"command", "ls"}, {"cwd", "src"}});
    EXPECT_TRUE(r.is_error);
    EXPECT_TRUE(
        r.content.starts_with("Invalid input for tool \"bash\": unknown parameter \"cwd\""));
}

TEST(ProcessToolsTest, SchemasAreClosedWithAtMostFiveParameters) {
    std::vector<std::string> names;
    for (const auto& t : make_process_tools()) {
        names.emplace_back(t->name());
        const nlohmann::json& s = t->input_schema();
        EXPECT_EQ(s["additionalProperties"], false);
        EXPECT_LE(s["properties"].size(), 5U);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"bash", "process"}));
}

}  // namespace
}  // namespace stockade::tools
