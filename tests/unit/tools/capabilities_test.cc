// Stage 2 of a call (DESIGN.md §3): what each tool's arguments ask of the policy. Pure: the
// arguments are parsed by the tool and its capabilities() read, with no workspace at all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"
#include "tools/tool.h"

namespace stockade::tools {
namespace {

using nlohmann::json;
using policy::CapabilityKind;
using policy::CapabilityRequest;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;

const policy::RequestContext kCtx{.workspace_root = "/ws/", .cwd = "", .home = "/home/u"};

std::vector<CapabilityRequest> requests(std::string_view tool, const json& args) {
    static const ToolRegistry registry;
    const Tool* t = registry.find(tool);
    EXPECT_NE(t, nullptr) << tool;
    auto call = t->parse(args);
    EXPECT_THAT(call, IsOk()) << tool << " " << args.dump();
    return call ? (*call)->capabilities(kCtx) : std::vector<CapabilityRequest>{};
}

TEST(CapabilitiesTest, TheFileReadersReadTheirPathAndSearchesTheirRoot) {
    EXPECT_EQ(requests("read", {{"file_path", "src/../src/a.cc"}}),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileRead, .tool = "read", .path = "/ws/src/a.cc"}}));
    EXPECT_EQ(requests("grep", {{"pattern", "TODO"}}),
              (std::vector<CapabilityRequest>{{.kind = CapabilityKind::kFileRead,
                                               .tool = "grep",
                                               .path = "/ws",
                                               .directory = true}}));
    EXPECT_EQ(requests("grep", {{"pattern", "x"}, {"path", "lib/"}})[0].path, "/ws/lib");
    // glob reaches no further than the literal directories its pattern starts with.
    EXPECT_EQ(requests("glob", {{"pattern", "src/**/*.ts"}})[0].path, "/ws/src");
    EXPECT_EQ(requests("glob", {{"pattern", "secrets/keys/*.pem"}, {"path", "app"}})[0].path,
              "/ws/app/secrets/keys");
    EXPECT_EQ(requests("glob", {{"pattern", "**/*.md"}})[0].path, "/ws");
    EXPECT_TRUE(requests("glob", {{"pattern", "*.md"}})[0].directory);
}

TEST(CapabilitiesTest, TheWritersWriteTheirPath) {
    EXPECT_EQ(requests("write", {{"file_path", "docs/a.md"}, {"content", "x"}}),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileWrite, .tool = "write", .path = "/ws/docs/a.md"}}));
    EXPECT_EQ(requests("edit",
                       {{"file_path", "/home/u/.bashrc"}, {"old_string", "a"}, {"new_string", "b"}})
                  .size(),
              2U);
}

TEST(CapabilitiesTest, BashIsAnalysedInItsWorkdir) {
    const auto out = requests("bash", {{"command", "cat notes.txt"}, {"workdir", "pkg"}});
    ASSERT_EQ(out.size(), 2U);
    EXPECT_EQ(out[0].command, "cat notes.txt");
    EXPECT_EQ(out[1].path, "/ws/pkg/notes.txt");
}

TEST(CapabilitiesTest, ProcessStartIsACommandOtherActionsAreTheTool) {
    const auto start = requests("process", {{"action", "start"}, {"command", "npm run dev"}});
    ASSERT_EQ(start.size(), 1U);
    EXPECT_EQ(start[0].kind, CapabilityKind::kProcessExecute);
    EXPECT_EQ(start[0].tool, "process");
    const auto list = requests("process", {{"action", "list"}});
    ASSERT_EQ(list.size(), 1U);
    EXPECT_EQ(list[0].kind, CapabilityKind::kTool);
    EXPECT_EQ(list[0].command, "list");
}

TEST(CapabilitiesTest, ArgumentsThatDoNotFitTheSchemaNeverReachThePolicy) {
    const ToolRegistry registry;
    EXPECT_THAT(registry.find("read")->parse(json::object()), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(registry.find("read")->parse({{"file_path", 3}}), HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(registry.find("webfetch"), nullptr);
}

TEST(CapabilitiesTest, BashAndProcessStartWarnOfWhatCannotBeUndone) {
    const ToolRegistry registry;
    auto bash = registry.find("bash")->parse({{"command", "rm -rf build"}});
    ASSERT_THAT(bash, IsOk());
    EXPECT_THAT((*bash)->warnings(), ::testing::ElementsAre(::testing::HasSubstr("rm -rf")));
    auto read = registry.find("read")->parse({{"file_path", "a"}});
    ASSERT_THAT(read, IsOk());
    EXPECT_TRUE((*read)->warnings().empty());
}

}  // namespace
}  // namespace stockade::tools
