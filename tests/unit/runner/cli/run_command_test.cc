#include "runner/cli/run_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"
#include "tests/testing/run_spec.h"

namespace stockade::runner {
namespace {

using testing::HasErrc;

Result<sandbox::SandboxSpec> build(const RunOptions& flags, const CallerContext& caller) {
    return testing::build_run_spec(flags, caller);
}

class BuildRunSpecTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-spec-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        std::filesystem::create_directories(dir_ + "/ws/sub");
        std::filesystem::create_directories(dir_ + "/data");
        caller_.cwd = dir_ + "/ws/sub";
        caller_.euid = 1234;
        caller_.egid = 1234;
        caller_.environ = {"SECRET_TOKEN=hunter2", "TERM=xterm-kitty", "EDITOR=vi"};
        options_.workspace = dir_ + "/ws";
        options_.command = {"make", "test"};
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    static bool has_env(const sandbox::SandboxSpec& spec, const std::string& entry) {
        return std::find(spec.env.begin(), spec.env.end(), entry) != spec.env.end();
    }
    static bool has_env_name(const sandbox::SandboxSpec& spec, const std::string& name) {
        return std::any_of(spec.env.begin(), spec.env.end(),
                           [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
    }

    std::string dir_;
    CallerContext caller_;
    RunOptions options_;
};

TEST_F(BuildRunSpecTest, DropsTheEnvironmentExceptTheAllowlist) {
    options_.env = {"EDITOR", "MODE=ci"};
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_FALSE(has_env_name(*spec, "SECRET_TOKEN"));
    EXPECT_FALSE(has_env_name(*spec, "TERM")) << "no terminal, no TERM";
    EXPECT_TRUE(has_env(*spec, "EDITOR=vi"));
    EXPECT_TRUE(has_env(*spec, "MODE=ci"));
    EXPECT_TRUE(has_env(*spec, "HOME=/tmp"));
    EXPECT_TRUE(has_env_name(*spec, "PATH"));
}

TEST_F(BuildRunSpecTest, PassesTermOnlyWithATerminal) {
    caller_.tty_fds = {true, true, true};
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec);
    EXPECT_TRUE(has_env(*spec, "TERM=xterm-kitty"));
    EXPECT_EQ(spec->tty_fds, (std::array<bool, 3>{true, true, true}));
}

TEST_F(BuildRunSpecTest, UnprivilegedCallersMapTheirOwnIds) {
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->identity.host_uid, 1234U);
    EXPECT_EQ(spec->identity.sandbox_uid, 1000U);
    EXPECT_FALSE(spec->idmap_writable_binds);
}

TEST_F(BuildRunSpecTest, RootCallersMapToADedicatedUnprivilegedId) {
    caller_.euid = 0;
    caller_.egid = 0;
    caller_.privileged = true;
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->identity.host_uid, kDefaultHostUid);
    EXPECT_EQ(spec->identity.host_gid, kDefaultHostGid);
    EXPECT_TRUE(spec->idmap_writable_binds);
    options_.host_uid = 0;
    EXPECT_THAT(build(options_, caller_), HasErrc(Errc::kInvalidArgument));
}

TEST_F(BuildRunSpecTest, WorkspaceIsWritableAtItsOwnPathAndCwdFollowsTheCaller) {
    options_.ro = {dir_ + "/data"};
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->cwd, dir_ + "/ws/sub");
    auto ws = std::find_if(spec->binds.begin(), spec->binds.end(),
                           [&](const sandbox::Bind& b) { return b.target == dir_ + "/ws"; });
    ASSERT_NE(ws, spec->binds.end());
    EXPECT_TRUE(ws->writable);
    auto data = std::find_if(spec->binds.begin(), spec->binds.end(),
                             [&](const sandbox::Bind& b) { return b.target == dir_ + "/data"; });
    ASSERT_NE(data, spec->binds.end());
    EXPECT_FALSE(data->writable);
    EXPECT_NE(std::find(spec->writable_paths.begin(), spec->writable_paths.end(), dir_ + "/ws"),
              spec->writable_paths.end());
    caller_.cwd = dir_;
    EXPECT_EQ(build(options_, caller_)->cwd, dir_ + "/ws");
}

TEST_F(BuildRunSpecTest, BadInputIsAOneLineUsageErrorNamingTheFix) {
    struct Case {
        void (*mutate)(RunOptions&);
        const char* expect;
    };
    const Case cases[] = {
        {[](RunOptions& o) { o.workspace = "/nonexistent/ws"; }, "does not exist"},
        {[](RunOptions& o) { o.ro = {"/nonexistent/ro"}; },
         "--ro path \"/nonexistent/ro\" does not exist"},
        {[](RunOptions& o) { o.memory = "lots"; }, "--memory"},
        {[](RunOptions& o) { o.pids = "-3"; }, "--pids"},
        {[](RunOptions& o) { o.cpu = "0"; }, "--cpu"},
        {[](RunOptions& o) { o.timeout = "soon"; }, "--timeout"},
        {[](RunOptions& o) { o.network = "bridge"; }, "use none, allowlist or host"},
        {[](RunOptions& o) { o.isolation = "max"; }, "use auto, full"},
        {[](RunOptions& o) { o.env = {"BAD-NAME=1"}; }, "not a variable name"},
        {[](RunOptions& o) {
             o.image = "alpine";
             o.image_store = "/nonexistent/store";
         },
         "no image \"alpine\""},
        {[](RunOptions& o) { o.command.clear(); }, "put it after --"},
        {[](RunOptions& o) { o.workspace = "/"; }, "refusing to use /"},
    };
    for (const auto& c : cases) {
        RunOptions options = options_;
        c.mutate(options);
        auto spec = build(options, caller_);
        ASSERT_FALSE(spec) << c.expect;
        EXPECT_NE(spec.error().message.find(c.expect), std::string::npos) << spec.error().message;
        EXPECT_EQ(spec.error().message.find('\n'), std::string::npos);
    }
}

TEST_F(BuildRunSpecTest, WithoutLimitsASandboxStillHasSome) {
    caller_.memory_bytes = uint64_t{16} << 30;
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->limits.memory_bytes, uint64_t{8} << 30);
    EXPECT_TRUE(spec->limits.memory_is_default) << "never an address-space rlimit";
    EXPECT_EQ(spec->limits.pids, kDefaultPids);
    EXPECT_EQ(spec->limits.tmp_bytes, uint64_t{1} << 30);
    options_.memory = "2G";
    options_.pids = "100";
    spec = build(options_, caller_);
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->limits.memory_bytes, uint64_t{2} << 30);
    EXPECT_FALSE(spec->limits.memory_is_default);
    EXPECT_EQ(spec->limits.pids, 100U);
    EXPECT_EQ(default_memory_bytes(uint64_t{512} << 20), uint64_t{512} << 20);
}

TEST(HostedQuotasTest, FillOnlyWhatTheOptionsLeaveUnset) {
    SandboxLimits o;
    o.pids = 64;
    apply_hosted_quotas(o);
    EXPECT_EQ(o.memory_bytes, uint64_t{2} << 30);
    EXPECT_EQ(o.pids, 64U);
    EXPECT_EQ(o.cpu, 1.0);
    EXPECT_EQ(o.tmp_bytes, uint64_t{512} << 20);
    EXPECT_EQ(describe_limits(o, CallerContext{}), "memory 2G, pids 64, cpu 1, /tmp 512M");
}

}  // namespace
}  // namespace stockade::runner
