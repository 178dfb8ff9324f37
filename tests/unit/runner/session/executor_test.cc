// The path of one call (runner/session/executor.h), stage by stage: with literals for stages 1–3
// (the tool, its arguments, the policy) and the whole path over a workspace of temporary
// directories (tests/unit/tools/tool_harness.h) and the recording event sink.
#include "runner/session/executor.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/recording_sink.h"
#include "tests/unit/tools/tool_harness.h"

namespace stockade::runner {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using tools::testing::kWorkspaceDisplay;

policy::Policy load(const std::string& permissions, policy::Mode mode = policy::Mode::kLocal) {
    const std::vector<policy::SettingsSource> sources = {
        {.layer = policy::Layer::kCommandLine,
         .origin = "command line",
         .text = R"({"permissions": )" + permissions + "}"}};
    auto loaded = policy::Policy::load(
        sources, policy::PolicyOptions{.mode = mode, .workspace_root = kWorkspaceDisplay});
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().message);
    return std::move(loaded).value();
}

class ExecutorTest : public ::testing::Test {
protected:
    // An executor over the harness's workspace, with `policy`.
    Executor& executor(const std::string& permissions = "{}",
                       policy::Mode mode = policy::Mode::kLocal, bool fallback_allow = false,
                       std::string first_note = {}) {
        policy_ = std::make_unique<policy::Policy>(load(permissions, mode));
        executor_ = std::make_unique<Executor>(
            ExecutorParts{.tools = registry_,
                          .policy = *policy_,
                          .grants = grants_,
                          .events = events_,
                          .context = h_.ctx,
                          .where = {.workspace_root = kWorkspaceDisplay, .private_loopback = true},
                          .host_network = false,
                          .ask_fallback_allow = fallback_allow,
                          .session_note = [this] { return std::exchange(note_, {}); },
                          .first_note = std::move(first_note)});
        return *executor_;
    }
    ExecutedCall run(const std::string& tool, const nlohmann::json& args,
                     mcp::ElicitFn elicit = {}) {
        mcp::CallInfo info;
        info.request_id = "7";
        info.progress = [](double, std::optional<double>, std::string) {
        };
        info.elicit = std::move(elicit);
        return executor_->run(tool, args, info, "7-" + std::to_string(++calls_));
    }

    tools::testing::ToolHarness h_;
    tools::ToolRegistry registry_;
    SessionGrants grants_;
    stockade::testing::RecordingSink events_;
    std::unique_ptr<policy::Policy> policy_;
    std::unique_ptr<Executor> executor_;
    std::string note_;
    int calls_ = 0;
};

TEST_F(ExecutorTest, AnUnknownToolIsNoCallAtAll) {
    executor();
    const ExecutedCall done = run("webfetch", {{"url", "x"}});
    EXPECT_TRUE(done.unknown_tool);
    EXPECT_TRUE(events_.types().empty());
}

TEST_F(ExecutorTest, ArgumentsThatDoNotFitStopAtStageOneWithRepairProse) {
    executor(R"json({"deny": ["Read"]})json");
    const ExecutedCall done = run("read", {{"file_path", 3}});
    EXPECT_TRUE(done.result.is_error);
    EXPECT_THAT(done.result.content,
                HasSubstr("Invalid input for tool \"read\": parameter \"file_path\" must be a "
                          "string"));
    EXPECT_THAT(events_.types(), ElementsAre("ToolRequested", "ToolFailed"))
        << "no decision for a call that never parsed";
}

TEST_F(ExecutorTest, ADenyNeverReachesTheTool) {
    h_.ws.put(".env", "TOKEN=secret\n");
    executor(R"json({"deny": ["Read(./.env)"]})json");
    const int stats_before = h_.ws.stat_calls;
    const ExecutedCall done = run("read", {{"file_path", ".env"}});
    EXPECT_TRUE(done.result.is_error);
    EXPECT_THAT(done.result.content, HasSubstr("denied by the rule Read(./.env) (command line:1)"));
    EXPECT_THAT(done.result.content, Not(HasSubstr("secret")));
    EXPECT_EQ(h_.ws.stat_calls, stats_before) << "the workspace was not touched";
    EXPECT_THAT(events_.types(), ElementsAre("ToolRequested", "ToolDecided", "ToolFailed"));
    const auto decided = events_.events()[1];
    EXPECT_EQ(decided.fields["decision"], "deny");
    EXPECT_EQ(decided.fields["rule"], "Read(./.env)");
    EXPECT_TRUE(decided.durable) << "a denial is on disk before the call returns";
    EXPECT_EQ(done.result.metadata["policy"]["rule"], "Read(./.env)");
}

TEST_F(ExecutorTest, AnAskNobodyCanAnswerFollowsTheFallback) {
    executor(R"json({"ask": ["Bash(make:*)"]})json");
    EXPECT_THAT(run("bash", {{"command", "make"}}).result.content,
                HasSubstr("needs the user's approval"));
    executor(R"json({"ask": ["Read(./notes.md)"]})json", policy::Mode::kLocal,
             /*fallback_allow=*/true);
    h_.ws.put("notes.md", "hello\n");
    const ExecutedCall done = run("read", {{"file_path", "notes.md"}});
    EXPECT_FALSE(done.result.is_error) << done.result.content;
    EXPECT_THAT(done.result.content, HasSubstr("hello"));
}

TEST_F(ExecutorTest, AGrantForTheSessionIsNotAskedAgain) {
    h_.ws.put("notes.md", "hello\n");
    executor(R"json({"ask": ["Read(./notes.md)"]})json");
    int asked = 0;
    auto elicit = [&](const mcp::ElicitRequest& request) -> Result<mcp::ElicitResponse> {
        ++asked;
        EXPECT_THAT(request.message, HasSubstr("notes.md"));
        return mcp::ElicitResponse{.action = "accept", .content = {{"decision", "session"}}};
    };
    EXPECT_FALSE(run("read", {{"file_path", "notes.md"}}, elicit).result.is_error);
    EXPECT_FALSE(run("read", {{"file_path", "notes.md"}}, elicit).result.is_error);
    EXPECT_EQ(asked, 1);
    int asked_types = 0;
    for (const std::string& type : events_.types()) {
        asked_types += type == "ToolAsked" ? 1 : 0;
    }
    EXPECT_EQ(asked_types, 1);
}

TEST_F(ExecutorTest, TheWholePathRunsAndRecordsInOrder) {
    h_.ws.put("src/a.txt", "alpha\n");
    executor();
    note_ = "Note: the session's sandbox worker was killed by SIGKILL.";
    const ExecutedCall done = run("read", {{"file_path", "src/a.txt"}});
    EXPECT_FALSE(done.result.is_error);
    EXPECT_THAT(done.result.content, HasSubstr("1\u2192alpha"));
    EXPECT_TRUE(
        done.result.content.ends_with("\n\n" + std::string("Note: the session's sandbox "
                                                           "worker was killed by SIGKILL.")))
        << "the session's note comes last, once";
    EXPECT_TRUE(done.result.metadata.contains("duration_ms"));
    EXPECT_THAT(events_.types(),
                ElementsAre("ToolRequested", "ToolDecided", "ToolStarted", "ToolCompleted"));
    EXPECT_EQ(h_.events.log, (std::vector<std::string>{"read /work/proj/src/a.txt"}))
        << "the tool recorded its FileRead to the context's sink";
    EXPECT_FALSE(events_.events().back().durable) << "a read is not fsync'd";
    EXPECT_THAT(run("read", {{"file_path", "src/a.txt"}}).result.content,
                Not(HasSubstr("SIGKILL")));
}

TEST_F(ExecutorTest, TheSessionsFirstResultEndsWithItsFirstNoteWhateverTheCall) {
    h_.ws.put("src/a.txt", "alpha\n");
    executor(R"json({"deny": ["Read(./.env)"]})json", policy::Mode::kLocal, false,
             "Note: git tracks a file that the policy denies you.");
    note_ = "Note: the session's sandbox worker was killed by SIGKILL.";
    // Even a refusal: it is the first thing the model reads from this session.
    const ExecutedCall refused = run("read", {{"file_path", ".env"}});
    EXPECT_TRUE(refused.result.is_error);
    EXPECT_TRUE(refused.result.content.ends_with(
        "\n\nNote: git tracks a file that the policy denies you.\n\nNote: the session's sandbox "
        "worker was killed by SIGKILL."))
        << refused.result.content;
    for (int i = 0; i < 3; ++i) {
        EXPECT_THAT(run("read", {{"file_path", "src/a.txt"}}).result.content,
                    Not(HasSubstr("git tracks")))
            << "once";
    }
    // Calls at once (of arguments that stop at stage 1, which touches nothing shared): exactly
    // one of them carries it.
    Executor at_once(ExecutorParts{.tools = registry_,
                                   .policy = *policy_,
                                   .grants = grants_,
                                   .events = events_,
                                   .context = h_.ctx,
                                   .where = {.workspace_root = kWorkspaceDisplay},
                                   .first_note = "Note: once."});
    std::vector<std::string> contents(8);
    {
        std::vector<std::jthread> calls;
        for (size_t i = 0; i < contents.size(); ++i) {
            calls.emplace_back([&, i] {
                mcp::CallInfo info;
                info.request_id = std::to_string(i);
                contents[i] =
                    at_once.run("read", {{"file_path", 3}}, info, "c-" + std::to_string(i))
                        .result.content;
            });
        }
    }
    EXPECT_EQ(std::count_if(contents.begin(), contents.end(),
                            [](const std::string& c) { return c.ends_with("\n\nNote: once."); }),
              1);
}

TEST_F(ExecutorTest, AWriteCompletesDurably) {
    executor();
    EXPECT_FALSE(run("write", {{"file_path", "new.txt"}, {"content", "x\n"}}).result.is_error);
    EXPECT_EQ(events_.events().back().type, "ToolCompleted");
    EXPECT_TRUE(events_.events().back().durable);
}

// Durable is what may change a file, by the analysis the policy decides on: a command of
// builtins and reads cannot; one that runs a program or writes through a redirection may.
TEST_F(ExecutorTest, OnlyACommandThatMayChangeAFileCompletesDurably) {
    h_.ws.put("src/a.txt", "alpha\n");
    executor();
    const auto durable = [&](const std::string& command) {
        (void)run("bash", {{"command", command}});
        EXPECT_THAT(events_.events().back().type, AnyOf("ToolCompleted", "ToolFailed"));
        return events_.events().back().durable;
    };
    EXPECT_FALSE(durable("true"));
    EXPECT_FALSE(durable("cd src && test -f a.txt"));
    EXPECT_TRUE(durable("echo"));
    EXPECT_TRUE(durable("cat src/a.txt"));
    EXPECT_TRUE(durable("true > out.txt"));
    EXPECT_TRUE(durable("echo $(rm -rf src)"));
}

TEST_F(ExecutorTest, ARuleHoldsForAFileUnderAnyNameASymlinkGivesIt) {
    h_.ws.put("private/s.txt", "TOPSECRET\n");
    h_.ws.put("public/ok.txt", "fine\n");
    std::filesystem::create_directory_symlink(h_.ws.real(workspace::Root::kWorkspace, "private"),
                                              h_.ws.real(workspace::Root::kWorkspace, "pub"));
    executor(R"json({"deny": ["Read(./private/**)"]})json");
    const ExecutedCall through = run("read", {{"file_path", "pub/s.txt"}});
    EXPECT_TRUE(through.result.is_error);
    EXPECT_THAT(through.result.content, HasSubstr("Read(./private/**)"));
    const ExecutedCall search = run("grep", {{"pattern", "TOPSECRET|fine"}});
    EXPECT_THAT(search.result.content, HasSubstr("public/ok.txt"));
    EXPECT_THAT(search.result.content, Not(HasSubstr("s.txt")));
    EXPECT_THAT(search.result.content, HasSubstr("not shown: the policy does not let you read"));
}

TEST_F(ExecutorTest, EveryResultIsInertRefusalsIncluded) {
    executor(R"json({"deny": ["Read(./x*)"]})json");
    const ExecutedCall done = run("read", {{"file_path", "x\x1b[2J.txt"}});
    EXPECT_TRUE(done.result.is_error);
    EXPECT_TRUE(tools::testing::is_inert(done.result.content)) << done.result.content;
}

}  // namespace
}  // namespace stockade::runner
