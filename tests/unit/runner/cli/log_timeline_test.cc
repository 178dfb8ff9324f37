#include "runner/cli/log_timeline.h"

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using nlohmann::json;
using std::chrono::system_clock;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

// An event as EventLog writes it, at 2026-12-04T16:58:SS.mmmZ.
json event(const std::string& type, json fields, int ms) {
    fields["v"] = 1;
    fields["type"] = type;
    fields["ts"] = fmt::format("2026-12-04T16:58:{:02}.{:03}Z", ms / 1000, ms % 1000);
    return fields;
}

std::string render(const std::vector<json>& events, Timeline& timeline) {
    std::string out;
    for (const json& e : events) {
        out += timeline.add(e);
    }
    return out;
}

TEST(TimelineTest, ShowsEachCallWithItsDecisionOutcomeAndWhatItChanged) {
    const std::vector<json> events = {
        event("PolicyLoaded",
              {{"preset", "workspace-write"}, {"mode", "local"}, {"rules", 1}, {"network", "none"}},
              0),
        event("SessionStarted", {{"workspace", "/w"}, {"image", "host"}}, 1),
        event("ToolRequested",
              {{"call", "1-1"},
               {"tool", "edit"},
               {"arguments",
                {{"file_path", "/w/src/a.cc"}, {"old_string", "x"}, {"new_string", "y"}}}},
              10),
        event("WorkerStarted",
              {{"generation", 1}, {"isolation", "full"}, {"isolation_shortfall", ""}}, 12),
        event("ToolDecided",
              {{"call", "1-1"},
               {"tool", "edit"},
               {"decision", "allow"},
               {"reason",
                "no rule matched; the workspace-write preset's default for file.write "
                "is allow"}},
              13),
        event("ToolStarted", {{"call", "1-1"}, {"tool", "edit"}}, 13),
        event("FileRead", {{"path", "/w/src/a.cc"}, {"sha256", "ab"}}, 20),
        event("FileModified",
              {{"path", "/w/src/a.cc"}, {"additions", 2}, {"deletions", 1}, {"created", false}},
              21),
        event("ToolCompleted",
              {{"call", "1-1"},
               {"tool", "edit"},
               {"duration_ms", 28},
               {"is_error", false},
               {"metadata", {{"title", "Edit src/a.cc · +2 −1"}}}},
              22),
        event("ToolRequested",
              {{"call", "2-2"},
               {"tool", "write"},
               {"arguments", {{"file_path", ".env"}, {"content", "x=1"}}}},
              30),
        event("ToolDecided",
              {{"call", "2-2"},
               {"tool", "write"},
               {"decision", "deny"},
               {"rule", "Write(./.env)"},
               {"origin", "command line:7"},
               {"reason", "matched deny rule"}},
              31),
        event("ToolFailed",
              {{"call", "2-2"},
               {"tool", "write"},
               {"duration_ms", 2},
               {"is_error", true},
               {"metadata",
                {{"title", "write refused by policy"}, {"policy", {{"decision", "deny"}}}}}},
              32),
        event("ToolRequested",
              {{"call", "3-3"},
               {"tool", "bash"},
               {"arguments", {{"command", "make test\necho done"}}}},
              40),
        event("ToolDecided", {{"call", "3-3"}, {"tool", "bash"}, {"decision", "allow"}}, 41),
        event("ProcessStarted",
              {{"id", "p1"}, {"command", "make test"}, {"background", false}, {"call", "3-3"}}, 42),
        event("NetworkConnection",
              {{"call", "3-3"},
               {"host", "registry.npmjs.org"},
               {"port", 443},
               {"outcome", "refused"},
               {"reason", "not in the allowlist"}},
              43),
        event("NetworkConnection",
              {{"call", "3-3"}, {"host", "pypi.org"}, {"port", 443}, {"outcome", "allowed"}}, 44),
        event("NetworkLookup",
              {{"call", "3-3"},
               {"host", "files.pythonhosted.org"},
               {"query_type", "AAAA"},
               {"outcome", "refused"},
               {"reason", "this sandbox has no network"}},
              44),
        event("ProcessExited",
              {{"id", "p1"},
               {"exit_code", 2},
               {"signal", nullptr},
               {"state", "exited"},
               {"runtime_ms", 1500},
               {"background", false}},
              45),
        event("ToolCompleted",
              {{"call", "3-3"},
               {"tool", "bash"},
               {"duration_ms", 1510},
               {"is_error", false},
               {"metadata", {{"exit_code", 2}, {"title", "Run make test · exit 2 · 1.5s"}}}},
              46),
        event("WorkerExited", {{"died", false}, {"reason", "session ended"}}, 50),
        event("SessionEnded", json::object(), 51),
    };
    Timeline timeline;
    EXPECT_EQ(render(events, timeline),
              "2026-12-04 (UTC)\n"
              "16:58:00.001  session started · workspace /w · image host · policy "
              "workspace-write, local mode, 1 rule · network none\n"
              "16:58:00.012    sandbox worker started · isolation full\n"
              "16:58:00.013  #1 edit src/a.cc -> allow (no rule matched; the workspace-write "
              "preset's default for file.write is allow)\n"
              "16:58:00.021    modified src/a.cc +2 -1\n"
              "16:58:00.022  #1 edit: ok in 28 ms · Edit src/a.cc · +2 −1\n"
              "16:58:00.031  #2 write .env (3 bytes) -> deny by rule Write(./.env) (command "
              "line:7)\n"
              "16:58:00.032  #2 write: refused in 2 ms · write refused by policy\n"
              "16:58:00.041  #3 bash make test … -> allow\n"
              "16:58:00.043    network refused registry.npmjs.org:443: not in the allowlist\n"
              "16:58:00.044    DNS query refused for files.pythonhosted.org (AAAA): this sandbox "
              "has no network\n"
              "16:58:00.046  #3 bash: exit 2 in 1.5 s · Run make test · exit 2 · 1.5s\n"
              "16:58:00.051  session ended\n");
    EXPECT_EQ(timeline.calls(), 3U);
    EXPECT_EQ(timeline.finish(), "");
}

TEST(TimelineTest, NumbersCallsAcrossResumedRunsWhoseCallIdsRepeat) {
    const std::vector<json> events = {
        event("SessionStarted", {{"workspace", "/w"}}, 0),
        event("ToolRequested",
              {{"call", "cli-1"}, {"tool", "read"}, {"arguments", {{"file_path", "a"}}}}, 1),
        event("ToolCompleted", {{"call", "cli-1"}, {"tool", "read"}, {"duration_ms", 1}}, 2),
        event("SessionEnded", json::object(), 3),
        event("SessionResumed", {{"stamps", 1}}, 4),
        event("ToolRequested",
              {{"call", "cli-1"}, {"tool", "read"}, {"arguments", {{"file_path", "b"}}}}, 5),
        event("ToolCompleted", {{"call", "cli-1"}, {"tool", "read"}, {"duration_ms", 1}}, 6),
    };
    Timeline timeline;
    const std::string text = render(events, timeline);
    EXPECT_THAT(text, HasSubstr("#1 read a: ok in 1 ms\n")) << text;
    EXPECT_THAT(text, HasSubstr("session resumed · 1 file stamp restored\n")) << text;
    EXPECT_THAT(text, HasSubstr("#2 read b: ok in 1 ms\n")) << text;
    EXPECT_EQ(timeline.calls(), 2U);
}

TEST(TimelineTest, SaysWhichCallsNeverGotAResult) {
    Timeline timeline;
    (void)timeline.add(event("SessionStarted", {{"workspace", "/w"}}, 0));
    (void)timeline.add(
        event("ToolRequested",
              {{"call", "7"}, {"tool", "bash"}, {"arguments", {{"command", "sleep 100"}}}}, 1));
    (void)timeline.add(event("ToolDecided", {{"call", "7"}, {"decision", "allow"}}, 2));
    EXPECT_EQ(timeline.finish(), "              #1 bash: no result in the log yet\n");
    // A run that stopped without SessionEnded (killed), then resumed: the call is closed.
    EXPECT_THAT(timeline.add(event("SessionResumed", json::object(), 3)),
                HasSubstr("#1 bash: no result (the session stopped before it answered)\n"));
    EXPECT_EQ(timeline.finish(), "");
}

TEST(TimelineTest, ShowsCheckpointsWithTheirCountsDropsAndRewinds) {
    Timeline timeline;
    const std::string out =
        render({event("Checkpoint",
                      {{"call", "3-1"},
                       {"seq", 1},
                       {"kind", "baseline"},
                       {"added", 12},
                       {"changed", 0},
                       {"removed", 0}},
                      0),
                event("Checkpoint",
                      {{"call", "3-1"},
                       {"seq", 2},
                       {"kind", "call"},
                       {"added", 1},
                       {"changed", 2},
                       {"removed", 3}},
                      1),
                event("CheckpointDropped", {{"call", "3-1"}, {"seq", 1}}, 2),
                event("Rewind",
                      {{"to", "3-1"},
                       {"restored", {"a", "b"}},
                       {"removed", {"c"}},
                       {"conflicts", {"d"}},
                       {"failed", json::array()}},
                      3),
                event("Rewind", {{"to", "@4"}, {"restored", {"a"}}, {"removed", json::array()}}, 4),
                event("Checkpoint",
                      {{"call", "rewind-@4"},
                       {"seq", 5},
                       {"kind", "rewind"},
                       {"added", 0},
                       {"changed", 1},
                       {"removed", 0}},
                      5)},
               timeline);
    EXPECT_EQ(out,
              "2026-12-04 (UTC)\n"
              "16:58:00.000    checkpoint 1 (baseline): 12 added, 0 changed, 0 removed\n"
              "16:58:00.001    checkpoint 2 (rewind --to 3-1 undoes it): 1 added, 2 changed, 3 "
              "removed\n"
              "16:58:00.002    checkpoint 1 (call 3-1) dropped: the checkpoint quota is full\n"
              "16:58:00.003  rewind to before call 3-1: 2 restored, 1 removed, 1 left alone "
              "(changed outside the session)\n"
              "16:58:00.004  rewind to checkpoint 4: 1 restored, 0 removed\n"
              "16:58:00.005    checkpoint 5 after the rewind: 0 added, 1 changed, 0 removed\n");
}

TEST(TimelineTest, ShowsAnswersBackgroundProcessesAndWorkerDeaths) {
    Timeline timeline;
    std::string out;
    out += timeline.add(
        event("ToolRequested",
              {{"call", "1"}, {"tool", "bash"}, {"arguments", {{"command", "npm i"}}}}, 0));
    out += timeline.add(event(
        "ToolDecided",
        {{"call", "1"}, {"decision", "ask"}, {"rule", "Bash(npm:*)"}, {"origin", "s.json:3"}}, 1));
    out += timeline.add(
        event("ToolAnswered", {{"call", "1"}, {"action", "accept"}, {"decision", "once"}}, 2));
    out += timeline.add(event("ProcessStarted",
                              {{"id", "p2"}, {"command", "npm run dev"}, {"background", true}}, 3));
    out += timeline.add(event(
        "WorkerExited", {{"died", true}, {"oom_killed", true}, {"signal", 9}, {"status", 137}}, 4));
    out += timeline.add(event("ProcessExited",
                              {{"id", "p2"},
                               {"signal", 9},
                               {"exit_code", nullptr},
                               {"runtime_ms", 65000},
                               {"background", true}},
                              5));
    out += timeline.add(event("WorkerStarted", {{"generation", 2}, {"isolation", "full"}}, 6));
    out += timeline.add(
        event("ToolAnswered", {{"call", "9"}, {"action", "fallback"}, {"decision", "deny"}}, 7));
    out += timeline.add(event("WorkerFailed",
                              {{"generation", 3},
                               {"error",
                                "start the session worker: --network allowlist needs a "
                                "network namespace"}},
                              8));
    EXPECT_EQ(out,
              "2026-12-04 (UTC)\n"
              "16:58:00.001  #1 bash npm i -> ask by rule Bash(npm:*) (s.json:3)\n"
              "16:58:00.002  #1 the user answered once\n"
              "16:58:00.003    process p2 started in the background: npm run dev\n"
              "16:58:00.004    sandbox worker died: killed by the out-of-memory killer\n"
              "16:58:00.005    process p2 killed by SIGKILL after 1m05s: npm run dev\n"
              "16:58:00.006    sandbox worker restarted (generation 2) · isolation full\n"
              "16:58:00.007  nobody could be asked: --ask-fallback deny\n"
              "16:58:00.008    sandbox worker could not start: start the session worker: "
              "--network allowlist needs a network namespace\n");
}

TEST(TimelineTest, AResultWhoseRequestCameBeforeSinceStandsAlone) {
    Timeline timeline;
    EXPECT_EQ(timeline.add(event(
                  "ToolFailed",
                  {{"call", "x"}, {"tool", "grep"}, {"duration_ms", 4}, {"is_error", true}}, 0)),
              "2026-12-04 (UTC)\n16:58:00.000  grep: failed in 4 ms\n");
}

TEST(TimelineTest, SinceHidesEarlierEventsButKeepsTheirNumbersAndTheDate) {
    Timeline timeline(parse_rfc3339("2026-12-04T16:58:00.005Z"));
    std::string out;
    out += timeline.add(event("SessionStarted", {{"workspace", "/w"}}, 0));
    out += timeline.add(
        event("ToolRequested",
              {{"call", "1"}, {"tool", "read"}, {"arguments", {{"file_path", "/w/a"}}}}, 1));
    out += timeline.add(event("ToolDecided", {{"call", "1"}, {"decision", "allow"}}, 2));
    out += timeline.add(json{{"type", "ToolStarted"}, {"call", "1"}});  // no time: hidden
    out += timeline.add(
        event("ToolRequested",
              {{"call", "2"}, {"tool", "read"}, {"arguments", {{"file_path", "/w/b"}}}}, 5));
    out += timeline.add(event("ToolDecided", {{"call", "2"}, {"decision", "allow"}}, 6));
    out += timeline.add(
        event("ToolCompleted", {{"call", "1"}, {"tool", "read"}, {"duration_ms", 7}}, 7));
    EXPECT_EQ(out,
              "2026-12-04 (UTC)\n"
              "16:58:00.006  #2 read b -> allow\n"
              "16:58:00.007  #1 read: ok in 7 ms\n");
}

TEST(TimelineTest, IgnoresUnknownAndMalformedEvents) {
    Timeline timeline;
    EXPECT_EQ(timeline.add(event("SomethingNew", {{"x", 1}}, 0)), "");
    EXPECT_EQ(timeline.add(json::array()), "");
    EXPECT_EQ(timeline.add(event(
                  "WorkerExited",
                  {{"died", true}, {"status", 0}, {"signal", 0}, {"reason", "session ended"}}, 1)),
              "")
        << "a worker that exits by itself as its session ends did not die";
    EXPECT_EQ(timeline.add(json{{"type", 7}}), "");
    // No ts: the time is unknown, not made up.
    EXPECT_EQ(timeline.add(json{{"type", "SessionEnded"}}), "??:??:??.???  session ended\n");
}

TEST(TimelineTest, WhatCameFromTheSandboxCannotDriveTheTerminal) {
    Timeline timeline;
    (void)timeline.add(event("ToolRequested",
                             {{"call", "1"},
                              {"tool", "bash"},
                              {"arguments", {{"command", "echo \x1b]0;owned\x07 \u202Egnp.exe"}}}},
                             0));
    const std::string line =
        timeline.add(event("ToolDecided", {{"call", "1"}, {"decision", "allow"}}, 1));
    EXPECT_EQ(line, "2026-12-04 (UTC)\n16:58:00.001  #1 bash echo ?]0;owned? ?gnp.exe -> allow\n");
}

TEST(TerminalTextTest, ReplacesControlsAndCutsOnACodePoint) {
    EXPECT_EQ(terminal_text("a\tb\nc\x7f"), "a?b?c?");
    EXPECT_EQ(terminal_text("x\u009b31m"), "x?31m") << "a C1 CSI";
    EXPECT_EQ(terminal_text("\u2066iso\u2069"), "?iso?");
    EXPECT_EQ(terminal_text("ééé", 3), "é…") << "never half a code point";
    EXPECT_EQ(terminal_text("Run ls · exit 0"), "Run ls · exit 0");
}

TEST(ArgumentSummaryTest, SaysWhatEachToolWasAskedInAFewWords) {
    EXPECT_EQ(
        argument_summary("read", {{"file_path", "/w/a.cc"}, {"offset", 10}, {"limit", 20}}, "/w"),
        "a.cc from line 10 (20 lines)");
    EXPECT_EQ(argument_summary("read", {{"file_path", "/wx/a.cc"}}, "/w"), "/wx/a.cc");
    EXPECT_EQ(argument_summary("edit", {{"file_path", "a"}, {"replace_all", true}}),
              "a (every match)");
    EXPECT_EQ(argument_summary(
                  "grep", {{"pattern", "TODO"}, {"path", "/w/src"}, {"include", "*.cc"}}, "/w"),
              "\"TODO\" in src (*.cc)");
    EXPECT_EQ(argument_summary("glob", {{"pattern", "**/*.h"}}), "\"**/*.h\"");
    EXPECT_EQ(argument_summary("bash", {{"command", "make"}, {"workdir", "/w/b"}}, "/w"),
              "make (in b)");
    EXPECT_EQ(argument_summary("process", {{"action", "kill"}, {"id", "p3"}}), "kill p3");
    EXPECT_EQ(argument_summary("other", {{"k", 1}}), "{\"k\":1}");
    EXPECT_EQ(argument_summary("read", "not an object"), "");
    EXPECT_EQ(argument_summary("bash", {{"command", std::string(300, 'x')}}).size(),
              100U + std::string("…").size());
}

TEST(ParseRfc3339Test, ReadsEventTimesAndOffsets) {
    const auto base = parse_rfc3339("2026-11-30T12:00:00Z");
    ASSERT_TRUE(base.has_value());
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(base->time_since_epoch()).count(),
              1796040000);
    EXPECT_EQ(parse_rfc3339("2026-11-30T13:00:00+01:00"), base);
    EXPECT_EQ(parse_rfc3339("2026-11-30t11:30:00-00:30"), base);
    EXPECT_EQ(parse_rfc3339("2026-11-30T12:00:00.250Z"), *base + std::chrono::milliseconds(250));
    for (const char* bad : {"", "2026-11-30", "2026-11-30T12:00:00", "2026-13-01T00:00:00Z",
                            "2026-02-30T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T12:00:00.Z",
                            "2026-11-30T12:00:00+0100", "2026-11-30T12:00:00Zjunk"}) {
        EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
    }
}

TEST(ParseSinceTest, TakesDurationsBackFromNowTimesAndDates) {
    const auto now = *parse_rfc3339("2026-11-30T12:00:00Z");
    using std::chrono::hours;
    using std::chrono::minutes;
    using std::chrono::seconds;
    const std::vector<std::pair<std::string, system_clock::time_point>> cases = {
        {"10m", now - minutes(10)},
        {"90s", now - seconds(90)},
        {"2h", now - hours(2)},
        {"1d", now - hours(24)},
        {"1h30m", now - minutes(90)},
        {" 5m ", now - minutes(5)},
        {"2026-11-30T11:00:00Z", now - hours(1)},
        {"2026-11-30T12:00:00+01:00", now - hours(1)},
        {"2026-11-30", now - hours(12)},
    };
    for (const auto& [text, want] : cases) {
        auto got = parse_since(text, now);
        ASSERT_THAT(got, IsOk()) << text;
        EXPECT_EQ(*got, want) << text;
    }
}

TEST(ParseSinceTest, RefusesWhatIsNeitherAndSaysWhatItTakes) {
    const auto now = system_clock::now();
    for (const char* bad : {"", "10", "m", "10x", "-5m", "1h-", "yesterday", "2026-11-31",
                            "2026-11-30T12:00", "99999999999999999999m"}) {
        auto got = parse_since(bad, now);
        ASSERT_THAT(got, HasErrc(Errc::kInvalidArgument)) << bad;
        EXPECT_THAT(got.error().message, HasSubstr("10m")) << bad;
    }
}

}  // namespace
}  // namespace stockade::runner
