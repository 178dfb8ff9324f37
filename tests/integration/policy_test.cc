// The permission policy in real sessions: a Claude Code settings file used unchanged, deny
// rules that hold for bash (the analysis refuses, the sandbox masks what it cannot see), tools
// hidden as a whole, ci mode, and the policy CLI.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
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

// Kills the session's newest worker from outside; the next call starts a fresh one.
void restart_worker(const std::string& state) {
    const auto workers = worker_pids(state);
    ASSERT_FALSE(workers.empty());
    ASSERT_EQ(::kill(workers.back(), SIGKILL), 0);
    for (int i = 0; i < 100 && alive(workers.back()); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

TEST_F(PolicyTest, ADeniedFileCannotBeRenamedToANameTheNextWorkerWouldNotMask) {
    workspace_.write_file("config/secrets.txt", "DB_PASSWORD=rename-me-not\n");
    workspace_.write_file("config/app.ini", "[app]\n");
    serve({"--deny", "Read(./config/secrets.txt)"});
    // The parents of a masked file are pinned: neither they nor the file move.
    for (const char* command : {"mv config cfg2", "mv config/secrets.txt config/plain.txt",
                                "mv config/secrets.txt plain.txt"}) {
        auto moved = bash(std::string(command) + " && echo MOVED || echo refused");
        EXPECT_THAT(text_of(moved), HasSubstr("refused")) << command << "\n" << text_of(moved);
    }
    EXPECT_THAT(text_of(bash("echo 'x=1' >> config/app.ini && cat config/app.ini")),
                HasSubstr("x=1"))
        << "the directory itself stays writable";
    // A fresh worker (a crash, a kill, --resume) shows the secret under no name.
    restart_worker(state_.path());
    auto after = bash(
        "python3 -c \"import glob\nfor f in glob.glob('**/*', recursive=True):\n    try:\n"
        "        print(f, open(f).read())\n    except Exception as e:\n        print(f, e)\"");
    EXPECT_THAT(text_of(after), Not(HasSubstr("rename-me-not"))) << text_of(after);
    EXPECT_EQ(worker_pids(state_.path()).size(), 2U) << "a second worker served the call";
}

TEST_F(PolicyTest, ALaterWorkerMasksWhatTheRulesMatchThenNotWhatTheyMatchedAtTheStart) {
    serve({"--deny", "Read(**/*.pem)"});
    // Made after the session started (by the user, a build, a checkout): the first worker's
    // masks did not know it.
    workspace_.write_file("keys/late.pem", "LATE PRIVATE KEY\n");
    restart_worker(state_.path());
    auto read = bash("python3 -c \"print(open('keys/' + 'late.pem').read())\" 2>&1 | tail -1");
    EXPECT_THAT(text_of(read), Not(HasSubstr("LATE PRIVATE KEY"))) << text_of(read);
    EXPECT_THAT(text_of(read), HasSubstr("Permission denied"));
}

TEST_F(PolicyTest, TheFileToolsMatchRulesAgainstThePathASymlinkLeadsTo) {
    serve({"--deny", "Read(./private/**)", "--deny", "Edit(./locked/**)"});
    // Made after the start, so not masked: the rules must still hold for the file tools when a
    // symlink leads there under another name.
    workspace_.write_file("locked/k.txt", "keep\n");
    workspace_.write_file("private/s.txt", "TOPSECRET\n");
    for (const auto& [target, link] : std::vector<std::pair<std::string, std::string>>{
             {"private", "pub"}, {"locked", "open"}, {"private/s.txt", "s-link"}}) {
        ASSERT_EQ(::symlink(target.c_str(), workspace_.sub(link).c_str()), 0) << link;
    }
    for (const char* path : {"pub/s.txt", "s-link"}) {
        auto r = serve_->call("read", {{"file_path", path}});
        EXPECT_TRUE(r["result"].value("isError", false)) << path << r.dump();
        EXPECT_THAT(text_of(r), HasSubstr("Read(./private/**)")) << path;
        EXPECT_THAT(text_of(r), Not(HasSubstr("TOPSECRET"))) << path;
    }
    // A search shows none of what the rules deny, wherever it started.
    for (const auto& [tool, args] : std::vector<std::pair<std::string, nlohmann::json>>{
             {"grep", {{"pattern", "TOPSEC"}, {"path", "pub"}}},
             {"grep", {{"pattern", "TOPSEC"}}},
             {"glob", {{"pattern", "*.txt"}, {"path", "pub"}}},
             {"glob", {{"pattern", "**/s.t?t"}}}}) {
        auto r = serve_->call(tool, args);
        EXPECT_THAT(text_of(r), HasSubstr("not shown: the policy does not let you read"))
            << tool << " " << args << r.dump();
        EXPECT_THAT(text_of(r), Not(HasSubstr("s.txt"))) << tool << " " << args;
        EXPECT_THAT(text_of(r), Not(HasSubstr("TOPSECRET"))) << tool << " " << args;
    }
    auto write = serve_->call("write", {{"file_path", "open/k.txt"}, {"content", "changed\n"}});
    EXPECT_TRUE(write["result"].value("isError", false)) << write.dump();
    EXPECT_THAT(text_of(write), HasSubstr("Edit(./locked/**)"));
    EXPECT_EQ(read_file_text(workspace_.sub("locked/k.txt")).value_or(""), "keep\n");
    // An ordinary symlink inside the workspace still works.
    workspace_.write_file("src/real.txt", "plain text\n");
    ASSERT_EQ(::symlink("src/real.txt", workspace_.sub("alias.txt").c_str()), 0);
    EXPECT_THAT(text_of(serve_->call("read", {{"file_path", "alias.txt"}})),
                HasSubstr("plain text"));
}

// Makes `dir` a repository with everything in it committed.
void commit_everything_in(const std::string& dir) {
    const std::string git = "git -C '" + dir + "' -c user.name=t -c user.email=t@t ";
    ASSERT_EQ(
        std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()),
        0);
}

// The workspace's .env and secrets/key.pem committed: the masks hide the files, not what git
// keeps of them.
void commit_everything(const TempDir& workspace) {
    commit_everything_in(workspace.path());
}

TEST_F(PolicyTest, ADeniedFileThatGitTracksIsCalledOutEverywhereThePolicyIsLookedAt) {
    workspace_.write_file(".stockade/settings.json",
                          R"json({"permissions": {"deny": ["Read(./.env)"]}})json");
    commit_everything(workspace_);
    RunConfig in_ws;
    in_ws.cwd = workspace_.path();
    RunResult check =
        run_stockade({"policy", "check", workspace_.sub(".claude/settings.json")}, in_ws);
    EXPECT_EQ(check.exit_code, 0) << check.describe();
    EXPECT_THAT(check.out, HasSubstr("warning: Read(./.env)"));
    EXPECT_THAT(check.out, HasSubstr("git show HEAD:.env"));
    RunResult explained =
        run_stockade({"policy", "explain", "--no-user-settings", "--policy",
                      workspace_.sub(".claude/settings.json"), "read", R"({"file_path": ".env"})"},
                     in_ws);
    EXPECT_EQ(explained.exit_code, 1) << explained.describe();
    EXPECT_THAT(explained.out,
                HasSubstr("warning: Read(./.env) (" + workspace_.sub(".claude/settings.json") +
                          ":7) denies 1 file that git tracks (.env): the sandbox "
                          "hides the file, but the rule cannot hide its committed "
                          "contents"));
    EXPECT_THAT(explained.out, HasSubstr("deny Read(./.git/**) as well"));
    RunResult as_json = run_stockade({"policy", "explain", "--no-user-settings", "--json", "--deny",
                                      "Read(./secrets/**)", "bash", R"({"command": "ls"})"},
                                     in_ws);
    const auto json = nlohmann::json::parse(as_json.out, nullptr, false);
    ASSERT_TRUE(json.is_object()) << as_json.describe();
    ASSERT_EQ(json["git_tracked_denials"].size(), 2U) << json.dump(2);
    EXPECT_EQ(json["git_tracked_denials"][1]["rule"], "Read(./secrets/**)");
    EXPECT_EQ(json["git_tracked_denials"][1]["first"], nlohmann::json({"secrets/key.pem"}));
    // doctor, here: the settings files a session here reads (the project's denies .env).
    RunResult doctor = run_stockade({"doctor"}, in_ws);
    EXPECT_THAT(doctor.out, HasSubstr("policy: warning: Read(./.env) (" +
                                      workspace_.sub(".stockade/settings.json") +
                                      ":1) denies 1 file that git tracks (.env)"))
        << doctor.describe();

    // doctor --tenants: in a project beneath a tenant's root, with the tenant's rules.
    TempDir root("stockade-policy-tenant");
    root.write_file("proj/.env", "API_TOKEN=tenant-secret\n");
    root.write_file("proj/README.md", "a project\n");
    root.make_dir("plain");
    commit_everything_in(root.sub("proj"));
    const std::string tenants =
        root.write_file("tenants.json", nlohmann::json({{"tenants",
                                                         {{{"name", "acme"},
                                                           {"token_sha256", {std::string(64, 'a')}},
                                                           {"workspace_root", root.path()},
                                                           {"deny", {"Read(./.env)"}}}}}})
                                            .dump());
    RunResult tenant_doctor = run_stockade({"doctor", "--tenants", tenants});
    EXPECT_THAT(tenant_doctor.out, HasSubstr("in proj: Read(./.env) ("))
        << tenant_doctor.describe();
    EXPECT_THAT(tenant_doctor.out, HasSubstr("denies 1 file that git tracks (.env)"))
        << tenant_doctor.describe();

    serve({"--policy", workspace_.sub(".claude/settings.json")});
    std::string events;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state_.path())) {
        if (entry.path().filename() == "events.jsonl") {
            events += read_file_text(entry.path()).value_or("");
        }
    }
    EXPECT_THAT(events, HasSubstr("denies 1 file that git tracks (.env)"));
    EXPECT_THAT(events, HasSubstr("denies 1 file that git tracks (secrets/key.pem)"));
    // The model is told with the first result of its session, once: the mask hides the file,
    // not what git keeps of it.
    const std::string first = text_of(serve_->call("read", {{"file_path", "src/app.txt"}}));
    EXPECT_THAT(first, HasSubstr("ordinary file"));
    EXPECT_TRUE(first.ends_with(
        "\n\nNote: git tracks 2 files that the policy denies you (.env, secrets/key.pem; rules "
        "Read(./.env), Read(./secrets/**)). The sandbox hides them, but the rules cannot hide "
        "their committed contents, which git prints from the repository (git show HEAD:.env): "
        "they are off limits all the same, so do not read them through git. To make the rules "
        "hold, the user can take the files out of the repository's history, or deny "
        "Read(./.git/**) as well."))
        << first;
    EXPECT_THAT(first, Not(HasSubstr(workspace_.sub(".claude"))))
        << "no origin (a host path) reaches the model";
    // Which is no idle warning: git still prints the masked file.
    const std::string shown = text_of(bash("git show HEAD:.env"));
    EXPECT_THAT(shown, HasSubstr("super-secret-value")) << shown;
    EXPECT_THAT(shown, Not(HasSubstr("git tracks"))) << "once";
}

TEST_F(PolicyTest, DenyingTheRepositoryToMakesTheRuleHoldAndNothingIsSaid) {
    commit_everything(workspace_);
    RunConfig in_ws;
    in_ws.cwd = workspace_.path();
    RunResult explained = run_stockade({"policy", "explain", "--no-user-settings", "--policy",
                                        workspace_.sub(".claude/settings.json"), "--deny",
                                        "Read(./.git/**)", "read", R"({"file_path": ".env"})"},
                                       in_ws);
    EXPECT_EQ(explained.exit_code, 1) << explained.describe();
    EXPECT_THAT(explained.out, Not(HasSubstr("git tracks"))) << explained.describe();
    serve({"--policy", workspace_.sub(".claude/settings.json"), "--deny", "Read(./.git/**)"});
    const std::string shown = text_of(bash("git show HEAD:.env 2>&1"));
    EXPECT_THAT(shown, Not(HasSubstr("super-secret"))) << shown;
    EXPECT_THAT(shown, HasSubstr("not a git repository")) << "the repository is masked" << shown;
    EXPECT_THAT(shown, Not(HasSubstr("git tracks"))) << shown;
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

// The rules allow a name; the proxy's address check would still refuse it where it resolves to
// loopback, and the explanation says so with the pin that would allow it. A pinned name is
// reached wherever its pin leads.
TEST_F(PolicyTest, ExplainNetworkRunsTheProxysAddressCheck) {
    RunConfig in_ws;
    in_ws.cwd = workspace_.path();
    RunResult refused = run_stockade({"policy", "explain", "--no-user-settings", "--allow",
                                      "network.access(localhost)", "network", "localhost:8080"},
                                     in_ws);
    EXPECT_EQ(refused.exit_code, 1) << refused.describe();
    EXPECT_THAT(refused.out, HasSubstr("network localhost:8080: allow"));
    EXPECT_THAT(refused.out, HasSubstr("  address: localhost resolves to a loopback address ("));
    EXPECT_THAT(refused.out, HasSubstr("the proxy refuses it"));
    EXPECT_THAT(refused.out, HasSubstr("  pin:     if it is meant to be reached, the user can "
                                       "pin it: --resolve localhost="));
    RunResult as_json =
        run_stockade({"policy", "explain", "--no-user-settings", "--json", "--allow",
                      "network.access(localhost)", "network", "localhost:8080"},
                     in_ws);
    const auto json = nlohmann::json::parse(as_json.out, nullptr, false);
    ASSERT_TRUE(json.is_object()) << as_json.describe();
    EXPECT_EQ(json["address"]["proxy"], "refuses") << json.dump(2);

    workspace_.write_file(
        "pinned.json", R"json({"sandbox": {"network": {"resolve": ["localhost=127.0.0.1"]}}})json");
    RunResult pinned = run_stockade(
        {"policy", "explain", "--no-user-settings", "--policy", workspace_.sub("pinned.json"),
         "--allow", "network.access(localhost)", "network", "localhost:8080"},
        in_ws);
    EXPECT_EQ(pinned.exit_code, 0) << pinned.describe();
    EXPECT_THAT(pinned.out, HasSubstr("  address: pinned to 127.0.0.1 by "));

    // Denied by the rules: no address check (the rules already refuse it).
    RunResult denied = run_stockade({"policy", "explain", "--no-user-settings", "--deny",
                                     "network.access(localhost)", "network", "localhost:8080"},
                                    in_ws);
    EXPECT_EQ(denied.exit_code, 1) << denied.describe();
    EXPECT_THAT(denied.out, Not(HasSubstr("address:")));
}

}  // namespace
}  // namespace stockade::testing
