#include "policy/requests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::policy {
namespace {

const RequestContext kCtx{.workspace_root = "/ws/", .cwd = "", .home = "/home/u"};

TEST(RequestsTest, AReadIsOfThePathResolvedAgainstTheCwdOrTheRoot) {
    EXPECT_EQ(file_read_request("read", "src/../src/a.cc", kCtx),
              (CapabilityRequest{
                  .kind = CapabilityKind::kFileRead, .tool = "read", .path = "/ws/src/a.cc"}));
    EXPECT_EQ(file_read_request("read", "/etc/hosts", kCtx).path, "/etc/hosts");
    EXPECT_EQ(
        file_read_request("grep", "", kCtx, true),
        (CapabilityRequest{
            .kind = CapabilityKind::kFileRead, .tool = "grep", .path = "/ws", .directory = true}));
    RequestContext in_lib = kCtx;
    in_lib.cwd = "/ws/lib";
    EXPECT_EQ(request_base(in_lib), "/ws/lib");
    EXPECT_EQ(file_read_request("read", "x.h", in_lib).path, "/ws/lib/x.h");
}

TEST(RequestsTest, AWriteBeyondTheWorkspaceAsksForThatToo) {
    EXPECT_EQ(file_write_requests("write", "docs/a.md", kCtx),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileWrite, .tool = "write", .path = "/ws/docs/a.md"}}));
    EXPECT_EQ(file_write_requests("edit", "/home/u/.bashrc", kCtx),
              (std::vector<CapabilityRequest>{
                  {.kind = CapabilityKind::kFileWrite, .tool = "edit", .path = "/home/u/.bashrc"},
                  {.kind = CapabilityKind::kFileWriteOutsideProject,
                   .tool = "edit",
                   .path = "/home/u/.bashrc",
                   .reason = "writes outside the workspace"}}));
    EXPECT_EQ(file_write_requests("write", "/tmp/scratch.txt", kCtx).size(), 1U);
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
