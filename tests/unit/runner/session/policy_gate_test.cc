// The policy gate's model-facing texts, pinned by golden files (tests/golden/policy/), over
// decisions made by a real Policy from settings text.
#include "runner/session/policy_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/policy.h"
#include "tests/testing/golden.h"
#include "tools/tool.h"

namespace stockade::runner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const policy::RequestContext kCtx{.workspace_root = "/ws", .cwd = "", .home = "/tmp"};

policy::Policy load(policy::Mode mode, policy::Preset preset = policy::Preset::kWorkspaceWrite) {
    const std::vector<policy::SettingsSource> sources = {
        policy::SettingsSource{.layer = policy::Layer::kProject,
                               .origin = "/ws/.stockade/settings.json",
                               .text = R"json({"permissions": {
  "allow": ["Bash(npm run test:*)"],
  "ask": ["Bash(npm install:*)"],
  "deny": ["Read(./.env)", "Bash(curl:*)"]
}})json",
                               .base_dir = {}}};
    auto loaded = policy::Policy::load(
        sources, policy::PolicyOptions{
                     .preset = preset, .mode = mode, .workspace_root = "/ws", .home = "/home/u"});
    EXPECT_TRUE(loaded.has_value()) << loaded.error().message;
    return std::move(loaded).value();
}

policy::CallDecision decide(const policy::Policy& p, std::string_view tool,
                            const nlohmann::json& args) {
    static const tools::ToolRegistry registry;
    auto call = registry.find(tool)->parse(args);
    EXPECT_TRUE(call.has_value());
    return p.evaluate((*call)->capabilities(kCtx));
}

TEST(PolicyGateTest, ADenyByRuleNamesTheRuleAndWhereItIsWritten) {
    auto p = load(policy::Mode::kLocal);
    auto d = decide(p, "bash", {{"command", "cat .env"}});
    ASSERT_EQ(d.decision, policy::Decision::kDeny);
    stockade::testing::expect_golden("policy", "deny_rule.txt",
                                     denial_text(d, p.preset(), p.mode(), false));
}

TEST(PolicyGateTest, ADenyByThePresetSuggestsARule) {
    auto p = load(policy::Mode::kLocal, policy::Preset::kReadOnly);
    auto d = decide(p, "write", {{"file_path", "/ws/notes.md"}, {"content", "x"}});
    ASSERT_EQ(d.decision, policy::Decision::kDeny);
    stockade::testing::expect_golden("policy", "deny_preset.txt",
                                     denial_text(d, p.preset(), p.mode(), false));
}

TEST(PolicyGateTest, InCiAnAskIsADenyThatSaysWhy) {
    auto p = load(policy::Mode::kCi);
    auto d = decide(p, "bash", {{"command", "npm install lodash"}});
    ASSERT_EQ(d.decision, policy::Decision::kDeny);
    stockade::testing::expect_golden("policy", "deny_ask_in_ci.txt",
                                     denial_text(d, p.preset(), p.mode(), false));
    auto net = decide(p, "bash", {{"command", "git fetch origin"}});
    ASSERT_EQ(net.decision, policy::Decision::kDeny);
    stockade::testing::expect_golden("policy", "deny_network_in_ci.txt",
                                     denial_text(net, p.preset(), p.mode(), false));
}

TEST(PolicyGateTest, AnAskWithoutElicitationAndADeclinedAsk) {
    auto p = load(policy::Mode::kLocal);
    auto d = decide(p, "bash", {{"command", "npm install lodash"}});
    ASSERT_EQ(d.decision, policy::Decision::kAsk);
    stockade::testing::expect_golden("policy", "ask_unavailable.txt",
                                     ask_unavailable_text(d, p.preset(), false));
    stockade::testing::expect_golden("policy", "declined.txt", declined_text(d, "decline"));
    stockade::testing::expect_golden("policy", "ask_cancelled.txt", declined_text(d, "cancel"));
    AskPrompt prompt = ask_prompt("bash", {{"command", "npm install lodash"}}, d, p.preset());
    stockade::testing::expect_golden("policy", "ask_prompt.txt",
                                     prompt.message + "\n" + prompt.schema.dump(2));
}

TEST(PolicyGateTest, ANetworkRuleIsNeverCalledEnoughWhenTheSandboxHasNoNetwork) {
    const std::vector<policy::SettingsSource> sources = {policy::SettingsSource{
        .layer = policy::Layer::kProject,
        .origin = "/ws/.stockade/settings.json",
        .text = R"json({"permissions": {"allow": ["network.access(pypi.org)"]}})json",
        .base_dir = {}}};
    auto p = policy::Policy::load(sources,
                                  policy::PolicyOptions{.preset = policy::Preset::kWorkspaceWrite,
                                                        .mode = policy::Mode::kCi,
                                                        .workspace_root = "/ws",
                                                        .home = "/home/u"});
    ASSERT_TRUE(p.has_value()) << p.error().message;
    auto allowed = decide(*p, "bash", {{"command", "pip install requests"}});
    ASSERT_EQ(allowed.decision, policy::Decision::kAllow);
    stockade::testing::expect_golden("policy", "network_note.txt", network_note(allowed, false));
    EXPECT_EQ(network_note(allowed, true), "");
    auto denied = decide(*p, "bash", {{"command", "git fetch origin"}});
    ASSERT_EQ(denied.decision, policy::Decision::kDeny);
    EXPECT_THAT(denial_text(denied, p->preset(), p->mode(), false),
                HasSubstr("restarts Stockade with --network allowlist (or host)"));
    EXPECT_THAT(denial_text(denied, p->preset(), p->mode(), true),
                Not(HasSubstr("--network host")));
}

TEST(PolicyGateTest, SuggestedRulesAndGrantKeys) {
    policy::CapabilityRequest run{.kind = policy::CapabilityKind::kProcessExecute,
                                  .tool = "bash",
                                  .command = "npm install lodash --save"};
    EXPECT_EQ(suggested_rule(run), "Bash(npm install:*)");
    run.tool = "process";
    EXPECT_EQ(suggested_rule(run), "Process(npm install:*)");
    policy::CapabilityRequest read{
        .kind = policy::CapabilityKind::kFileRead, .tool = "read", .path = "/ws/a"};
    EXPECT_EQ(suggested_rule(read), "Read(/ws/a)");
    policy::CapabilityRequest other = read;
    other.path = "/ws/b";
    EXPECT_NE(grant_key(read), grant_key(other));
    EXPECT_EQ(grant_key(read), grant_key(read));
    EXPECT_THAT(describe_action(read), HasSubstr("reading /ws/a"));
}

}  // namespace
}  // namespace stockade::runner
