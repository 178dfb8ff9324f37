#include "sandbox/cgroup_paths.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::HasErrc;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A hybrid host: v1 controllers under /sys/fs/cgroup/<name>, an empty cgroup2 at .../unified.
constexpr std::string_view kHybridMountinfo =
    "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "
    "rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

constexpr std::string_view kHybridProcCgroup =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "4:memory:/process_api/b61f358666be33547e6c82f73fe3a7bc\n"
    "1:cpu:/\n"
    "0::/\n";

// A pure cgroup v2 host (systemd), with optional fields before the separator.
constexpr std::string_view kV2Mountinfo =
    "26 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

constexpr std::string_view kV2ProcCgroup =
    "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n";

TEST(CgroupPathsTest, ParsesHybridMountinfo) {
    std::vector<CgroupMount> mounts = parse_cgroup_mounts(kHybridMountinfo);
    ASSERT_EQ(mounts.size(), 6U);
    EXPECT_EQ(mounts[0], (CgroupMount{.mount_point = "/sys/fs/cgroup/cpu",
                                      .root = "/",
                                      .v2 = false,
                                      .controllers = {"cpu"}}));
    EXPECT_THAT(mounts[4].controllers, ElementsAre("name=systemd"));
    EXPECT_EQ(
        mounts[5],
        (CgroupMount{
            .mount_point = "/sys/fs/cgroup/unified", .root = "/", .v2 = true, .controllers = {}}));
    ASSERT_NE(find_v1_mount(mounts, "memory"), nullptr);
    EXPECT_EQ(find_v1_mount(mounts, "memory")->mount_point, "/sys/fs/cgroup/memory");
    EXPECT_EQ(find_v1_mount(mounts, "blkio"), nullptr);
    ASSERT_NE(find_v2_mount(mounts), nullptr);
    EXPECT_EQ(find_v2_mount(mounts)->mount_point, "/sys/fs/cgroup/unified");
}

TEST(CgroupPathsTest, ParsesCombinedV1ControllersAndEscapes) {
    auto mount = parse_cgroup_mount(
        "30 25 0:27 /docker/abc /sys/fs/cgroup/cpu\\040acct ro,nosuid - cgroup cgroup "
        "ro,cpu,cpuacct");
    ASSERT_TRUE(mount.has_value());
    EXPECT_EQ(*mount, (CgroupMount{.mount_point = "/sys/fs/cgroup/cpu acct",
                                   .root = "/docker/abc",
                                   .v2 = false,
                                   .controllers = {"cpu", "cpuacct"}}));
}

TEST(CgroupPathsTest, ParsesPureV2Mountinfo) {
    std::vector<CgroupMount> mounts = parse_cgroup_mounts(kV2Mountinfo);
    ASSERT_EQ(mounts.size(), 1U);
    EXPECT_EQ(
        mounts[0],
        (CgroupMount{.mount_point = "/sys/fs/cgroup", .root = "/", .v2 = true, .controllers = {}}));
    EXPECT_EQ(find_v1_mount(mounts, "memory"), nullptr);
}

TEST(CgroupPathsTest, IgnoresOtherAndMalformedLines) {
    EXPECT_FALSE(parse_cgroup_mount("22 1 253:1 / / rw shared:1 - ext4 /dev/vda1 rw"));
    EXPECT_FALSE(parse_cgroup_mount("41 31 0:38 / /sys/fs/cgroup/unified rw cgroup2 cgroup2 rw"));
    EXPECT_FALSE(parse_cgroup_mount(""));
    EXPECT_FALSE(parse_cgroup_mount("garbage"));
}

TEST(CgroupPathsTest, ParsesProcCgroupOnHybridHost) {
    std::vector<CgroupMembership> self = parse_proc_cgroup(kHybridProcCgroup);
    ASSERT_EQ(self.size(), 5U);
    EXPECT_EQ(self[2], (CgroupMembership{.hierarchy_id = 4,
                                         .controllers = {"memory"},
                                         .path = "/process_api/b61f358666be33547e6c82f73fe3a7bc"}));
    EXPECT_EQ(find_v1_path(self, "memory"), "/process_api/b61f358666be33547e6c82f73fe3a7bc");
    EXPECT_EQ(find_v1_path(self, "pids"), "/");
    EXPECT_EQ(find_v1_path(self, "blkio"), std::nullopt);
    EXPECT_EQ(find_v2_path(self), "/");
}

TEST(CgroupPathsTest, ParsesProcCgroupOnV2Host) {
    std::vector<CgroupMembership> self = parse_proc_cgroup(kV2ProcCgroup);
    ASSERT_EQ(self.size(), 1U);
    EXPECT_THAT(self[0].controllers, IsEmpty());
    EXPECT_EQ(find_v2_path(self),
              "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope");
    EXPECT_EQ(find_v1_path(self, "memory"), std::nullopt);
}

TEST(CgroupPathsTest, ParsesCombinedControllersAndColonsInPath) {
    std::vector<CgroupMembership> self = parse_proc_cgroup("3:cpu,cpuacct:/a:b\n");
    ASSERT_EQ(self.size(), 1U);
    EXPECT_EQ(self[0], (CgroupMembership{
                           .hierarchy_id = 3, .controllers = {"cpu", "cpuacct"}, .path = "/a:b"}));
}

TEST(CgroupPathsTest, MapsCgroupPathToDirectory) {
    CgroupMount v2{.mount_point = "/sys/fs/cgroup", .root = "/", .v2 = true, .controllers = {}};
    EXPECT_EQ(cgroup_dir(v2, "/user.slice/a.scope"), "/sys/fs/cgroup/user.slice/a.scope");
    EXPECT_EQ(cgroup_dir(v2, "/"), "/sys/fs/cgroup");
    // Seen from outside our cgroup namespace.
    EXPECT_EQ(cgroup_dir(v2, "/../../x"), std::nullopt);

    CgroupMount docker{.mount_point = "/sys/fs/cgroup/memory",
                       .root = "/docker/abc",
                       .v2 = false,
                       .controllers = {"memory"}};
    EXPECT_EQ(cgroup_dir(docker, "/docker/abc"), "/sys/fs/cgroup/memory");
    EXPECT_EQ(cgroup_dir(docker, "/docker/abc/sub"), "/sys/fs/cgroup/memory/sub");
    EXPECT_EQ(cgroup_dir(docker, "/docker/abcd"), std::nullopt);
    EXPECT_EQ(cgroup_dir(docker, "/other"), std::nullopt);
}

TEST(CgroupPathsTest, ParentDir) {
    EXPECT_EQ(parent_dir("/sys/fs/cgroup/a.slice/b.scope"), "/sys/fs/cgroup/a.slice");
    EXPECT_EQ(parent_dir("/a/"), "/");
    EXPECT_EQ(parent_dir("/"), std::nullopt);
    EXPECT_EQ(parent_dir(""), std::nullopt);
}

TEST(CgroupPathsTest, ParsesControllerLists) {
    EXPECT_THAT(parse_controller_list("cpuset cpu io memory hugetlb pids rdma misc\n"),
                ElementsAre("cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"));
    EXPECT_THAT(parse_controller_list("hugetlb\n"), ElementsAre("hugetlb"));
    EXPECT_THAT(parse_controller_list("\n"), IsEmpty());
    EXPECT_TRUE(contains_controller({"cpu", "memory"}, "memory"));
    EXPECT_FALSE(contains_controller({"cpuset"}, "cpu"));
}

TEST(CgroupPathsTest, ParsesPidLists) {
    EXPECT_THAT(parse_pid_list("12\n345\n"), ElementsAre(12, 345));
    EXPECT_THAT(parse_pid_list(""), IsEmpty());
    EXPECT_THAT(parse_pid_list("x\n0\n7"), ElementsAre(7));
}

TEST(CgroupPathsTest, ParsesKeyedValues) {
    constexpr std::string_view kEvents =
        "low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\noom_group_kill 0\n";
    EXPECT_EQ(parse_keyed_value(kEvents, "oom_kill"), 2U);
    EXPECT_EQ(parse_keyed_value(kEvents, "oom"), 1U);
    EXPECT_EQ(parse_keyed_value(kEvents, "missing"), std::nullopt);
    constexpr std::string_view kOomControl = "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n";
    EXPECT_EQ(parse_keyed_value(kOomControl, "oom_kill"), 0U);
    EXPECT_EQ(parse_keyed_value(kOomControl, "under_oom"), 0U);
}

TEST(CgroupPathsTest, NamesLeavesAndRecognisesThem) {
    EXPECT_EQ(leaf_name(4242, 7), "run-4242-7");
    EXPECT_EQ(parse_leaf_pid("run-4242-7"), 4242);
    EXPECT_EQ(parse_leaf_pid("run-4242"), std::nullopt);
    EXPECT_EQ(parse_leaf_pid("run-x-1"), std::nullopt);
    EXPECT_EQ(parse_leaf_pid("run-0-1"), std::nullopt);
    EXPECT_EQ(parse_leaf_pid("probe-4242-1"), std::nullopt);
    EXPECT_EQ(parse_leaf_pid("run-12-3-4"), std::nullopt);
}

TEST(CgroupPathsTest, BuildsCpuLimits) {
    EXPECT_EQ(cpu_max_value(0.5).value(), "50000 100000");
    EXPECT_EQ(cpu_max_value(2).value(), "200000 100000");
    EXPECT_EQ(cpu_quota_us(0.5).value(), 50000U);
    EXPECT_EQ(cpu_quota_us(0.001).value(), 1000U);  // the kernel's minimum quota
    EXPECT_THAT(cpu_quota_us(0), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(cpu_quota_us(-1), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(cpu_max_value(std::numeric_limits<double>::quiet_NaN()),
                HasErrc(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace stockade::sandbox
