// `stockade log` on sessions a real `stockade serve` made: the list, the timeline (pinned by a
// golden file, tests/golden/cli/log_timeline.txt), and --follow while the session runs.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/golden.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class LogTest : public ::testing::Test {
protected:
    void SetUp() override {
        workspace_.write_file("a.txt", "one\ntwo\n");
        // The session's workspace is its real path (the sandbox mounts that).
        workspace_real_ = std::filesystem::canonical(workspace_.path()).string();
    }

    // The one session the state directory holds.
    std::string only_session() const {
        std::vector<std::string> ids;
        for (const auto& entry : std::filesystem::directory_iterator(state_.sub("sessions"))) {
            ids.push_back(entry.path().filename().string());
        }
        EXPECT_EQ(ids.size(), 1U);
        return ids.empty() ? std::string() : ids.front();
    }

    RunResult log(std::vector<std::string> args) const {
        args.insert(args.begin(), {"log", "--state-dir", state_.path()});
        RunConfig config;
        config.timeout = std::chrono::seconds(30);
        return run_stockade(args, config);
    }

    // What varies from run to run, replaced: times, durations, the session id, the workspace's
    // path, and the isolation level (root and unprivileged runs get different ones).
    std::string normalized(std::string text) const {
        const std::vector<std::pair<std::regex, std::string>> rules = {
            {std::regex(R"(\d{4}-\d\d-\d\d \(UTC\))"), "YYYY-MM-DD (UTC)"},
            {std::regex(R"((^|\n)\d\d:\d\d:\d\d\.\d\d\d)"), "$1HH:MM:SS.mmm"},
            {std::regex(R"(\b\d+ ms\b|\b\d+\.\d s\b|\b\d+\.\ds\b)"), "T"},
            {std::regex(R"(s-[0-9a-f]{12})"), "s-ID"},
            {std::regex(R"(isolation [a-z]+( \([^\n]*\))?)"), "isolation LEVEL"},
        };
        std::string::size_type at = 0;
        while ((at = text.find(workspace_real_, at)) != std::string::npos) {
            text.replace(at, workspace_real_.size(), "<workspace>");
        }
        for (const auto& [pattern, replacement] : rules) {
            text = std::regex_replace(text, pattern, replacement);
        }
        return text;
    }

    TempDir workspace_{"stockade-log-ws"};
    TempDir state_{"stockade-log-state"};
    std::string workspace_real_;
};

TEST_F(LogTest, ATimelineOfARealSessionAndItsPlaceInTheList) {
    std::string id;
    {
        ServeProcess serve(workspace_.path(), state_.path(), {"--deny", "Write(./.env)"});
        const nlohmann::json init = serve.initialize();
        ASSERT_TRUE(init.contains("result")) << init.dump();
        id = only_session();
        // The client is told which event log is its session's.
        EXPECT_EQ(init["result"]["_meta"]["dev.stockade/session"]["event_log_id"], id)
            << init.dump();
        EXPECT_THAT(text_of(serve.call("read", {{"file_path", "a.txt"}})), HasSubstr("two"));
        EXPECT_THAT(
            text_of(serve.call(
                "edit", {{"file_path", "a.txt"}, {"old_string", "two"}, {"new_string", "2\n3"}})),
            HasSubstr("Edited"));
        EXPECT_THAT(text_of(serve.call("write", {{"file_path", ".env"}, {"content", "x=1"}})),
                    HasSubstr("denied"));
        EXPECT_THAT(text_of(serve.call("bash", {{"command", "echo hi; exit 3"}})),
                    HasSubstr("exit code 3"));
        EXPECT_THAT(text_of(serve.call("grep", {{"pattern", "one"}})), HasSubstr("a.txt"));
        serve.close_input();
        ASSERT_EQ(serve.wait_exit(std::chrono::seconds(20)), 0);
    }
    ASSERT_FALSE(id.empty());

    const RunResult shown = log({id});
    ASSERT_EQ(shown.exit_code, 0) << shown.describe();
    EXPECT_EQ(shown.err, "") << shown.describe();
    // The prefix of its id finds it too; --json gives the events themselves, one per line.
    const RunResult events = log({id.substr(0, 8), "--json"});
    ASSERT_EQ(events.exit_code, 0) << events.describe();
    const std::vector<std::string> lines = split_lines(events.out);
    ASSERT_GE(lines.size(), 10U) << events.describe();
    for (const std::string& line : lines) {
        const auto event = nlohmann::json::parse(line, nullptr, false);
        ASSERT_TRUE(event.is_object()) << line;
        EXPECT_EQ(event["session"], id) << line;
    }
    EXPECT_EQ(nlohmann::json::parse(lines.back())["type"], "SessionEnded");

    // The list: ended, resumable, with its five calls.
    const RunResult listed = log({"--json"});
    ASSERT_EQ(listed.exit_code, 0) << listed.describe();
    const auto list = nlohmann::json::parse(listed.out, nullptr, false);
    ASSERT_TRUE(list.is_array()) << listed.describe();
    ASSERT_EQ(list.size(), 1U) << listed.describe();
    EXPECT_EQ(list[0]["id"], id);
    EXPECT_EQ(list[0]["workspace"], workspace_real_);
    EXPECT_EQ(list[0]["calls"], 5);
    EXPECT_EQ(list[0]["running"], false);
    EXPECT_EQ(list[0]["resumable"], true);
    EXPECT_EQ(list[0]["mcp_session"], nullptr) << "stdio has no MCP session id";
    const RunResult table = log({});
    ASSERT_EQ(table.exit_code, 0) << table.describe();
    EXPECT_THAT(table.out, HasSubstr(id + "  -       -"));
    EXPECT_THAT(table.out, HasSubstr("  5      resumable\n"));

    // The timeline itself, pinned (last: a user who cannot read the source tree skips it).
    // As expect_golden (tests/testing/golden.h) compares: STOCKADE_UPDATE_GOLDEN=1 rewrites it.
    const std::string golden = (source_root() / "tests/golden/cli/log_timeline.txt").string();
    const std::string timeline = normalized(shown.out);
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read once
    if (const char* update = std::getenv("STOCKADE_UPDATE_GOLDEN");
        update != nullptr && *update == '1') {
        std::filesystem::create_directories(std::filesystem::path(golden).parent_path());
        std::ofstream(golden, std::ios::binary | std::ios::trunc) << timeline;
    } else if (::access(golden.c_str(), R_OK) != 0 && !running_as_root()) {
        GTEST_SKIP() << "this user cannot read the source tree's golden file " << golden;
    } else {
        EXPECT_EQ(read_file_text(golden).value_or("(missing: run with STOCKADE_UPDATE_GOLDEN=1)"),
                  timeline)
            << "golden file " << golden;
    }
}

TEST_F(LogTest, FollowPrintsWhatIsAppendedAndStopsWhenTheSessionEnds) {
    ServeProcess serve(workspace_.path(), state_.path());
    ASSERT_TRUE(serve.initialize().contains("result"));
    EXPECT_THAT(text_of(serve.call("read", {{"file_path", "a.txt"}})), HasSubstr("one"));
    const std::string id = only_session();
    const std::string out = state_.sub("follow.txt");
    // Its output goes to a file, read while it runs.
    RunConfig config;
    config.timeout = std::chrono::seconds(60);
    ChildProcess follow = ChildProcess::start(
        {"/bin/sh", "-c", R"(exec "$0" log --follow --state-dir "$1" "$2" > "$3")", stockade_path(),
         state_.path(), id, out},
        config);
    ASSERT_TRUE(follow.running());
    auto wait_for = [&](const std::string& text) {
        for (int i = 0; i < 200; ++i) {
            if (read_file_text(out).value_or("").find(text) != std::string::npos) {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    };
    ASSERT_TRUE(wait_for("#1 read: ok")) << read_file_text(out).value_or("(nothing)");
    EXPECT_THAT(read_file_text(out).value_or(""), Not(HasSubstr("#2")));

    EXPECT_THAT(text_of(serve.call("bash", {{"command", "echo appended"}})), HasSubstr("appended"));
    ASSERT_TRUE(wait_for("#2 bash: ok")) << read_file_text(out).value_or("(nothing)");
    EXPECT_TRUE(follow.running()) << "the session still runs";

    serve.close_input();
    ASSERT_EQ(serve.wait_exit(std::chrono::seconds(20)), 0);
    const RunResult ended = follow.wait();
    EXPECT_EQ(ended.exit_code, 0) << ended.describe();
    EXPECT_FALSE(ended.timed_out) << ended.describe();
    const std::string text = read_file_text(out).value_or("");
    EXPECT_THAT(text, HasSubstr("#2 bash echo appended -> allow"));
    EXPECT_THAT(text, HasSubstr("  session ended\n"));
    EXPECT_THAT(text, HasSubstr(": 2 calls, ended; stockade serve --resume " + id));
}

TEST_F(LogTest, BadInputSaysWhatToDoNext) {
    {
        ServeProcess serve(workspace_.path(), state_.path());
        ASSERT_TRUE(serve.initialize().contains("result"));
        serve.close_input();
        ASSERT_EQ(serve.wait_exit(std::chrono::seconds(20)), 0);
    }
    const std::string id = only_session();
    const RunResult unknown = log({"s-ffffffffffff"});
    EXPECT_EQ(unknown.exit_code, 1) << unknown.describe();
    EXPECT_THAT(unknown.err, HasSubstr("no session \"s-ffffffffffff\""));
    EXPECT_THAT(unknown.err, HasSubstr("the most recent there: " + id));
    EXPECT_THAT(unknown.err, HasSubstr("Run `stockade log` to list them all"));

    const RunResult since = log({id, "--since", "yesterday"});
    EXPECT_EQ(since.exit_code, 2) << since.describe();
    EXPECT_THAT(since.err, HasSubstr("give a duration back from now (90s, 10m"));

    const RunResult missing = run_stockade({"log", "--state-dir", state_.sub("none")});
    EXPECT_EQ(missing.exit_code, 1) << missing.describe();
    EXPECT_THAT(missing.err, HasSubstr("no state directory"));

    // A torn last line (a crash mid-append) is skipped and counted, never fatal.
    const std::string events = state_.sub("sessions/" + id + "/events.jsonl");
    ASSERT_EQ(
        ::truncate(events.c_str(), static_cast<off_t>(std::filesystem::file_size(events) - 5)), 0);
    const RunResult torn = log({id});
    EXPECT_EQ(torn.exit_code, 0) << torn.describe();
    EXPECT_THAT(torn.err, HasSubstr("skipped 1 line"));
    EXPECT_THAT(torn.out, Not(HasSubstr("session ended")));
}

}  // namespace
}  // namespace stockade::testing
