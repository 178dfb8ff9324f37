#include "policy/tool_requests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

using nlohmann::json;
using testing::HasErrc;
using testing::IsOk;

const RequestContext kCtx{.workspace_root = "/ws/", .cwd = "", .home = "/home/u"};

std::vector<CapabilityRequest> requests(std::string_view tool, json args) {
    auto out = tool_requests(tool, args, kCtx);
    EXPECT_THAT(out, IsOk()) << tool << " " << args.dump();
    return out ? *out : std::vector<CapabilityRequest>{};
}

TEST(ToolRequestsTest, FileReaders) {
    EXPECT_EQ(requests("read", {{"file_path", "src/../src/a.cc"}}),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileRead, .tool = "read", .path = "/ws/src/a.cc"}}));
    EXPECT_EQ(requests("read", {{"file_path", "/etc/hosts"}})[0].path, "/etc/hosts");
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

TEST(ToolRequestsTest, FileWriters) {
    EXPECT_EQ(requests("write", {{"file_path", "docs/a.md"}, {"content", "x"}}),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileWrite, .tool = "write", .path = "/ws/docs/a.md"}}));
    EXPECT_EQ(requests("edit", {{"file_path", "/home/u/.bashrc"}}),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileWrite, .tool = "edit", .path = "/home/u/.bashrc"},
                  {.kind = CapabilityKind::kFileWriteOutsideProject,
                   .tool = "edit",
                   .path = "/home/u/.bashrc",
                   .reason = "writes outside the workspace"}}));
    EXPECT_EQ(requests("write", {{"file_path", "/tmp/scratch.txt"}}).size(), 1U);
}

TEST(ToolRequestsTest, BashUsesItsWorkdir) {
    const auto out = requests("bash", {{"command", "cat notes.txt"}, {"workdir", "pkg"}});
    ASSERT_EQ(out.size(), 2U);
    EXPECT_EQ(out[0].command, "cat notes.txt");
    EXPECT_EQ(out[1].path, "/ws/pkg/notes.txt");
}

TEST(ToolRequestsTest, ProcessStartIsACommandOtherActionsAreTheTool) {
    const auto start = requests("process", {{"action", "start"}, {"command", "npm run dev"}});
    ASSERT_EQ(start.size(), 1U);
    EXPECT_EQ(start[0].kind, CapabilityKind::kProcessExecute);
    EXPECT_EQ(start[0].tool, "process");
    const auto list = requests("process", {{"action", "list"}});
    ASSERT_EQ(list.size(), 1U);
    EXPECT_EQ(list[0].kind, CapabilityKind::kTool);
    EXPECT_EQ(list[0].command, "list");
}

TEST(ToolRequestsTest, BadArguments) {
    EXPECT_THAT(tool_requests("read", json::object(), kCtx), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(tool_requests("read", {{"file_path", 3}}, kCtx), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(tool_requests("process", {{"action", "start"}}, kCtx),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(tool_requests("webfetch", json::object(), kCtx), HasErrc(Errc::kInvalidArgument));
}

TEST(PathHelpersTest, NormaliseAndWithin) {
    EXPECT_EQ(normalise_path("a/./b/../c//d/", "/ws"), "/ws/a/c/d");
    EXPECT_EQ(normalise_path("../../..", "/ws"), "/");
    EXPECT_EQ(normalise_path("/x/", "/ws"), "/x");
    EXPECT_TRUE(path_within("/ws/a", "/ws"));
    EXPECT_TRUE(path_within("/ws", "/ws"));
    EXPECT_FALSE(path_within("/ws2/a", "/ws"));
    EXPECT_TRUE(path_within("/anything", "/"));
    EXPECT_FALSE(path_within("/ws", ""));
}

}  // namespace
}  // namespace stockade::policy
