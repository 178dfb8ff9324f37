#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/bash_analysis.h"
#include "policy/policy.h"
#include "policy/requests.h"
#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

const RequestContext kCtx{.workspace_root = "/ws", .cwd = "", .home = "/home/u"};

// A settings text with the given lists (rules as JSON string literals are written for us).
std::string settings(std::vector<std::string> allow, std::vector<std::string> ask = {},
                     std::vector<std::string> deny = {}) {
    return command_line_source(allow, ask, deny).text;
}

SettingsSource source(Layer layer, std::string origin, std::string text) {
    return SettingsSource{.layer = layer, .origin = std::move(origin), .text = std::move(text)};
}

Policy load(std::vector<SettingsSource> sources, std::optional<Preset> preset = std::nullopt,
            Mode mode = Mode::kLocal) {
    auto policy = Policy::load(
        sources,
        PolicyOptions{.preset = preset, .mode = mode, .workspace_root = "/ws", .home = "/home/u"});
    EXPECT_THAT(policy, IsOk());
    return std::move(policy).value();
}

Policy project(std::vector<std::string> allow, std::vector<std::string> ask = {},
               std::vector<std::string> deny = {}, std::optional<Preset> preset = std::nullopt,
               Mode mode = Mode::kLocal) {
    return load({source(Layer::kProject, "/ws/.stockade/settings.json",
                        settings(std::move(allow), std::move(ask), std::move(deny)))},
                preset, mode);
}

CallDecision bash(const Policy& policy, std::string_view command) {
    return policy.evaluate(bash_requests(command, kCtx));
}

CallDecision read(const Policy& policy, std::string_view path) {
    return policy.evaluate(std::vector{file_read_request("read", path, kCtx)});
}

std::string rule_of(const CallDecision& decision) {
    const RequestOutcome* outcome = decision.deciding_outcome();
    return outcome != nullptr && outcome->rule ? outcome->rule->text : "(default)";
}

std::string origin_of(const CallDecision& decision) {
    const RequestOutcome* outcome = decision.deciding_outcome();
    return outcome != nullptr && outcome->rule ? outcome->rule->origin : "(default)";
}

TEST(EvaluateTest, OnlyTheOperatorsLayersMountHostPathsTheProjectsOnlyRestricts) {
    const char* block = R"json({"sandbox": {"filesystem": {"allowRead": ["//opt/sdk"],
        "allowWrite": ["//var/cache/x"], "denyRead": ["./secrets"], "denyWrite": ["./vendor"]},
        "env": ["MODE=fast"]}})json";
    Policy p = load({source(Layer::kProject, "/ws/.stockade/settings.json", block),
                     source(Layer::kUser, "/home/u/.config/stockade/settings.json", block)});
    auto layers = [](const std::vector<SandboxEntry>& entries) {
        std::vector<Layer> out;
        for (const SandboxEntry& e : entries) {
            out.push_back(e.layer);
        }
        return out;
    };
    // The repository's own file may hide and freeze paths, never open the host to the sandbox.
    EXPECT_EQ(layers(p.sandbox().allow_read), std::vector<Layer>{Layer::kUser});
    EXPECT_EQ(layers(p.sandbox().allow_write), std::vector<Layer>{Layer::kUser});
    EXPECT_EQ(layers(p.sandbox().env), std::vector<Layer>{Layer::kUser});
    EXPECT_EQ(layers(p.sandbox().deny_read), (std::vector<Layer>{Layer::kProject, Layer::kUser}));
    EXPECT_EQ(layers(p.sandbox().deny_write), (std::vector<Layer>{Layer::kProject, Layer::kUser}));
    size_t refused = 0;
    for (const std::string& w : p.warnings()) {
        refused += w.find("a project settings file cannot mount host paths") != std::string::npos;
    }
    EXPECT_EQ(refused, 3U);
}

TEST(EvaluateTest, DenyBeatsAllowWhateverTheLayers) {
    for (const auto& [allow_layer, deny_layer] :
         {std::pair{Layer::kManaged, Layer::kUser}, std::pair{Layer::kUser, Layer::kManaged}}) {
        const Policy policy =
            load({source(allow_layer, "allow.json", settings({"Bash(curl:*)"})),
                  source(deny_layer, "deny.json", settings({}, {}, {"Bash(curl:*)"}))});
        const CallDecision decision = bash(policy, "curl https://example.com");
        EXPECT_EQ(decision.decision, Decision::kDeny);
        EXPECT_EQ(origin_of(decision), "deny.json:7");
    }
}

TEST(EvaluateTest, AskBeatsAllow) {
    const Policy policy =
        load({source(Layer::kManaged, "managed.json",
                     settings({"Bash(git push:*)", "network.access", "git.modify"})),
              source(Layer::kUser, "user.json", settings({}, {"Bash(git push:*)"}))});
    const CallDecision decision = bash(policy, "git push origin main");
    EXPECT_EQ(decision.decision, Decision::kAsk);
    EXPECT_EQ(rule_of(decision), "Bash(git push:*)");
    EXPECT_EQ(decision.deciding_outcome()->rule->decision, Decision::kAsk);
}

TEST(EvaluateTest, FirstMatchWithinAListWins) {
    const Policy policy = project({}, {}, {"Read(./secrets/**)", "Read(**/*.pem)"});
    EXPECT_EQ(rule_of(read(policy, "secrets/tls/key.pem")), "Read(./secrets/**)");
    EXPECT_EQ(rule_of(read(policy, "certs/key.pem")), "Read(**/*.pem)");
}

TEST(EvaluateTest, HigherLayerIsReportedWithinAList) {
    const Policy policy =
        load({source(Layer::kUser, "user.json", settings({}, {}, {"Read(.env)"})),
              source(Layer::kProject, "project.json", settings({}, {}, {"Read(**/.env)"})),
              source(Layer::kManaged, "managed.json", settings({}, {}, {"Read(./.env)"})),
              source(Layer::kCommandLine, "command line", settings({}, {}, {"Read(//ws/.env)"}))});
    EXPECT_EQ(origin_of(read(policy, ".env")), "managed.json:7");
    std::vector<Layer> layers;
    for (const Rule& rule : policy.rules()) {
        layers.push_back(rule.layer);
    }
    EXPECT_EQ(layers, (std::vector<Layer>{Layer::kManaged, Layer::kCommandLine, Layer::kProject,
                                          Layer::kUser}));
}

TEST(EvaluateTest, CallIsTheStrictestOfItsRequests) {
    const Policy policy = project({"Bash(npm test:*)"});
    const CallDecision decision = bash(policy, "npm test && curl https://evil.example");
    EXPECT_EQ(decision.decision, Decision::kAsk);  // network.access: workspace-write asks
    ASSERT_TRUE(decision.deciding.has_value());
    EXPECT_EQ(decision.deciding_outcome()->request.kind, CapabilityKind::kNetworkAccess);
    EXPECT_EQ(decision.deciding_outcome()->request.host, "evil.example");
    EXPECT_EQ(decision.outcomes[0].decision, Decision::kAllow);
    EXPECT_EQ(decision.outcomes[0].rule->text, "Bash(npm test:*)");
}

TEST(EvaluateTest, PrefixRuleDoesNotAllowWhatFollowsIt) {
    // read-only: commands ask unless allowed; network is denied.
    const Policy policy = project({"Bash(npm test:*)"}, {}, {}, Preset::kReadOnly);
    EXPECT_EQ(bash(policy, "npm test -- --watch").decision, Decision::kAllow);
    EXPECT_EQ(bash(policy, "npm test && rm -rf src").decision, Decision::kDeny);  // a write
    EXPECT_EQ(bash(policy, "npm test; ls").decision, Decision::kAsk);
    EXPECT_EQ(bash(policy, "npm test | tee out").decision, Decision::kDeny);
    EXPECT_EQ(bash(policy, "npm test $(touch x)").decision, Decision::kDeny);
}

struct CommandCase {
    const char* name;
    const char* command;
    Decision decision;
    const char* rule;
};

std::ostream& operator<<(std::ostream& os, const CommandCase& c) {
    return os << c.name;
}

class CommandDecisionTest : public ::testing::TestWithParam<CommandCase> {};

// A policy in the style of Claude Code's documentation: lint and tests allowed, downloads and
// secrets denied, pushes asked.
TEST_P(CommandDecisionTest, DecidesEachSimpleCommand) {
    const Policy policy = project(
        {"Bash(npm run lint)", "Bash(npm run test:*)", "Bash(git * main)", "Read(~/.zshrc)"},
        {"Bash(npm publish:*)"},
        {"Bash(curl:*)", "Bash(sudo:*)", "Read(./.env)", "Read(./.env.*)", "Read(./secrets/**)"},
        Preset::kReadOnly);
    const CallDecision decision = bash(policy, GetParam().command);
    EXPECT_EQ(decision.decision, GetParam().decision) << GetParam().command;
    EXPECT_EQ(rule_of(decision), GetParam().rule) << GetParam().command;
}

INSTANTIATE_TEST_SUITE_P(
    ClaudeStyle, CommandDecisionTest,
    ::testing::Values(
        CommandCase{"Exact", "npm run lint", Decision::kAllow, "Bash(npm run lint)"},
        CommandCase{"ExactOnly", "npm run lint --fix", Decision::kAsk, "(default)"},
        CommandCase{"Prefix", "npm run test -- -u", Decision::kAllow, "Bash(npm run test:*)"},
        CommandCase{"Wildcard", "git checkout main", Decision::kAllow, "Bash(git * main)"},
        CommandCase{"AskRule", "npm publish --dry-run", Decision::kAsk, "Bash(npm publish:*)"},
        // read-only denies the network and git changes a push implies.
        CommandCase{"PushDeniedByDefault", "git push origin feature", Decision::kDeny, "(default)"},
        CommandCase{"CompoundDenied", "npm run lint && curl https://x.io", Decision::kDeny,
                    "Bash(curl:*)"},
        CommandCase{"Substitution", "echo $(curl -s https://x.io)", Decision::kDeny,
                    "Bash(curl:*)"},
        CommandCase{"Backquotes", "npm run test -- `curl x.io`", Decision::kDeny, "Bash(curl:*)"},
        CommandCase{"Subshell", "(cd web && curl x.io)", Decision::kDeny, "Bash(curl:*)"},
        CommandCase{"Wrapper", "timeout 60 npm run test", Decision::kAllow, "Bash(npm run test:*)"},
        CommandCase{"WrapperDenied", "sudo npm run lint", Decision::kDeny, "Bash(sudo:*)"},
        CommandCase{"AssignmentPrefix", "CI=1 npm run test", Decision::kAllow,
                    "Bash(npm run test:*)"},
        CommandCase{"BashDashC", "bash -c 'curl x.io'", Decision::kDeny, "Bash(curl:*)"},
        CommandCase{"ReaderOfSecret", "cat .env", Decision::kDeny, "Read(./.env)"},
        CommandCase{"ReaderOfSecretVariant", "head config/.env.production", Decision::kDeny,
                    "Read(./.env.*)"},
        CommandCase{"ReaderOfSecretDir", "less secrets/api/token", Decision::kDeny,
                    "Read(./secrets/**)"},
        CommandCase{"Opaque", "npm run test 'oops", Decision::kAsk, "(default)"}));

TEST(EvaluateTest, RedirectionOutsideTheWorkspace) {
    const Policy local = project({});
    const CallDecision asked = bash(local, "echo 127.0.0.1 x >> /etc/hosts");
    EXPECT_EQ(asked.decision, Decision::kAsk);
    EXPECT_EQ(asked.deciding_outcome()->request.kind, CapabilityKind::kFileWriteOutsideProject);

    const Policy ci = project({}, {}, {}, std::nullopt, Mode::kCi);
    const CallDecision denied = bash(ci, "echo 127.0.0.1 x >> /etc/hosts");
    EXPECT_EQ(denied.decision, Decision::kDeny);
    EXPECT_THAT(denied.deciding_outcome()->reason, HasSubstr("an ask is a deny in ci mode"));
    EXPECT_EQ(denied.deciding_outcome()->before_mode, Decision::kAsk);

    const Policy allowed = project({"file.write.outsideProject(//etc/hosts)"});
    EXPECT_EQ(bash(allowed, "echo x >> /etc/hosts").decision, Decision::kAllow);
}

struct DefaultCase {
    Preset preset;
    Mode mode;
    CapabilityRequest request;
    Decision decision;
};

std::ostream& operator<<(std::ostream& os, const DefaultCase& c) {
    return os << preset_name(c.preset) << "/" << mode_name(c.mode) << " "
              << capability_kind_name(c.request.kind) << (c.request.opaque ? " (opaque)" : "");
}

class DefaultsTest : public ::testing::TestWithParam<DefaultCase> {};

TEST_P(DefaultsTest, NoMatchFallsToThePresetThenTheMode) {
    const Policy policy = project({}, {}, {}, GetParam().preset, GetParam().mode);
    EXPECT_EQ(policy.evaluate_one(GetParam().request).decision, GetParam().decision);
}

const CapabilityRequest kRead{.kind = CapabilityKind::kFileRead, .path = "/ws/a"};
const CapabilityRequest kWrite{.kind = CapabilityKind::kFileWrite, .path = "/ws/a"};
const CapabilityRequest kOutside{.kind = CapabilityKind::kFileWriteOutsideProject,
                                 .path = "/etc/a"};
const CapabilityRequest kExec{.kind = CapabilityKind::kProcessExecute, .command = "make"};
const CapabilityRequest kOpaque{
    .kind = CapabilityKind::kProcessExecute, .command = "make '", .opaque = true};
const CapabilityRequest kNetwork{.kind = CapabilityKind::kNetworkAccess, .host = "x.io"};
const CapabilityRequest kGit{.kind = CapabilityKind::kGitModify, .subcommand = "commit"};
const CapabilityRequest kTool{.kind = CapabilityKind::kTool, .tool = "process"};

constexpr Decision A = Decision::kAllow;
constexpr Decision Q = Decision::kAsk;
constexpr Decision D = Decision::kDeny;
constexpr Preset RO = Preset::kReadOnly;
constexpr Preset WW = Preset::kWorkspaceWrite;
constexpr Preset FA = Preset::kDangerFullAccess;
constexpr Mode L = Mode::kLocal;
constexpr Mode CI = Mode::kCi;
constexpr Mode H = Mode::kHosted;

INSTANTIATE_TEST_SUITE_P(
    Table, DefaultsTest,
    ::testing::Values(
        // read-only
        DefaultCase{RO, L, kRead, A}, DefaultCase{RO, L, kWrite, D},
        DefaultCase{RO, L, kOutside, D}, DefaultCase{RO, L, kExec, Q},
        DefaultCase{RO, L, kOpaque, Q}, DefaultCase{RO, L, kNetwork, D},
        DefaultCase{RO, L, kGit, D}, DefaultCase{RO, L, kTool, A}, DefaultCase{RO, CI, kExec, D},
        // workspace-write
        DefaultCase{WW, L, kRead, A}, DefaultCase{WW, L, kWrite, A},
        DefaultCase{WW, L, kOutside, Q}, DefaultCase{WW, L, kExec, A},
        DefaultCase{WW, L, kOpaque, Q}, DefaultCase{WW, L, kNetwork, Q},
        DefaultCase{WW, L, kGit, Q}, DefaultCase{WW, L, kTool, A}, DefaultCase{WW, CI, kOutside, D},
        DefaultCase{WW, CI, kOpaque, D}, DefaultCase{WW, CI, kNetwork, D},
        DefaultCase{WW, CI, kGit, D}, DefaultCase{WW, H, kNetwork, D}, DefaultCase{WW, H, kExec, A},
        // danger-full-access: everything, except that ci and hosted keep the network off
        DefaultCase{FA, L, kOutside, A}, DefaultCase{FA, L, kOpaque, A},
        DefaultCase{FA, L, kNetwork, A}, DefaultCase{FA, L, kGit, A},
        DefaultCase{FA, CI, kNetwork, D}, DefaultCase{FA, H, kNetwork, D},
        DefaultCase{FA, CI, kGit, A}));

TEST(EvaluateTest, ExplicitNetworkAllowWorksInCi) {
    const Policy policy =
        project({"network.access(registry.npmjs.org)"}, {}, {}, std::nullopt, Mode::kCi);
    EXPECT_EQ(bash(policy, "npm ci").decision, Decision::kAllow);
    EXPECT_EQ(bash(policy, "curl https://example.com").decision, Decision::kDeny);
    EXPECT_THAT(bash(policy, "curl https://example.com").deciding_outcome()->reason,
                HasSubstr("network access is denied by default in ci mode"));
    EXPECT_TRUE(policy.quotas() == false);
    EXPECT_TRUE(project({}, {}, {}, std::nullopt, Mode::kHosted).quotas());
}

TEST(EvaluateTest, OpaqueCommandsNeedAnExactRule) {
    EXPECT_EQ(bash(project({"Bash(npm test:*)"}), "npm test 'x").decision, Decision::kAsk);
    EXPECT_EQ(bash(project({"Bash(npm test 'x)"}), "npm test 'x").decision, Decision::kAllow);
    EXPECT_EQ(bash(project({}, {}, {"Bash(npm:*)"}), "npm test 'x").decision, Decision::kDeny);
    EXPECT_EQ(bash(project({}, {}, {}, Preset::kDangerFullAccess), "npm test 'x").decision,
              Decision::kAllow);
}

TEST(EvaluateTest, ProcessActions) {
    const Policy policy = project({}, {}, {"Process(npm run dev)"});
    // What process's capabilities() give (tools/process_tool.cc): start is a command, every
    // other action the tool itself.
    auto start = [&](std::string_view command) {
        return policy.evaluate(bash_requests(command, kCtx, "process")).decision;
    };
    const std::vector<CapabilityRequest> list = {
        {.kind = CapabilityKind::kTool, .tool = "process", .command = "list"}};
    EXPECT_EQ(start("npm run dev"), Decision::kDeny);
    EXPECT_EQ(start("npm run build"), Decision::kAllow);
    EXPECT_EQ(policy.evaluate(list).decision, Decision::kAllow);
    EXPECT_EQ(project({}, {}, {"Process"}).evaluate(list).decision, Decision::kDeny);
}

TEST(EvaluateTest, NoRequestsIsAllow) {
    const CallDecision decision = project({}).evaluate({});
    EXPECT_EQ(decision.decision, Decision::kAllow);
    EXPECT_FALSE(decision.deciding.has_value());
}

TEST(EvaluateTest, DefaultReasonNamesThePreset) {
    const RequestOutcome outcome = project({}).evaluate_one(kNetwork);
    EXPECT_FALSE(outcome.rule.has_value());
    EXPECT_EQ(outcome.reason,
              "no rule matched; the workspace-write preset's default for network.access is ask");
}

struct VisibilityCase {
    const char* name;
    std::vector<std::string> allow;
    std::vector<std::string> deny;
    Preset preset;
    Mode mode;
    std::vector<std::string> hidden;
};

std::ostream& operator<<(std::ostream& os, const VisibilityCase& c) {
    return os << c.name;
}

class VisibilityTest : public ::testing::TestWithParam<VisibilityCase> {};

TEST_P(VisibilityTest, HidesToolsEveryCallOfWhichIsDenied) {
    const VisibilityCase& c = GetParam();
    const Policy policy = project(c.allow, {}, c.deny, c.preset, c.mode);
    std::vector<std::string> hidden;
    for (const char* tool : {"read", "write", "edit", "grep", "glob", "bash", "process"}) {
        if (policy.hidden(tool)) {
            hidden.emplace_back(tool);
        }
    }
    EXPECT_EQ(hidden, c.hidden);
}

INSTANTIATE_TEST_SUITE_P(
    Tools, VisibilityTest,
    ::testing::Values(
        VisibilityCase{"Nothing", {}, {}, WW, L, {}},
        VisibilityCase{"WholeBash", {}, {"Bash"}, WW, L, {"bash"}},
        VisibilityCase{"BashStar", {}, {"Bash(*)"}, WW, L, {"bash"}},
        VisibilityCase{"BashPrefixHidesNothing", {}, {"Bash(rm:*)"}, WW, L, {}},
        VisibilityCase{"ReadHidesTheReaders", {}, {"Read"}, WW, L, {"read", "grep", "glob"}},
        VisibilityCase{"EditHidesTheWriters", {}, {"Edit"}, WW, L, {"write", "edit"}},
        VisibilityCase{"Process", {}, {"Process"}, WW, L, {"process"}},
        VisibilityCase{"ProcessExecuteHidesBash", {}, {"process.execute"}, WW, L, {"bash"}},
        VisibilityCase{"ReadOnlyHidesWriters", {}, {}, RO, L, {"write", "edit"}},
        VisibilityCase{"ReadOnlyWithAnEditRule", {"Edit(./docs/**)"}, {}, RO, L, {}},
        VisibilityCase{
            "ReadOnlyCiHidesCommands", {}, {}, RO, CI, {"write", "edit", "bash", "process"}},
        VisibilityCase{"ReadOnlyCiWithABashRule",
                       {"Bash(make:*)"},
                       {},
                       RO,
                       CI,
                       {"write", "edit", "process"}}));

TEST(VisibilityTest, ReasonNamesTheRule) {
    const ToolVisibility visibility = project({}, {}, {"Bash"}).visibility("bash");
    EXPECT_TRUE(visibility.hidden);
    EXPECT_EQ(visibility.reason,
              "denied as a whole by rule \"Bash\" (/ws/.stockade/settings.json:7)");
    EXPECT_FALSE(project({}).visibility("unknown-tool").hidden);
}

TEST(PolicyLoadTest, PresetComesFromOptionsThenTheHighestLayer) {
    const std::string plan = R"json({"permissions": {"defaultMode": "plan"}})json";
    const std::string bypass = R"json({"permissions": {"defaultMode": "bypassPermissions"}})json";
    EXPECT_EQ(load({}).preset(), Preset::kWorkspaceWrite);
    EXPECT_EQ(load({source(Layer::kUser, "u.json", plan)}).preset(), Preset::kReadOnly);
    EXPECT_EQ(
        load({source(Layer::kUser, "u.json", plan), source(Layer::kManaged, "m.json", bypass)})
            .preset(),
        Preset::kDangerFullAccess);
    EXPECT_EQ(load({source(Layer::kUser, "u.json", plan)}, Preset::kDangerFullAccess).preset(),
              Preset::kDangerFullAccess);
    // The repository may tighten but not loosen.
    const Policy loosened = load({source(Layer::kProject, "p.json", bypass)});
    EXPECT_EQ(loosened.preset(), Preset::kWorkspaceWrite);
    EXPECT_THAT(loosened.warnings(),
                ::testing::Contains(HasSubstr("p.json:1: a project settings file cannot choose the "
                                              "danger-full-access preset")));
    EXPECT_EQ(load({source(Layer::kProject, "p.json", plan)}).preset(), Preset::kReadOnly);
}

TEST(PolicyLoadTest, FailsOnTheFirstMalformedSourceOrARelativeWorkspace) {
    const std::vector<SettingsSource> sources = {
        source(Layer::kUser, "/home/u/.config/stockade/settings.json", "{\"permissions\": 1}")};
    auto policy = Policy::load(sources, PolicyOptions{.workspace_root = "/ws"});
    ASSERT_THAT(policy, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(policy.error().message,
              "/home/u/.config/stockade/settings.json:1:17: \"permissions\" must be an object, "
              "got number");
    EXPECT_THAT(Policy::load({}, PolicyOptions{.workspace_root = "ws"}),
                HasErrc(Errc::kInvalidArgument));
}

TEST(PolicyLoadTest, WarningsAreCollectedFromEverySource) {
    const Policy policy = load({source(Layer::kUser, "u.json", R"json({"model": "x"})json"),
                                source(Layer::kProject, "p.json", settings({"WebSearch"}))});
    EXPECT_EQ(policy.warnings().size(), 3U);  // model, u.json has no permissions, WebSearch
}

}  // namespace
}  // namespace stockade::policy
