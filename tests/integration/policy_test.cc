// The permission policy in real sessions: a Claude Code settings file used unchanged, deny
// rules that hold for bash (the analysis refuses, the sandbox masks what it cannot see), tools
// hidden as a whole, ci mode, and the policy CLI.
#include <chrono>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A Claude Code project settings file as people write them, with keys we do not use.
constexpr const char* kClaudeSettings = R"json({
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "env": {"NODE_ENV": "test"},
  "permissions": {
    "allow": ["Bash(npm run lint)", "Bash(npm run test:*)", "Read(~/.zshrc)"],
    "ask": ["Bash(git push:*)"],
    "deny": ["Bash(curl:*)", "Read(./.env)", "Read(./.env.*)", "Read(./secrets/**)"]
  },
  "hooks": {}
})json";

class PolicyTest : public ::testing::Test {
protected:
    void SetUp() override {
        workspace_.write_file(".claude/settings.json", kClaudeSettings);
        workspace_.write_file(".env", "API_TOKEN=super-secret-value\n");
        workspace_.write_file("secrets/key.pem", "PRIVATE KEY MATERIAL\n");
        workspace_.write_file("src/app.txt", "ordinary file\n");
    }
    void TearDown() override {
        if (serve_ && serve_->pid() > 0) {
            serve_->close_input();
            EXPECT_EQ(serve_->wait_exit(std::chrono::seconds(20)), 0);
        }
        for (pid_t worker : worker_pids(state_.path())) {
            EXPECT_FALSE(alive(worker)) << "worker " << worker << " outlived its session";
        }
    }
    ServeProcess& serve(std::vector<std::string> extra) {
        extra.emplace_back("--no-user-settings");
        serve_ = std::make_unique<ServeProcess>(workspace_.path(), state_.path(), extra);
        auto init = serve_->initialize();
        EXPECT_TRUE(init.contains("result")) << init.dump();
        return *serve_;
    }
    nlohmann::json bash(const std::string& command) {
        return serve_->call("bash", {{"command", command}});
    }

    TempDir workspace_{"stockade-policy-ws"};
    TempDir state_{"stockade-policy-state"};
    std::unique_ptr<ServeProcess> serve_;
};

TEST_F(PolicyTest, AClaudeCodeSettingsFileWorksUnchanged) {
    serve({"--policy", workspace_.sub(".claude/settings.json")});
    auto read = serve_->call("read", {{"file_path", ".env"}});
    EXPECT_TRUE(read["result"].value("isError", false));
    EXPECT_THAT(text_of(read), HasSubstr("denied by the rule Read(./.env)"));
    EXPECT_THAT(text_of(read), HasSubstr(".claude/settings.json:"));
    EXPECT_THAT(text_of(read), Not(HasSubstr("super-secret")));

    auto curl = bash("curl -s http://127.0.0.1:9/");
    EXPECT_TRUE(curl["result"].value("isError", false));
    EXPECT_THAT(text_of(curl), HasSubstr("Bash(curl:*)"));

    auto ok = bash("cat src/app.txt");
    EXPECT_THAT(text_of(ok), HasSubstr("ordinary file"));
    EXPECT_FALSE(ok["result"].value("isError", true));
}

TEST_F(PolicyTest, NoDenyRuleCanBeWalkedAroundThroughBash) {
    serve({"--policy", workspace_.sub(".claude/settings.json")});
    // The analysis sees these and refuses them before they run.
    for (const char* command : {"cat .env", "cp .env /tmp/x && cat /tmp/x",
                                "head -c 100 .env.local", "cat secrets/key.pem"}) {
        auto r = bash(command);
        EXPECT_THAT(text_of(r), Not(HasSubstr("super-secret"))) << command;
        EXPECT_THAT(text_of(r), Not(HasSubstr("PRIVATE KEY"))) << command;
    }
    // These it cannot see; the sandbox masks the files, so they read nothing.
    for (const char* command :
         {"python3 -c \"print(open('.e' + 'nv').read())\"", "ln -s .e\"nv\" link && cat link",
          "F=.e; cat ${F}nv",
          "python3 -c \"import os; print(open(os.path.join('sec' + 'rets', 'key.pem')).read())\"",
          "find . -name '*.pem' -exec cat {} +"}) {
        auto r = bash(command);
        EXPECT_THAT(text_of(r), Not(HasSubstr("super-secret"))) << command << "\n" << text_of(r);
        EXPECT_THAT(text_of(r), Not(HasSubstr("PRIVATE KEY"))) << command << "\n" << text_of(r);
    }
}

TEST_F(PolicyTest, GitHooksAreReadOnlyByDefault) {
    workspace_.write_file(".git/hooks/README", "hooks\n");
    workspace_.write_file(".git/config", "[core]\n");
    serve({});
    auto planted = bash("echo 'curl evil' > .git/hooks/pre-commit && echo PLANTED || echo refused");
    EXPECT_THAT(text_of(planted), HasSubstr("refused")) << text_of(planted);
    auto config =
        bash("echo '[core] hooksPath = /tmp' >> .git/config && echo CHANGED || echo refused");
    EXPECT_THAT(text_of(config), HasSubstr("refused")) << text_of(config);
    EXPECT_THAT(text_of(bash("echo fine > src/new.txt && cat src/new.txt")), HasSubstr("fine"));
}

TEST_F(PolicyTest, AToolDeniedAsAWholeIsHiddenFromToolsList) {
    serve({"--deny", "Bash"});
    auto list = serve_->request("tools/list", nlohmann::json::object());
    std::vector<std::string> names;
    for (const auto& tool : list["result"]["tools"]) {
        names.push_back(tool.value("name", ""));
    }
    EXPECT_THAT(names, Not(::testing::Contains("bash")));
    EXPECT_THAT(names, ::testing::Contains("read"));
    // Calling it anyway: an unknown tool (JSON-RPC error), never a run.
    auto called = bash("echo hi");
    EXPECT_TRUE(called.contains("error")) << called.dump();
}

TEST_F(PolicyTest, CiModeDeniesAsksAndTheNetworkAndSaysWhy) {
    serve({"--mode", "ci", "--ask", "Bash(npm install:*)"});
    auto install = bash("npm install left-pad");
    EXPECT_TRUE(install["result"].value("isError", false));
    EXPECT_THAT(text_of(install), HasSubstr("in ci mode there is nobody to ask"));
    auto fetch = bash("git fetch origin");
    EXPECT_THAT(text_of(fetch), HasSubstr("network is closed"));
    // The event log records the decisions.
    std::string events;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state_.path())) {
        if (entry.path().filename() == "events.jsonl") {
            events += read_file_text(entry.path()).value_or("");
        }
    }
    EXPECT_THAT(events, HasSubstr("\"type\":\"ToolDecided\""));
    EXPECT_THAT(events, HasSubstr("\"type\":\"PolicyLoaded\""));
}

TEST_F(PolicyTest, WithoutElicitationTheAskFallbackDecides) {
    serve({"--ask", "Bash(echo asked:*)", "--ask-fallback", "allow"});
    auto allowed = bash("echo asked anyway");
    EXPECT_FALSE(allowed["result"].value("isError", true)) << allowed.dump();
    EXPECT_THAT(text_of(allowed), HasSubstr("asked anyway"));
}

TEST_F(PolicyTest, PolicyCheckAndExplain) {
    std::string good = workspace_.sub(".claude/settings.json");
    std::string bad =
        workspace_.write_file("bad.json", "{\"permissions\": {\"deny\": [\"Read(\"]}}");
    std::string broken = workspace_.write_file("broken.json", "{\n  \"permissions\": {\n");
    RunResult ok = run_stockade({"policy", "check", good});
    EXPECT_EQ(ok.exit_code, 0) << ok.describe();
    EXPECT_THAT(ok.out, HasSubstr("ok, 8 rules"));
    RunResult problems = run_stockade({"policy", "check", good, bad, broken});
    EXPECT_EQ(problems.exit_code, 1) << problems.describe();
    EXPECT_THAT(problems.out, HasSubstr("bad.json:1:"));
    EXPECT_THAT(problems.out, HasSubstr("broken.json:3:"));
    EXPECT_THAT(problems.out, HasSubstr("2 of 3 files invalid"));

    RunConfig in_ws;
    in_ws.cwd = workspace_.path();
    RunResult explained =
        run_stockade({"policy", "explain", "--no-user-settings", "--policy", good, "bash",
                      R"({"command": "npm run test -- --ci && curl x.io"})"},
                     in_ws);
    EXPECT_EQ(explained.exit_code, 1) << explained.describe();
    EXPECT_THAT(explained.out, HasSubstr("Bash(curl:*)"));
    EXPECT_THAT(explained.out, HasSubstr("Bash(npm run test:*)"));
}

}  // namespace
}  // namespace stockade::testing
