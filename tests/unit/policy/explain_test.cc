#include "policy/explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/bash_analysis.h"
#include "policy/requests.h"
#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::IsOk;

const RequestContext kCtx{.workspace_root = "/ws", .cwd = "", .home = "/home/u"};

// What bash's capabilities() and warnings() give for `command` (tools/bash_tool.cc).
Explanation explain_bash(const Policy& p, const std::string& command) {
    return explain_call(p, "bash", bash_requests(command, kCtx, "bash"),
                        destructive_warnings(command));
}

Policy policy() {
    const std::vector<SettingsSource> sources = {
        SettingsSource{.layer = Layer::kProject,
                       .origin = "/ws/.stockade/settings.json",
                       .text = R"json({"permissions": {
  "allow": ["Bash(npm test:*)"],
  "deny": ["Bash(curl:*)"]
}})json"}};
    auto loaded = Policy::load(sources, PolicyOptions{.workspace_root = "/ws", .home = "/home/u"});
    EXPECT_THAT(loaded, IsOk());
    return std::move(loaded).value();
}

TEST(ExplainTest, JsonNamesTheDecidingRuleAndEveryRequest) {
    const Explanation explanation = explain_bash(policy(), "npm test && curl https://x.io");
    const json out = explain_json(explanation);
    EXPECT_EQ(out["tool"], "bash");
    EXPECT_EQ(out["decision"], "deny");
    EXPECT_EQ(out["preset"], "workspace-write");
    EXPECT_EQ(out["mode"], "local");
    EXPECT_EQ(out["hidden"], false);
    EXPECT_EQ(out["deciding_request"], 1);
    EXPECT_EQ(out["rule"], "Bash(curl:*)");
    EXPECT_EQ(out["origin"], "/ws/.stockade/settings.json:3");
    ASSERT_EQ(out["requests"].size(), 3U);
    EXPECT_EQ(out["requests"][0], (json{{"kind", "process.execute"},
                                        {"tool", "bash"},
                                        {"command", "npm test"},
                                        {"decision", "allow"},
                                        {"before_mode", "allow"},
                                        {"rule", "Bash(npm test:*)"},
                                        {"origin", "/ws/.stockade/settings.json:2"},
                                        {"layer", "project"},
                                        {"reason",
                                         "matched allow rule \"Bash(npm test:*)\" "
                                         "(/ws/.stockade/settings.json:2)"}}));
    EXPECT_EQ(out["requests"][2]["kind"], "network.access");
    EXPECT_EQ(out["requests"][2]["host"], "x.io");
    EXPECT_EQ(out["requests"][2]["derived_because"], "`curl` reaches the network");
    EXPECT_EQ(out["requests"][2]["decision"], "ask");
    EXPECT_EQ(out["warnings"], json::array());
}

TEST(ExplainTest, TextIsReadable) {
    const Explanation explanation = explain_bash(policy(), "curl https://x.io && rm -rf build");
    const std::string text = explain_text(explanation);
    EXPECT_THAT(text, HasSubstr("bash: deny (preset workspace-write, mode local)\n"));
    EXPECT_THAT(text, HasSubstr("[1] deny  process.execute curl https://x.io  <- decides\n"));
    EXPECT_THAT(text, HasSubstr("matched deny rule \"Bash(curl:*)\" "
                                "(/ws/.stockade/settings.json:3)"));
    EXPECT_THAT(text, HasSubstr("requested because `curl` reaches the network"));
    EXPECT_THAT(text, HasSubstr("warning: may force-remove files recursively (rm -rf)"));
}

TEST(ExplainTest, FileToolsAndHiddenTools) {
    const std::vector<SettingsSource> sources = {
        SettingsSource{.layer = Layer::kManaged,
                       .origin = "/etc/stockade/managed.json",
                       .text = R"json({"permissions": {"deny": ["Read", "Bash"]}})json"}};
    auto loaded = Policy::load(sources, PolicyOptions{.workspace_root = "/ws"});
    ASSERT_THAT(loaded, IsOk());
    const std::vector<CapabilityRequest> grep = {file_read_request("grep", "", kCtx, true)};
    const json out = explain_json(explain_call(*loaded, "grep", grep, {}));
    EXPECT_EQ(out["decision"], "deny");
    EXPECT_EQ(out["hidden"], true);
    EXPECT_EQ(out["hidden_reason"],
              "denied as a whole by rule \"Read\" (/etc/stockade/managed.json:1)");
    EXPECT_EQ(out["requests"][0]["path"], "/ws");
    EXPECT_EQ(out["requests"][0]["layer"], "managed");
}

TEST(DescribeRequestTest, NamesWhatTheRequestIsAbout) {
    EXPECT_EQ(describe_request({.kind = CapabilityKind::kNetworkAccess}), "(host not known)");
    EXPECT_EQ(describe_request({.kind = CapabilityKind::kGitModify, .subcommand = "push"}),
              "git push");
    EXPECT_EQ(
        describe_request({.kind = CapabilityKind::kTool, .tool = "process", .command = "list"}),
        "process list");
}

}  // namespace
}  // namespace stockade::policy
