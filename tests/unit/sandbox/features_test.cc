#include "sandbox/features.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::FdLeakChecker;
using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// A host that can give every level.
HostFeatures everything() {
    return HostFeatures{
        .user_ns = true,
        .mount_ns = true,
        .pid_ns = true,
        .net_ns = true,
        .ipc_uts_cgroup_ns = true,
        .proc_mount = true,
        .pivot_root = true,
        .seccomp = true,
        .landlock = {.abi = 4, .sys_errno = 0},
        .cgroups = {.memory = CgroupVersion::kV2,
                    .pids = CgroupVersion::kV2,
                    .cpu = CgroupVersion::kV2,
                    .memory_swap = true},
        .idmapped_mounts = true,
        .pidfd = true,
        .clone3 = true,
    };
}

HostFeatures without_cgroups() {
    HostFeatures f = everything();
    f.cgroups = CgroupSupport{
        .memory = CgroupVersion::kNone,
        .pids = CgroupVersion::kNone,
        .cpu = CgroupVersion::kNone,
        .reason = "memory: cgroup v1 memory hierarchy not writable by uid 1000 (no delegation)"};
    return f;
}

HostFeatures without_userns() {
    HostFeatures f = without_cgroups();
    f.user_ns = f.mount_ns = f.pid_ns = f.net_ns = f.ipc_uts_cgroup_ns = false;
    f.proc_mount = f.pivot_root = false;
    f.userns_reason =
        "clone(CLONE_NEWUSER): EPERM (Operation not permitted) — unprivileged user namespaces "
        "are disabled (sysctl kernel.unprivileged_userns_clone=0)";
    return f;
}

HostFeatures without_landlock() {
    HostFeatures f = without_userns();
    f.landlock = {.abi = 0, .sys_errno = EOPNOTSUPP};
    return f;
}

// An older kernel (< 5.13): namespaces work, Landlock does not exist.
HostFeatures namespaces_without_landlock() {
    HostFeatures f = everything();
    f.landlock = {.abi = 0, .sys_errno = ENOSYS};
    return f;
}

HostFeatures mount_ns_denied() {
    HostFeatures f = everything();
    f.mount_ns = false;
    f.mount_ns_reason = "in a new mount namespace: EPERM (Operation not permitted)";
    return f;
}

// Inside a container that allows user namespaces but masks paths of its /proc: a new /proc is
// refused (mount_too_revealing).
HostFeatures proc_masked() {
    HostFeatures f = everything();
    f.proc_mount = false;
    f.proc_mount_reason =
        "in a new mount+pid namespace: mount /proc: EPERM (Operation not permitted)";
    return f;
}

HostFeatures pivot_root_refused() {
    HostFeatures f = everything();
    f.pivot_root = false;
    f.pivot_root_reason = "in a new mount namespace: pivot_root: EPERM (Operation not permitted)";
    return f;
}

HostFeatures without_seccomp() {
    HostFeatures f = everything();
    f.seccomp = false;
    return f;
}

struct Case {
    std::string host_name;
    HostFeatures host;
    Isolation requested;
    std::optional<Isolation> chosen;  // nullopt: kUnavailable
    std::vector<std::string> message_parts;
};

class ChooseIsolationTest : public ::testing::TestWithParam<Case> {};

TEST_P(ChooseIsolationTest, ResolvesOrExplains) {
    const Case& c = GetParam();
    Result<Isolation> r = choose_isolation(c.requested, c.host);
    if (c.chosen) {
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(*r, *c.chosen) << isolation_name(*r);
        return;
    }
    ASSERT_THAT(r, HasErrc(Errc::kUnavailable));
    for (const std::string& part : c.message_parts) {
        EXPECT_THAT(r.error().message, HasSubstr(part));
    }
    EXPECT_THAT(r.error().message, HasSubstr(". Fix: "));
}

INSTANTIATE_TEST_SUITE_P(
    Hosts, ChooseIsolationTest,
    ::testing::Values(
        Case{"everything", everything(), Isolation::kAuto, Isolation::kFull, {}},
        Case{"everything", everything(), Isolation::kFull, Isolation::kFull, {}},
        Case{"everything", everything(), Isolation::kNamespaces, Isolation::kNamespaces, {}},
        Case{"everything", everything(), Isolation::kLandlock, Isolation::kLandlock, {}},
        Case{"everything", everything(), Isolation::kNone, Isolation::kNone, {}},
        Case{"no_cgroups", without_cgroups(), Isolation::kAuto, Isolation::kNamespaces, {}},
        Case{"no_cgroups",
             without_cgroups(),
             Isolation::kFull,
             std::nullopt,
             {"full isolation is not available: cgroups: memory: cgroup v1 memory hierarchy not "
              "writable by uid 1000",
              "--isolation=namespaces"}},
        Case{"no_userns", without_userns(), Isolation::kAuto, Isolation::kLandlock, {}},
        Case{"no_userns",
             without_userns(),
             Isolation::kNamespaces,
             std::nullopt,
             {"namespaces isolation is not available: user namespace: clone(CLONE_NEWUSER): EPERM",
              "kernel.unprivileged_userns_clone", "--isolation=landlock"}},
        Case{"no_userns",
             without_userns(),
             Isolation::kFull,
             std::nullopt,
             {"full isolation is not available: user namespace"}},
        Case{"no_userns", without_userns(), Isolation::kNone, Isolation::kNone, {}},
        Case{"mount_ns_denied", mount_ns_denied(), Isolation::kAuto, Isolation::kLandlock, {}},
        Case{"mount_ns_denied",
             mount_ns_denied(),
             Isolation::kFull,
             std::nullopt,
             {"full isolation is not available: mount namespace: in a new mount namespace: EPERM"}},
        Case{"proc_masked", proc_masked(), Isolation::kAuto, Isolation::kLandlock, {}},
        Case{"proc_masked",
             proc_masked(),
             Isolation::kNamespaces,
             std::nullopt,
             {"namespaces isolation is not available: new /proc: in a new mount+pid namespace: "
              "mount /proc: EPERM"}},
        Case{
            "pivot_root_refused", pivot_root_refused(), Isolation::kAuto, Isolation::kLandlock, {}},
        Case{"pivot_root_refused",
             pivot_root_refused(),
             Isolation::kFull,
             std::nullopt,
             {"full isolation is not available: pivot_root: in a new mount namespace: pivot_root: "
              "EPERM"}},
        Case{"no_landlock",
             without_landlock(),
             Isolation::kAuto,
             std::nullopt,
             {"no isolation level is available", "Landlock: landlock_create_ruleset: EOPNOTSUPP",
              "--isolation=none"}},
        Case{"no_landlock",
             without_landlock(),
             Isolation::kLandlock,
             std::nullopt,
             {"landlock isolation is not available: Landlock", "lsm="}},
        Case{"no_landlock", without_landlock(), Isolation::kNone, Isolation::kNone, {}},
        Case{"old_kernel", namespaces_without_landlock(), Isolation::kAuto, Isolation::kFull, {}},
        Case{"old_kernel",
             namespaces_without_landlock(),
             Isolation::kLandlock,
             std::nullopt,
             {"landlock isolation is not available: Landlock"}},
        Case{"no_seccomp",
             without_seccomp(),
             Isolation::kAuto,
             std::nullopt,
             {"no isolation level is available", "seccomp: not available"}},
        Case{"no_seccomp",
             without_seccomp(),
             Isolation::kNamespaces,
             std::nullopt,
             {"namespaces isolation is not available: seccomp"}}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
        return fmt::format("{}_{}_{}", param_info.index, param_info.param.host_name,
                           isolation_name(param_info.param.requested));
    });

TEST(HostFeaturesTest, ChecksGiveOneLinePerProbeWithAReasonWhenFailing) {
    for (const HostFeatures& f : {everything(), without_landlock(), HostFeatures{}}) {
        std::vector<FeatureCheck> checks = f.checks();
        std::vector<std::string> names;
        for (const FeatureCheck& check : checks) {
            names.push_back(check.name);
            EXPECT_THAT(check.detail, Not(IsEmpty())) << check.name;
        }
        EXPECT_THAT(names,
                    ::testing::ElementsAre("user namespace", "mount namespace", "pid namespace",
                                           "network namespace", "ipc/uts/cgroup namespaces",
                                           "new /proc", "pivot_root", "seccomp", "landlock",
                                           "cgroups", "idmapped mounts", "pidfd", "clone3"));
    }
    std::vector<FeatureCheck> failing = without_landlock().checks();
    EXPECT_FALSE(failing[0].ok);
    EXPECT_THAT(failing[0].detail, StartsWith("clone(CLONE_NEWUSER): EPERM"));
    EXPECT_FALSE(failing[5].ok);
    EXPECT_FALSE(failing[8].ok);
    EXPECT_THAT(failing[8].detail, HasSubstr("EOPNOTSUPP"));
    EXPECT_FALSE(failing[9].ok);
    EXPECT_THAT(failing[9].detail, AllOf(HasSubstr("memory none"), HasSubstr("no delegation")));
    for (const FeatureCheck& check : everything().checks()) {
        EXPECT_TRUE(check.ok) << check.name;
    }
}

// What doctor, run and serve say when auto takes a weaker level: why the level above is missing.
TEST(HostFeaturesTest, AutoShortfallNamesWhyTheStrongerLevelIsMissing) {
    EXPECT_EQ(auto_shortfall(Isolation::kFull, everything()), "");
    EXPECT_THAT(auto_shortfall(Isolation::kNamespaces, without_cgroups()),
                AllOf(StartsWith("full isolation is not available: cgroups: "),
                      HasSubstr("no delegation"), HasSubstr("Fix: ")));
    EXPECT_THAT(auto_shortfall(Isolation::kLandlock, without_userns()),
                AllOf(StartsWith("namespaces isolation is not available: user namespace: "
                                 "clone(CLONE_NEWUSER): EPERM"),
                      HasSubstr("Fix: ")));
    EXPECT_THAT(auto_shortfall(Isolation::kLandlock, proc_masked()),
                StartsWith("namespaces isolation is not available: new /proc: "));
    EXPECT_EQ(auto_shortfall(Isolation::kNone, without_landlock()), "");
}

// In a container (the caller already under a seccomp filter), the fix names the container's
// settings first: its seccomp profile and masked /proc are what refuse there.
TEST(HostFeaturesTest, InAContainerTheFixNamesTheContainersSettings) {
    HostFeatures masked = proc_masked();
    masked.caller_seccomp_filtered = true;
    const std::string shortfall = auto_shortfall(Isolation::kLandlock, masked);
    EXPECT_THAT(shortfall, AllOf(StartsWith("namespaces isolation is not available: new /proc: "),
                                 HasSubstr("seccomp-stockade-nested.json"),
                                 HasSubstr("procMount: Unmasked"), HasSubstr("unmask=ALL")));
    EXPECT_THAT(auto_shortfall(Isolation::kLandlock, proc_masked()),
                AllOf(HasSubstr("sysctl"), Not(HasSubstr("seccomp-stockade-nested.json"))));

    HostFeatures nested = without_cgroups();
    nested.caller_seccomp_filtered = true;
    EXPECT_THAT(auto_shortfall(Isolation::kNamespaces, nested),
                AllOf(HasSubstr("container's own cgroup limits"),
                      HasSubstr("--isolation=namespaces"), Not(HasSubstr("systemd-run"))));
}

TEST(HostFeaturesTest, IdmapIsNotNeededForUnprivilegedCallers) {
    HostFeatures f = everything();
    f.idmapped_mounts = false;
    f.idmap_required = false;
    f.idmap_reason = "not needed: unprivileged callers run as their own uid";
    EXPECT_TRUE(f.checks()[10].ok);
}

TEST(HostFeaturesTest, ProbeLeavesNoChildOrDescriptorBehind) {
    std::vector<FeatureCheck> checks;
    {
        FdLeakChecker fd_check;
        HostFeatures f = probe_host_features();
        checks = f.checks();
        // Every probe's verdict is explained, whatever this host supports.
        for (const FeatureCheck& check : checks) {
            EXPECT_THAT(check.detail, Not(IsEmpty())) << check.name;
        }
        // A pure function of the probe: auto either resolves or says why nothing is available.
        Result<Isolation> level = choose_isolation(Isolation::kAuto, f);
        if (!level) {
            EXPECT_THAT(level.error().message, HasSubstr("Fix: "));
        }
    }
    errno = 0;
    EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    for (const FeatureCheck& check : checks) {
        std::printf("%-28s %-4s %s\n", check.name.c_str(), check.ok ? "ok" : "FAIL",
                    check.detail.c_str());
    }
}

}  // namespace
}  // namespace stockade::sandbox
