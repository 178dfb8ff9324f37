#include "policy/rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;

const RuleAnchors kAnchors{.workspace_root = "/ws", .home = "/home/u", .settings_dir = "/cfg"};

Rule parse_ok(std::string_view text, Decision decision = Decision::kAllow) {
    std::string warning;
    auto rule = Rule::parse(text, decision, kAnchors, warning);
    EXPECT_TRUE(rule.has_value()) << text << ": " << rule.error().message;
    EXPECT_TRUE(rule.has_value() && rule->has_value()) << text << ": " << warning;
    return std::move(**rule);
}

CapabilityRequest read_of(std::string path, std::string tool = "read") {
    return {.kind = CapabilityKind::kFileRead, .tool = std::move(tool), .path = std::move(path)};
}

CapabilityRequest write_of(std::string path, std::string tool = "edit") {
    return {.kind = CapabilityKind::kFileWrite, .tool = std::move(tool), .path = std::move(path)};
}

CapabilityRequest exec_of(std::string command, std::string tool = "bash") {
    return {.kind = CapabilityKind::kProcessExecute,
            .tool = std::move(tool),
            .command = command,
            .full_command = command};
}

bool matches(const Rule& rule, const CapabilityRequest& request) {
    const PathView view(request.path);
    return rule.matches(request, request.path.empty() ? nullptr : &view);
}

TEST(RuleParseTest, WholeToolForms) {
    for (const char* text : {"Bash", "Bash(*)", "Bash()", " Bash( * ) "}) {
        const Rule rule = parse_ok(text);
        EXPECT_TRUE(rule.whole()) << text;
        EXPECT_EQ(rule.subject(), Subject::kBash);
        EXPECT_TRUE(matches(rule, exec_of("anything")));
    }
    EXPECT_FALSE(parse_ok("Bash(ls)").whole());
}

struct MalformedCase {
    const char* text;
    const char* message;
};

class RuleMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(RuleMalformedTest, IsAnErrorSayingWhy) {
    std::string warning;
    auto rule = Rule::parse(GetParam().text, Decision::kDeny, kAnchors, warning);
    ASSERT_THAT(rule, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(rule.error().message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RuleMalformedTest,
    ::testing::Values(MalformedCase{"", "empty rule"},
                      MalformedCase{"Bash(npm test", "must end with \")\""},
                      MalformedCase{"Bash npm)", "\")\" without \"(\""},
                      MalformedCase{"Bash(echo (x)", "unbalanced parentheses in the specifier"},
                      MalformedCase{"Bash(echo x))", "unbalanced parentheses in the specifier"},
                      MalformedCase{"(ls)", "starts with a tool name"},
                      MalformedCase{"Ba sh(ls)", "is not a tool name"},
                      MalformedCase{"Read(../outside)", "\"..\" is not allowed"},
                      MalformedCase{"network.access(https://x.io/)", "not a host name"},
                      MalformedCase{"network.access(*github*)", "a host pattern is \"*\""},
                      MalformedCase{"WebFetch(domain:x.io:0)", "the port must be a number"},
                      MalformedCase{"git.modify(Push!)", "not a git subcommand"}));

TEST(RuleParseTest, ParenthesesInQuotesNeedNotBalance) {
    EXPECT_EQ(parse_ok("Bash(echo ')')").specifier(), "echo ')'");
}

TEST(RuleParseTest, UnknownToolsAreWarningsNotErrors) {
    struct Case {
        const char* text;
        const char* warning;
    };
    for (const Case& c :
         {Case{"WebSearch",
               "names a tool stockade does not "
               "have (\"WebSearch\")"},
          Case{"WebFetch(https://example.com/docs/*)",
               "counts as network.access only in the WebFetch(domain:HOST) form"},
          Case{"webfetch(domain:x.io)", "did you mean \"WebFetch\"?"},
          Case{"bash(ls)", "did you mean \"Bash\"?"}, Case{"READ(./x)", "did you mean \"Read\"?"},
          Case{"mcp__github__create_issue", "MCP server's tool"}}) {
        std::string warning;
        auto rule = Rule::parse(c.text, Decision::kDeny, kAnchors, warning);
        ASSERT_TRUE(rule.has_value()) << c.text;
        EXPECT_FALSE(rule->has_value()) << c.text;
        EXPECT_THAT(warning, HasSubstr(c.warning));
        EXPECT_THAT(warning, HasSubstr("ignored"));
    }
}

TEST(RuleParseTest, HomeAnchorNeedsAHome) {
    std::string warning;
    EXPECT_THAT(Rule::parse("Read(~/.ssh/**)", Decision::kDeny,
                            RuleAnchors{.workspace_root = "/ws"}, warning),
                HasErrc(Errc::kInvalidArgument));
}

struct AnchorCase {
    const char* rule;
    const char* path;
    bool matches;
};

class RuleAnchorTest : public ::testing::TestWithParam<AnchorCase> {};

TEST_P(RuleAnchorTest, ResolvesClaudeAnchors) {
    EXPECT_EQ(matches(parse_ok(GetParam().rule), read_of(GetParam().path)), GetParam().matches)
        << GetParam().rule << " vs " << GetParam().path;
}

INSTANTIATE_TEST_SUITE_P(Anchors, RuleAnchorTest,
                         ::testing::Values(
                             // "//": absolute.
                             AnchorCase{"Read(//etc/passwd)", "/etc/passwd", true},
                             AnchorCase{"Read(//etc/passwd)", "/ws/etc/passwd", false},
                             // "~/": the home directory.
                             AnchorCase{"Read(~/.zshrc)", "/home/u/.zshrc", true},
                             AnchorCase{"Read(~/.zshrc)", "/ws/.zshrc", false},
                             AnchorCase{"Read(~/.ssh/**)", "/home/u/.ssh/id_ed25519", true},
                             // "/": the settings file's directory.
                             AnchorCase{"Read(/notes/**)", "/cfg/notes/todo.md", true},
                             AnchorCase{"Read(/notes/**)", "/ws/notes/todo.md", false},
                             AnchorCase{"Read(/notes/**)", "/notes/todo.md", false},
                             // "./" and bare: the workspace.
                             AnchorCase{"Read(./src/**)", "/ws/src/main.cc", true},
                             AnchorCase{"Read(./src/**)", "/ws/lib/src/main.cc", false},
                             AnchorCase{"Read(src/**)", "/ws/src/main.cc", true},
                             AnchorCase{"Read(./.env)", "/ws/.env", true},
                             AnchorCase{"Read(./.env)", "/ws/service/.env",
                                        true},  // no slash: any depth
                             AnchorCase{"Read(.env)", "/ws/.env", true},
                             AnchorCase{"Read(.env)", "/home/u/.env", false}));

TEST(RuleMatchTest, ReadRulesCoverEveryReaderGrepAndGlobOnlyTheirOwn) {
    const Rule read = parse_ok("Read(./.env)");
    const Rule grep = parse_ok("Grep(./.env)");
    EXPECT_TRUE(matches(read, read_of("/ws/.env", "read")));
    EXPECT_TRUE(matches(read, read_of("/ws/.env", "grep")));
    EXPECT_TRUE(matches(read, read_of("/ws/.env", "bash")));
    EXPECT_TRUE(matches(grep, read_of("/ws/.env", "grep")));
    EXPECT_FALSE(matches(grep, read_of("/ws/.env", "read")));
    EXPECT_FALSE(matches(read, write_of("/ws/.env")));
}

TEST(RuleMatchTest, EditAndWriteCoverEveryWriter) {
    for (const char* text : {"Edit(./docs/**)", "Write(./docs/**)"}) {
        const Rule rule = parse_ok(text);
        EXPECT_TRUE(matches(rule, write_of("/ws/docs/a.md", "write"))) << text;
        EXPECT_TRUE(matches(rule, write_of("/ws/docs/a.md", "edit"))) << text;
        EXPECT_TRUE(matches(rule, write_of("/ws/docs/a.md", "bash"))) << text;
        EXPECT_FALSE(matches(rule, write_of("/ws/src/a.cc", "edit"))) << text;
    }
}

TEST(RuleMatchTest, CommandRulesByTool) {
    const Rule bash = parse_ok("Bash(npm test:*)");
    const Rule process = parse_ok("Process(npm run dev)");
    const Rule both = parse_ok("process.execute(make:*)");
    EXPECT_TRUE(matches(bash, exec_of("npm test")));
    EXPECT_FALSE(matches(bash, exec_of("npm test", "process")));
    EXPECT_TRUE(matches(process, exec_of("npm run dev", "process")));
    EXPECT_FALSE(matches(process, exec_of("npm run dev", "bash")));
    EXPECT_TRUE(matches(both, exec_of("make all", "bash")));
    EXPECT_TRUE(matches(both, exec_of("make all", "process")));
    // Process's other actions are matched by whole-tool Process rules only.
    const CapabilityRequest list{.kind = CapabilityKind::kTool, .tool = "process"};
    EXPECT_TRUE(matches(parse_ok("Process"), list));
    EXPECT_FALSE(matches(process, list));
}

TEST(RuleMatchTest, EitherFormOfTheCommandMatches) {
    const CapabilityRequest request{.kind = CapabilityKind::kProcessExecute,
                                    .tool = "bash",
                                    .command = "rm -rf build",
                                    .full_command = "sudo rm -rf build"};
    EXPECT_TRUE(matches(parse_ok("Bash(rm:*)"), request));
    EXPECT_TRUE(matches(parse_ok("Bash(sudo:*)", Decision::kDeny), request));
}

TEST(RuleMatchTest, OpaqueCommandsAreAllowedOnlyByExactRules) {
    CapabilityRequest request = exec_of("npm test 'oops");
    request.opaque = true;
    EXPECT_FALSE(matches(parse_ok("Bash(npm test:*)", Decision::kAllow), request));
    EXPECT_TRUE(matches(parse_ok("Bash(npm test 'oops)", Decision::kAllow), request));
    EXPECT_TRUE(matches(parse_ok("Bash", Decision::kAllow), request));
    EXPECT_TRUE(matches(parse_ok("Bash(npm test:*)", Decision::kDeny), request));
    EXPECT_TRUE(matches(parse_ok("Bash(npm test:*)", Decision::kAsk), request));
}

TEST(RuleMatchTest, CapabilityRules) {
    const CapabilityRequest api{.kind = CapabilityKind::kNetworkAccess, .host = "api.github.com"};
    const CapabilityRequest unknown{.kind = CapabilityKind::kNetworkAccess};
    EXPECT_TRUE(matches(parse_ok("network.access"), api));
    EXPECT_TRUE(matches(parse_ok("network.access"), unknown));
    EXPECT_TRUE(matches(parse_ok("network.access(*.GitHub.com)"), api));
    EXPECT_TRUE(matches(parse_ok("network.access(domain:api.github.com)"), api));
    EXPECT_FALSE(matches(parse_ok("network.access(*.github.com)"), unknown));
    EXPECT_FALSE(matches(parse_ok("network.access(github.com)"), api));

    const CapabilityRequest push{.kind = CapabilityKind::kGitModify, .subcommand = "push"};
    EXPECT_TRUE(matches(parse_ok("git.modify(push)"), push));
    EXPECT_TRUE(matches(parse_ok("git.modify(*)"), push));
    EXPECT_FALSE(matches(parse_ok("git.modify(commit)"), push));

    const CapabilityRequest outside{.kind = CapabilityKind::kFileWriteOutsideProject,
                                    .path = "/home/u/.cache/x"};
    EXPECT_TRUE(matches(parse_ok("file.write.outsideProject(~/.cache/**)"), outside));
    EXPECT_FALSE(matches(parse_ok("Edit(~/.cache/**)"), outside));
}

TEST(SubjectNameTest, RoundTrips) {
    EXPECT_STREQ(subject_name(Subject::kFileWriteOutsideProject), "file.write.outsideProject");
    EXPECT_STREQ(subject_name(Subject::kBash), "Bash");
}

}  // namespace
}  // namespace stockade::policy
