#include "policy/settings.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

const RuleAnchors kAnchors{.workspace_root = "/proj", .home = "/home/dev", .settings_dir = "/proj"};
constexpr const char* kOrigin = "/proj/.stockade/settings.json";

Result<Settings> parse(std::string text) {
    return parse_settings(
        SettingsSource{.layer = Layer::kProject, .origin = kOrigin, .text = std::move(text)},
        kAnchors);
}

// Modelled on the examples of Claude Code's settings documentation: a team shares lint and
// test commands and a shell config read, and keeps secrets and ad-hoc downloads out.
constexpr const char* kTeamSettings = R"json({
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": [
      "Bash(npm run lint)",
      "Bash(npm run test:*)",
      "Read(~/.zshrc)"
    ],
    "deny": [
      "Bash(curl:*)",
      "Read(./.env)",
      "Read(./.env.*)",
      "Read(./secrets/**)"
    ]
  },
  "env": {
    "NODE_ENV": "development"
  },
  "model": "some-model"
}
)json";

TEST(SettingsTest, ReadsClaudeCodeSettingsAsTheyAre) {
    auto settings = parse(kTeamSettings);
    ASSERT_THAT(settings, IsOk());
    std::vector<std::string> rules;
    for (const Rule& rule : settings->rules) {
        rules.push_back(
            fmt::format("{} {} {}", decision_name(rule.decision()), rule.text(), rule.origin));
    }
    EXPECT_THAT(rules, ElementsAre("allow Bash(npm run lint) /proj/.stockade/settings.json:5",
                                   "allow Bash(npm run test:*) /proj/.stockade/settings.json:6",
                                   "allow Read(~/.zshrc) /proj/.stockade/settings.json:7",
                                   "deny Bash(curl:*) /proj/.stockade/settings.json:10",
                                   "deny Read(./.env) /proj/.stockade/settings.json:11",
                                   "deny Read(./.env.*) /proj/.stockade/settings.json:12",
                                   "deny Read(./secrets/**) /proj/.stockade/settings.json:13"));
    for (const Rule& rule : settings->rules) {
        EXPECT_EQ(rule.layer, Layer::kProject);
    }
    EXPECT_THAT(settings->warnings,
                ElementsAre("/proj/.stockade/settings.json:16: \"env\" is not used by stockade "
                            "(only \"permissions\" and \"sandbox\" are); ignored",
                            "/proj/.stockade/settings.json:19: \"model\" is not used by stockade "
                            "(only \"permissions\" and \"sandbox\" are); ignored"));
}

struct MalformedCase {
    const char* name;
    const char* text;
    const char* error;  // the whole message: origin:line:col: what
};

std::ostream& operator<<(std::ostream& os, const MalformedCase& c) {
    return os << c.name;
}

class SettingsMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(SettingsMalformedTest, RejectedWithOriginLineAndColumn) {
    auto settings = parse(GetParam().text);
    ASSERT_THAT(settings, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(settings.error().message, GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Files, SettingsMalformedTest,
    ::testing::Values(
        MalformedCase{"MissingComma",
                      "{\n  \"permissions\": {\n    \"allow\": [\"Read(x)\" \"Read(y)\"]\n  }\n}\n",
                      // nlohmann stops at the end of the unexpected token.
                      "/proj/.stockade/settings.json:3:33: invalid JSON: syntax error while "
                      "parsing array - unexpected string literal; expected ']'"},
        MalformedCase{"TrailingComma", "{\"permissions\": {\"deny\": [\"Bash\",]}}",
                      "/proj/.stockade/settings.json:1:34: invalid JSON: syntax error while "
                      "parsing value - unexpected ']'; expected '[', '{', or a literal"},
        MalformedCase{"Truncated", "{\"permissions\": {\n",
                      "/proj/.stockade/settings.json:2:1: invalid JSON: syntax error while "
                      "parsing object key - unexpected end of input; expected string literal"},
        MalformedCase{"NumberOverflow", "{\"permissions\": {\"x\": 1e999}}",
                      "/proj/.stockade/settings.json:1:23: invalid JSON: number overflow parsing "
                      "'1e999'"},
        MalformedCase{"TopLevelArray", "[\"Bash\"]",
                      "/proj/.stockade/settings.json:1:1: expected a JSON object at the top "
                      "level, got array"},
        MalformedCase{"PermissionsNotObject", "{\n  \"permissions\": [\"Bash\"]\n}",
                      "/proj/.stockade/settings.json:2:18: \"permissions\" must be an object, "
                      "got array"},
        MalformedCase{"ListNotArray", "{\"permissions\": {\n  \"allow\": \"Bash\"\n}}",
                      "/proj/.stockade/settings.json:2:12: \"permissions.allow\" must be an "
                      "array of rule strings, got string"},
        MalformedCase{"RuleNotString",
                      "{\"permissions\": {\"ask\": [\n  \"Bash(git push:*)\",\n  42\n]}}",
                      "/proj/.stockade/settings.json:3:3: permissions.ask[1] must be a string, "
                      "got number"},
        MalformedCase{"UnbalancedRule",
                      "{\"permissions\": {\n  \"deny\": [\n    \"Bash(rm -rf:*\"\n  ]\n}}",
                      "/proj/.stockade/settings.json:3:5: rule \"Bash(rm -rf:*\": unbalanced "
                      "parentheses: the rule must end with \")\""},
        MalformedCase{"ClimbingPath", "{\"permissions\": {\"deny\": [\"Read(../x)\"]}}",
                      "/proj/.stockade/settings.json:1:27: rule \"Read(../x)\": \"..\" is not "
                      "allowed in a path pattern (\"../x\")"}));

TEST(SettingsTest, DeepNestingIsRejectedBeforeParsing) {
    const std::string text = "{\"x\": " + std::string(100, '[') + std::string(100, ']') + "}";
    auto settings = parse(text);
    ASSERT_THAT(settings, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(settings.error().message, HasSubstr(":1:70: invalid JSON: nested deeper than 64"));
}

TEST(SettingsTest, UnknownPermissionKeysAndToolsAreWarnings) {
    auto settings = parse(R"json({
  "permissions": {
    "allow": ["WebSearch", "Read(./docs/**)"],
    "additionalDirectories": ["../shared"],
    "disableBypassPermissionsMode": "disable",
    "defaultMode": "yolo"
  },
  "hooks": {}
})json");
    ASSERT_THAT(settings, IsOk());
    ASSERT_EQ(settings->rules.size(), 1U);
    EXPECT_EQ(settings->rules[0].text(), "Read(./docs/**)");
    EXPECT_FALSE(settings->preset.has_value());
    EXPECT_THAT(
        settings->warnings,
        ElementsAre(HasSubstr("settings.json:8: \"hooks\" is not used by stockade"),
                    HasSubstr("settings.json:4: \"permissions.additionalDirectories\" is "
                              "ignored"),
                    HasSubstr("settings.json:6: \"permissions.defaultMode\" \"yolo\" has no "
                              "stockade preset"),
                    HasSubstr("settings.json:5: \"permissions.disableBypassPermissionsMode\" is "
                              "not used"),
                    HasSubstr("settings.json:3: rule \"WebSearch\" names "
                              "a tool stockade does not have")));
}

TEST(SettingsTest, DefaultModeMapsOntoPresets) {
    struct Case {
        const char* mode;
        Preset preset;
    };
    for (const Case& c :
         {Case{"default", Preset::kWorkspaceWrite}, Case{"acceptEdits", Preset::kWorkspaceWrite},
          Case{"plan", Preset::kReadOnly}, Case{"bypassPermissions", Preset::kDangerFullAccess},
          Case{"read-only", Preset::kReadOnly}}) {
        auto settings =
            parse(fmt::format("{{\"permissions\": {{\"defaultMode\": \"{}\"}}}}", c.mode));
        ASSERT_THAT(settings, IsOk());
        EXPECT_EQ(settings->preset, c.preset) << c.mode;
        EXPECT_EQ(settings->preset_origin, "/proj/.stockade/settings.json:1");
    }
}

TEST(SettingsTest, EmptyFilesAndFilesWithoutPermissionsAddNothing) {
    for (const char* text : {"", "  \n", "{}", "{\"model\": \"x\"}"}) {
        auto settings = parse(text);
        ASSERT_THAT(settings, IsOk()) << text;
        EXPECT_TRUE(settings->rules.empty());
        EXPECT_FALSE(settings->warnings.empty()) << text;
    }
}

TEST(SettingsTest, ByteOrderMarkIsSkipped) {
    auto settings = parse("\xEF\xBB\xBF{\"permissions\": {\n\"deny\": [\"Bash\"]}}");
    ASSERT_THAT(settings, IsOk());
    ASSERT_EQ(settings->rules.size(), 1U);
    EXPECT_EQ(settings->rules[0].origin, "/proj/.stockade/settings.json:2");
}

TEST(SettingsBaseDirTest, AnchorsSlashRules) {
    auto base = [](std::string origin, std::string dir = "") {
        return settings_base_dir(
            SettingsSource{.origin = std::move(origin), .base_dir = std::move(dir)}, "/ws");
    };
    EXPECT_EQ(base("/ws/.stockade/settings.json"), "/ws");  // the directory it configures
    EXPECT_EQ(base("/repo/.claude/settings.json"), "/repo");
    EXPECT_EQ(base("/etc/stockade/managed.json"), "/etc/stockade");
    EXPECT_EQ(base("command line"), "/ws");
    EXPECT_EQ(base("/etc/x.json", "/opt/base"), "/opt/base");
}

TEST(CommandLineSourceTest, OneRulePerLine) {
    const std::vector<std::string> allow = {"Bash(make:*)", "Read(./src/**)"};
    const std::vector<std::string> deny = {"network.access"};
    const SettingsSource source = command_line_source(allow, {}, deny);
    EXPECT_EQ(source.layer, Layer::kCommandLine);
    auto settings = parse_settings(source, kAnchors);
    ASSERT_THAT(settings, IsOk());
    ASSERT_EQ(settings->rules.size(), 3U);
    EXPECT_EQ(settings->rules[0].origin, "command line:3");
    EXPECT_EQ(settings->rules[1].origin, "command line:4");
    EXPECT_EQ(settings->rules[2].text(), "network.access");
    EXPECT_EQ(settings->rules[2].layer, Layer::kCommandLine);
    EXPECT_TRUE(settings->warnings.empty());
}

TEST(SettingsTest, TheSandboxBlockMountsProtectsAndSetsVariablesWithClaudeCodesAnchors) {
    auto settings = parse(R"json({
  "sandbox": {
    "enabled": true,
    "filesystem": {
      "allowRead": ["~/.cargo", "//opt/sdk", "/tools"],
      "allowWrite": ["~/.cache/pip"],
      "denyRead": ["./secrets", "config/token.txt"],
      "denyWrite": ["vendor"]
    },
    "env": ["CARGO_HOME", "MODE=fast"],
    "network": {"allowedDomains": ["pypi.org"]}
  }
})json");
    ASSERT_THAT(settings, IsOk());
    auto values = [](const std::vector<SandboxEntry>& entries) {
        std::vector<std::string> out;
        for (const SandboxEntry& e : entries) {
            out.push_back(e.value);
        }
        return out;
    };
    const SandboxSettings& sb = settings->sandbox;
    EXPECT_THAT(values(sb.allow_read), ElementsAre("/home/dev/.cargo", "/opt/sdk", "/proj/tools"));
    EXPECT_THAT(values(sb.allow_write), ElementsAre("/home/dev/.cache/pip"));
    EXPECT_THAT(values(sb.deny_read), ElementsAre("/proj/secrets", "/proj/config/token.txt"));
    EXPECT_THAT(values(sb.deny_write), ElementsAre("/proj/vendor"));
    EXPECT_THAT(values(sb.env), ElementsAre("CARGO_HOME", "MODE=fast"));
    EXPECT_EQ(sb.allow_read.front().origin, std::string(kOrigin) + ":5");
    EXPECT_EQ(sb.allow_read.front().layer, Layer::kProject);
    // What does not apply to us is said, not silently dropped.
    std::string warnings;
    for (const auto& w : settings->warnings) {
        warnings += w + "\n";
    }
    EXPECT_THAT(warnings, HasSubstr("\"sandbox.enabled\" does not apply"));
    EXPECT_THAT(warnings, Not(HasSubstr("sandbox.network")));
    ASSERT_EQ(settings->rules.size(), 1U);
    EXPECT_EQ(settings->rules[0].text(), "network.access(pypi.org)");
    EXPECT_THAT(warnings, Not(HasSubstr("no \"permissions\" object")));
}

TEST(SettingsTest, ASandboxPathIsAPathAndAVariableHasAName) {
    EXPECT_THAT(parse(R"({"sandbox": {"filesystem": {"allowRead": ["~/.cargo/*"]}}})"),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse(R"({"sandbox": {"filesystem": {"allowRead": "~/.cargo"}}})"),
                HasErrc(Errc::kInvalidArgument));
    auto bad_env = parse(R"({"sandbox": {"env": ["1X=2"]}})");
    ASSERT_THAT(bad_env, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad_env.error().message, HasSubstr(":1:"));
}

}  // namespace
}  // namespace stockade::policy
