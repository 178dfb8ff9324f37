// make_sandbox_spec: a typed SandboxConfig into the spec the launcher starts, for `stockade run`'s
// command and for a session's worker alike, with no file system access of its own.
#include "runner/session/sandbox_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using sandbox::Isolation;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::IsOk;
using ::testing::Not;

// A fresh directory held open, its path removed: the descriptor is what counts, the path only
// names it.
HostDir held_dir(const char* prefix) {
    std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    auto opened = HostDir::open(tmpl);
    EXPECT_TRUE(opened);
    (void)::rmdir(tmpl.c_str());
    return opened ? *opened : HostDir();
}

// The workspace is a directory held open (left for the test run's end); the other paths exist
// nowhere: make_sandbox_spec must not look at them.
const HostDir& workspace_dir() {
    static const HostDir dir = held_dir("stockade-spec-ws");
    return dir;
}
const std::string& ws_path() {
    static const std::string path = workspace_dir().path();
    return path;
}

SandboxConfig config_of(std::variant<CommandProcess, WorkerProcess> process) {
    SandboxConfig config;
    config.workspace = workspace_dir();
    config.workspace_uid = 4242;
    config.workspace_gid = 4343;
    config.image = images::Image{
        .name = "test",
        .binds = {sandbox::Bind{.source = "/nonexistent/usr", .target = "/usr", .optional = true}},
        .symlinks = {sandbox::Symlink{.target = "/bin", .link_text = "usr/bin"}},
        .readable_paths = {"/usr", "/bin"}};
    config.ro = {"/nonexistent/tools"};
    config.rw = {"/nonexistent/cache"};
    config.env = {"MODE=ci", "MODE=release"};
    config.process = std::move(process);
    return config;
}

CallerContext caller() {
    CallerContext c;
    c.cwd = std::string(ws_path()) + "/src";
    c.euid = 1234;
    c.egid = 1235;
    c.environ = {"PATH=/nonexistent/tools/bin:/home/me/bin", "TERM=xterm-kitty", "SECRET=x"};
    c.tty_fds = {true, true, false};
    c.memory_bytes = uint64_t{8} << 30;
    return c;
}

// Root with CAP_SYS_ADMIN: its sandbox user maps to a host id of its own.
CallerContext root_caller() {
    CallerContext c = caller();
    c.euid = 0;
    c.egid = 0;
    c.privileged = true;
    return c;
}

bool has_env(const sandbox::SandboxSpec& spec, const std::string& entry) {
    return std::find(spec.env.begin(), spec.env.end(), entry) != spec.env.end();
}

TEST(MakeSandboxSpecTest, ACommandRunsUnderInitWithTheCallersTerminal) {
    auto spec = make_sandbox_spec(
        config_of(CommandProcess{.argv = {"make"}, .cwd = "", .timeout = std::chrono::seconds(3)}),
        caller(), Isolation::kFull);
    ASSERT_THAT(spec, IsOk());
    EXPECT_EQ(spec->isolation, Isolation::kFull);
    EXPECT_THAT(spec->argv, ElementsAre("make"));
    EXPECT_TRUE(spec->init);
    EXPECT_FALSE(spec->commands_cgroup);
    EXPECT_EQ(spec->exec_fd, -1);
    EXPECT_THAT(spec->pass_fds, IsEmpty());
    EXPECT_EQ(spec->cwd, std::string(ws_path()) + "/src") << "the caller's directory, inside";
    EXPECT_EQ(spec->tty_fds, (std::array<bool, 3>{true, true, false}));
    EXPECT_TRUE(has_env(*spec, "TERM=xterm-kitty"));
    EXPECT_EQ(spec->timeout, std::chrono::milliseconds(3000));
}

TEST(MakeSandboxSpecTest, AWorkerIsPid1WithItsDescriptorsAndNoTerminal) {
    auto spec = make_sandbox_spec(config_of(WorkerProcess{.argv = {"stockade-worker", "__worker"},
                                                          .exec_fd = 7,
                                                          .channel_fd = 8,
                                                          .null_fd = 9,
                                                          .rg_fds = {20, 21, 22}}),
                                  caller(), Isolation::kNamespaces);
    ASSERT_THAT(spec, IsOk());
    EXPECT_THAT(spec->argv, ElementsAre("stockade-worker", "__worker"));
    EXPECT_FALSE(spec->init) << "the worker is pid 1 and reaps";
    EXPECT_TRUE(spec->commands_cgroup);
    EXPECT_EQ(spec->exec_fd, 7);
    EXPECT_THAT(spec->pass_fds, ElementsAre(8, 20, 21, 22)) << "the channel, then a carried rg";
    EXPECT_EQ(spec->stdio, (std::array<int, 3>{9, 9, -1}));
    EXPECT_EQ(spec->cwd, ws_path());
    EXPECT_EQ(spec->tty_fds, (std::array<bool, 3>{}));
    EXPECT_THAT(spec->env, Not(Contains(HasSubstr("TERM="))));
    EXPECT_FALSE(spec->timeout);
}

TEST(MakeSandboxSpecTest, TheConfigsBindsEnvironmentAndLimitsReachTheSpec) {
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    config.limits.pids = 64;
    config.masked_paths = {std::string(ws_path()) + "/.env"};
    config.read_only_paths = {"/nonexistent/tools/bin"};
    auto spec = make_sandbox_spec(config, caller(), Isolation::kFull);
    ASSERT_THAT(spec, IsOk());
    std::vector<std::string> targets;
    for (const sandbox::Bind& bind : spec->binds) {
        targets.push_back(bind.target + (bind.writable ? " rw" : " ro"));
    }
    EXPECT_THAT(targets, ElementsAre("/usr ro", std::string(ws_path()) + " rw",
                                     "/nonexistent/tools ro", "/nonexistent/cache rw"));
    EXPECT_THAT(spec->symlinks, ElementsAre(::testing::Field(&sandbox::Symlink::target, "/bin")));
    EXPECT_TRUE(has_env(*spec, "MODE=release")) << "a later entry wins";
    EXPECT_FALSE(has_env(*spec, "MODE=ci"));
    EXPECT_THAT(spec->env, Not(Contains(HasSubstr("SECRET"))));
    EXPECT_TRUE(has_env(*spec,
                        "PATH=/nonexistent/tools/bin:/usr/local/bin:/usr/bin:/bin:"
                        "/usr/local/sbin:/usr/sbin:/sbin"))
        << "a PATH directory a bind brings in, then the default";
    EXPECT_EQ(spec->limits.pids, 64U);
    EXPECT_EQ(spec->limits.memory_bytes, uint64_t{4} << 30) << "half of the host's";
    EXPECT_TRUE(spec->limits.memory_is_default);
    EXPECT_THAT(spec->masked_paths, ElementsAre(std::string(ws_path()) + "/.env"));
    EXPECT_THAT(spec->read_only_paths, ElementsAre("/nonexistent/tools/bin"));
    EXPECT_EQ(spec->identity.host_uid, 1234U);
    EXPECT_FALSE(spec->idmap_writable_binds);
}

// The binds made from descriptors: "TARGET rw|ro" and the descriptor.
std::vector<std::pair<std::string, int>> binds_by_fd(const sandbox::SandboxSpec& spec) {
    std::vector<std::pair<std::string, int>> by_fd;
    for (const sandbox::Bind& bind : spec.binds) {
        if (bind.source_fd >= 0) {
            by_fd.emplace_back(bind.target + (bind.writable ? " rw" : " ro"), bind.source_fd);
        }
    }
    return by_fd;
}

TEST(MakeSandboxSpecTest, TheWorkspaceAndTheSpillAreBoundByTheirDescriptors) {
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    config.spill = workspace_dir();  // any directory held open will do
    auto spec = make_sandbox_spec(config, caller(), Isolation::kFull);
    ASSERT_THAT(spec, IsOk());
    EXPECT_THAT(binds_by_fd(*spec), ElementsAre(std::pair{ws_path() + " rw", workspace_dir().fd()},
                                                std::pair{ws_path() + " ro", workspace_dir().fd()}))
        << "no other bind is a descriptor; the operator's --ro/--rw paths are bound by name";
    // A config whose workspace was never opened cannot become a spec: nothing may bind a path
    // that a sandbox could have changed since it was checked.
    config.workspace = HostDir();
    EXPECT_THAT(make_sandbox_spec(config, caller(), Isolation::kFull),
                HasErrc(Errc::kInvalidArgument));
}

// serve --http's tenants: the workspace and the spill directory at neutral paths inside, and
// every path the sandbox is given (masks, Landlock's, the working directory) in that view.
TEST(MakeSandboxSpecTest, AViewShowsTheWorkspaceAndTheSpillAtNeutralPaths) {
    static const HostDir spill = held_dir("stockade-spec-spill");
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    config.spill = spill;
    config.workspace_view = "/workspace";
    config.spill_view = "/stockade/tool-output";
    config.masked_paths = {ws_path() + "/.env"};
    config.read_only_paths = {ws_path() + "/.git/hooks"};

    EXPECT_EQ(config.inside(ws_path()), "/workspace");
    EXPECT_EQ(config.inside(ws_path() + "/src/a.c"), "/workspace/src/a.c");
    EXPECT_EQ(config.inside(ws_path() + "-sibling/a"), ws_path() + "-sibling/a");
    EXPECT_EQ(config.inside(spill.path() + "/p1.log"), "/stockade/tool-output/p1.log");
    EXPECT_EQ(config.inside("/etc/hosts"), "/etc/hosts");
    EXPECT_EQ(config.outside("/workspace/src"), ws_path() + "/src");
    EXPECT_EQ(config.outside("/stockade/tool-output/p1.log"), spill.path() + "/p1.log");
    EXPECT_EQ(config.outside("/workspaces"), "/workspaces");

    auto spec = make_sandbox_spec(config, caller(), Isolation::kFull);
    ASSERT_THAT(spec, IsOk());
    for (const sandbox::Bind& bind : spec->binds) {
        EXPECT_NE(bind.target, ws_path()) << "the host path is not shown";
    }
    EXPECT_THAT(binds_by_fd(*spec),
                ElementsAre(std::pair{std::string("/workspace rw"), workspace_dir().fd()},
                            std::pair{std::string("/stockade/tool-output ro"), spill.fd()}));
    EXPECT_THAT(spec->masked_paths, ElementsAre("/workspace/.env"));
    EXPECT_THAT(spec->read_only_paths, ElementsAre("/workspace/.git/hooks"));
    EXPECT_THAT(spec->writable_paths, Contains("/workspace"));
    EXPECT_EQ(spec->cwd, "/workspace/src") << "the caller's directory, as the sandbox sees it";

    // Without a mount namespace nothing can be shown elsewhere: refused, not run on host paths.
    EXPECT_THAT(make_sandbox_spec(config, caller(), Isolation::kLandlock),
                HasErrc(Errc::kUnavailable));
}

TEST(MakeSandboxSpecTest, TheLevelDecidesLandlocksReadsAndAPrivilegedCallersIds) {
    const SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    const CallerContext root = root_caller();
    auto full = make_sandbox_spec(config, root, Isolation::kFull);
    ASSERT_THAT(full, IsOk());
    EXPECT_THAT(full->readable_paths, IsEmpty()) << "the mount view confines reads";
    EXPECT_EQ(full->identity.host_uid, kDefaultHostUid);
    EXPECT_TRUE(full->idmap_writable_binds);

    auto landlock = make_sandbox_spec(config, root, Isolation::kLandlock);
    ASSERT_THAT(landlock, IsOk());
    EXPECT_THAT(landlock->readable_paths,
                ElementsAre("/usr", "/bin", ws_path(), "/tmp", "/dev", "/proc",
                            "/nonexistent/tools", "/nonexistent/cache"));
    EXPECT_EQ(landlock->identity.host_uid, 4242U) << "no idmapped mount: the workspace's owner";
    EXPECT_EQ(landlock->identity.host_gid, 4343U);
}

// Root inside a container's user namespace (podman --uidmap, Kubernetes hostUsers: false) maps
// its sandboxes to ids its own map holds: the defaults lie outside it, and the kernel would
// refuse them.
TEST(MakeSandboxSpecTest, RootInAContainersNamespaceMapsSandboxesInsideItsOwnMap) {
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    config.image =
        images::Image{.name = "stored", .tree = images::HeldTree{.dir = workspace_dir()}};
    CallerContext root = root_caller();
    root.own_map_ids = HostIdRange{.first = 32767, .count = 32767};
    config.workspace_uid = 0;
    config.workspace_gid = 0;
    auto spec = make_sandbox_spec(config, root, Isolation::kFull);
    ASSERT_THAT(spec, IsOk());
    EXPECT_EQ(spec->identity.host_uid, 65533U);
    EXPECT_EQ(spec->identity.host_gid, 65533U);
    EXPECT_EQ(spec->identity.image_root_host_id, 65532U);
    EXPECT_FALSE(spec->idmap_writable_binds) << "a container's namespace idmaps no host mount";

    // A workspace of an unprivileged owner: the sandbox user is that owner, as at landlock.
    config.workspace_uid = 1000;
    config.workspace_gid = 1001;
    auto owned = make_sandbox_spec(config, root, Isolation::kFull);
    ASSERT_THAT(owned, IsOk());
    EXPECT_EQ(owned->identity.host_uid, 1000U);
    EXPECT_EQ(owned->identity.host_gid, 1001U);
    EXPECT_EQ(session_host_ids(root), (HostIdRange{.first = 32767, .count = 32765}));
    EXPECT_EQ(session_host_ids(root_caller()), HostIdRange{});
}

TEST(MakeSandboxSpecTest, AStoredImagesRootIsRootInsideOnlyForAPrivilegedCaller) {
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    config.image =
        images::Image{.name = "stored", .tree = images::HeldTree{.dir = workspace_dir()}};
    const CallerContext root = root_caller();
    auto privileged = make_sandbox_spec(config, root, Isolation::kFull);
    ASSERT_THAT(privileged, IsOk());
    EXPECT_EQ(privileged->identity.image_root_host_id, kImageRootHostId);
    EXPECT_NE(privileged->identity.host_uid, kImageRootHostId);

    auto user = make_sandbox_spec(config, caller(), Isolation::kFull);
    ASSERT_THAT(user, IsOk());
    EXPECT_EQ(user->identity.image_root_host_id, 0U) << "an unprivileged caller maps one id";

    // The host image's files are the host's: its root is never mapped.
    auto host =
        make_sandbox_spec(config_of(CommandProcess{.argv = {"true"}}), root, Isolation::kFull);
    ASSERT_THAT(host, IsOk());
    EXPECT_EQ(host->identity.image_root_host_id, 0U);

    // An image build's steps are root inside already, mapped to the builder's id.
    config.sandbox_root = true;
    auto build = make_sandbox_spec(config, root, Isolation::kFull);
    ASSERT_THAT(build, IsOk());
    EXPECT_EQ(build->identity.image_root_host_id, 0U);
}

TEST(MakeSandboxSpecTest, ConfigurationsNoLaunchMayGetAreRefused) {
    SandboxConfig config = config_of(CommandProcess{.argv = {"true"}});
    CallerContext root = caller();
    root.euid = 0;
    root.privileged = true;
    config.host_uid = 0;
    EXPECT_THAT(make_sandbox_spec(config, root, Isolation::kFull), HasErrc(Errc::kInvalidArgument));
    config.host_uid.reset();
    const std::vector<std::string> bad = {"/etc/shadow", "relative/.env",
                                          std::string(ws_path()) + "/a/../.env", ""};
    for (const std::string& path : bad) {
        config.masked_paths = {path};
        auto spec = make_sandbox_spec(config, root, Isolation::kFull);
        ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument)) << path;
        EXPECT_THAT(spec.error().message, HasSubstr("cannot be protected"));
    }
}

TEST(DescribeLimitsTest, NamesEachLimitAsAnOperatorWouldTypeIt) {
    CallerContext c;
    c.memory_bytes = uint64_t{16} << 30;
    EXPECT_EQ(describe_limits(SandboxLimits{}, c),
              "memory 8.0G (half of this host's, where a memory cgroup applies), pids 4096, cpu "
              "all, /tmp 1G");
    EXPECT_EQ(
        describe_limits(
            SandboxLimits{
                .memory_bytes = uint64_t{1536} << 20, .pids = 10, .cpu = 0.5, .tmp_bytes = 1000},
            c),
        "memory 1536M, pids 10, cpu 0.5, /tmp 1000");
}

}  // namespace
}  // namespace stockade::runner
