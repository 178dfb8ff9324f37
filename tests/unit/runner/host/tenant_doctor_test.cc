#include "runner/host/tenant_doctor.h"

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::runner {
namespace {

using sandbox::CgroupSupport;
using sandbox::CgroupVersion;
using sandbox::HostFeatures;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// A host that gives level full, with memory and pids delegated on v2 and no cpu controller.
HostFeatures full_host() {
    HostFeatures f{};
    f.user_ns = f.mount_ns = f.pid_ns = f.net_ns = f.ipc_uts_cgroup_ns = true;
    f.proc_mount = f.pivot_root = true;
    f.seccomp = true;
    f.landlock = {.abi = 4, .sys_errno = 0};
    f.cgroups =
        CgroupSupport{.memory = CgroupVersion::kV2,
                      .pids = CgroupVersion::kV2,
                      .cpu = CgroupVersion::kNone,
                      .memory_swap = true,
                      .reason = "cpu: not in cgroup.subtree_control of the delegated cgroup",
                      .v2_base = "/sys/fs/cgroup/user.slice/stockade"};
    f.idmapped_mounts = f.pidfd = f.clone3 = true;
    return f;
}

HostFeatures namespaces_host() {
    HostFeatures f = full_host();
    f.cgroups = CgroupSupport{.reason = "memory, pids: no cgroup2 file system is mounted"};
    return f;
}

HostFeatures landlock_host() {
    HostFeatures f = namespaces_host();
    f.user_ns = false;
    f.userns_reason = "clone(CLONE_NEWUSER): EPERM (Operation not permitted)";
    return f;
}

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "alice:x:1000:1000:Alice:/home/alice:/bin/bash\n"
    "intruder:x:300010:300010::/home/intruder:/bin/sh\n"
    "broken line\n";
constexpr const char* kGroup = "root:x:0:\nalice:x:1000:\nshared:x:300020:alice\n";
constexpr const char* kSubuid = "alice:100000:65536\nbob:365000:65536\n";

CallerContext root_caller() {
    CallerContext caller;
    caller.euid = 0;
    caller.privileged = true;
    caller.memory_bytes = uint64_t{16} << 30;
    return caller;
}

CallerContext alice() {
    CallerContext caller;
    caller.euid = 1000;
    caller.egid = 1000;
    caller.privileged = false;
    caller.memory_bytes = uint64_t{16} << 30;
    return caller;
}

DoctorHost host_of(HostFeatures features, CallerContext caller) {
    return DoctorHost{.features = std::move(features),
                      .caller = std::move(caller),
                      .passwd = kPasswd,
                      .group = kGroup,
                      .subuid = "",
                      .subgid = "",
                      .processes = {}};
}

Tenant acme() {
    Tenant t;
    t.name = "acme";
    t.workspace_root = "/srv/stockade/acme";
    t.host_uid_range = parse_host_id_range("400000-465535").value();
    t.limits.memory_bytes = 2ULL << 30;
    t.limits.pids = 512;
    t.limits.cpu = 1.0;
    t.limits.tmp_bytes = 512ULL << 20;
    t.limits.disk_bytes = 1ULL << 30;
    return t;
}

TenantFacts good_facts() {
    TenantFacts facts;
    facts.workspace_root = PathFacts{.exists = true,
                                     .directory = true,
                                     .writable = true,
                                     .uid = 400000,  // in acme's range: what serve needs
                                     .gid = 400000,
                                     .mode = 0750,
                                     .error = ""};
    facts.policy = PolicyFacts{.loaded = true,
                               .error = "",
                               .warnings = {},
                               .mode = "local",
                               .preset = "workspace-write",
                               .rules = 3,
                               .quotas = false,
                               .network = sandbox::NetworkMode::kNone,
                               .without_workspace = false};
    return facts;
}

// The text of every line of `key`.
std::vector<std::string> lines_of(const TenantReport& report, std::string_view key) {
    std::vector<std::string> out;
    for (const ReportLine& line : report.lines) {
        if (line.key == key) {
            out.push_back(line.text);
        }
    }
    return out;
}

std::string joined(const TenantReport& report, std::string_view key) {
    std::string out;
    for (const std::string& text : lines_of(report, key)) {
        out += text + "\n";
    }
    return out;
}

TEST(TenantDoctorTest, FullHostAsRootEnforcesLimitsInItsCgroupsAndSaysCpuIsNot) {
    const TenantReport r = tenant_report(acme(), host_of(full_host(), root_caller()), good_facts());
    EXPECT_THAT(joined(r, "isolation"), HasSubstr("full"));
    EXPECT_THAT(joined(r, "host uids"),
                HasSubstr("400000-465535 (65536 ids): one leased per session, as root"));
    EXPECT_THAT(joined(r, "memory"),
                AllOf(HasSubstr("2G: cgroup v2 (delegated at /sys/fs/cgroup/user.slice/stockade)"),
                      HasSubstr("swap included")));
    EXPECT_THAT(joined(r, "pids"), HasSubstr("512: cgroup v2 (delegated at"));
    // No cpu controller: a limit given that nothing enforces is a warning.
    EXPECT_THAT(joined(r, "cpu"), AllOf(HasSubstr("1: cannot be enforced"),
                                        HasSubstr("cpu: not in cgroup.subtree_control")));
    EXPECT_THAT(joined(r, "/tmp"), HasSubstr("512M: a tmpfs of that size"));
    EXPECT_THAT(joined(r, "disk"), HasSubstr("1G: what one session keeps"));
    EXPECT_THAT(joined(r, "network"), HasSubstr("none: an empty network namespace"));
    EXPECT_THAT(joined(r, "workspace"),
                HasSubstr("/srv/stockade/acme: a directory, owner uid 400000, gid 400000, mode "
                          "0750"));
    EXPECT_THAT(joined(r, "policy"),
                AllOf(HasSubstr("no policy file, 0 allow, 0 ask, 0 deny rules"),
                      HasSubstr("(mode local, preset workspace-write, 3 rules in all)")));
    EXPECT_EQ(r.count(Severity::kError), 0U);
    EXPECT_EQ(r.count(Severity::kWarning), 1U) << format_tenant_report(r);
    EXPECT_TRUE(r.ok());
    EXPECT_THAT(format_tenant_report(r),
                AllOf(HasSubstr("tenant acme\n"), HasSubstr("  cpu        WARNING: 1: cannot"),
                      HasSubstr("  verdict    warnings (1)\n")));
}

TEST(TenantDoctorTest, RootCgroupsAreCreatedNotDelegatedAndV1SaysWhere) {
    HostFeatures features = full_host();
    features.cgroups.create_bases = true;
    features.cgroups.v2_base = "/sys/fs/cgroup/stockade";
    features.cgroups.cpu = CgroupVersion::kV1;
    features.cgroups.cpu_v1_base = "/sys/fs/cgroup/cpu/stockade";
    features.cgroups.memory_swap = false;
    const TenantReport r = tenant_report(acme(), host_of(features, root_caller()), good_facts());
    EXPECT_THAT(joined(r, "memory"), AllOf(HasSubstr("cgroup v2 (at /sys/fs/cgroup/stockade)"),
                                           HasSubstr("swap not limited")));
    EXPECT_THAT(joined(r, "cpu"), HasSubstr("1: cgroup v1 (at /sys/fs/cgroup/cpu/stockade)"));
    EXPECT_EQ(format_tenant_report(r).find("WARNING"), std::string::npos)
        << format_tenant_report(r);
    EXPECT_THAT(format_tenant_report(r), HasSubstr("  verdict    ok\n"));
}

TEST(TenantDoctorTest, WithoutCgroupsLimitsFallToRlimitsAndCpuCannotBeEnforced) {
    const TenantReport r =
        tenant_report(acme(), host_of(namespaces_host(), root_caller()), good_facts());
    EXPECT_THAT(joined(r, "isolation"),
                AllOf(HasSubstr("namespaces"), HasSubstr("weaker than full"),
                      HasSubstr("no cgroup2 file system")));
    EXPECT_THAT(joined(r, "memory"), HasSubstr("2G: RLIMIT_AS only (level namespaces has no "
                                               "cgroup)"));
    EXPECT_THAT(joined(r, "pids"), HasSubstr("512: RLIMIT_NPROC"));
    EXPECT_THAT(joined(r, "cpu"), HasSubstr("1: cannot be enforced"));
    EXPECT_THAT(joined(r, "/tmp"), HasSubstr("512M: a tmpfs"));
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.count(Severity::kWarning), 3U) << format_tenant_report(r);  // level, memory, cpu
}

TEST(TenantDoctorTest, DefaultsAreNamedAndUnsetCpuIsNoWarning) {
    Tenant t = acme();
    t.limits = TenantLimits{};
    t.host_uid_range.reset();
    CallerContext caller = root_caller();
    caller.memory_bytes = uint64_t{25276'018'688};  // 23.5G: half is not a whole G, M or K
    const TenantReport r = tenant_report(t, host_of(full_host(), caller), good_facts());
    EXPECT_THAT(joined(r, "memory"),
                HasSubstr("11.8G (the default: half of this host's): cgroup v2"));
    EXPECT_THAT(joined(r, "pids"), HasSubstr("4096 (the default)"));
    EXPECT_THAT(joined(r, "cpu"), HasSubstr("not limited"));
    EXPECT_THAT(joined(r, "/tmp"), HasSubstr("1G (the default)"));
    EXPECT_THAT(joined(r, "disk"), HasSubstr("512M (the default"));
    EXPECT_THAT(joined(r, "host uids"),
                HasSubstr("1879048193-1879113728 (65536 ids, the default range)"));
    EXPECT_THAT(joined(r, "quotas"), HasSubstr("16 sessions at once, 4 calls at once per session, "
                                               "no calls/s bound, idle TTL 30m, lifetime 24h"));
    EXPECT_EQ(r.count(Severity::kWarning), 0U) << format_tenant_report(r);
}

TEST(TenantDoctorTest, QuotasAreShownInTheFilesUnits) {
    Tenant t = acme();
    t.limits.calls_per_second = 2.5;
    t.limits.idle_ttl = std::chrono::seconds(90);
    t.limits.max_lifetime = std::chrono::hours(24 * 7);
    const TenantReport r = tenant_report(t, host_of(full_host(), root_caller()), good_facts());
    EXPECT_THAT(joined(r, "quotas"), HasSubstr("2.5 calls/s, idle TTL 90s, lifetime 7d"));
}

TEST(TenantDoctorTest, ModeHostedFillsWhatTheTenantLeavesUnset) {
    Tenant t = acme();
    t.limits = TenantLimits{};
    TenantFacts facts = good_facts();
    facts.policy.mode = "hosted";
    facts.policy.quotas = true;
    HostFeatures features = full_host();
    features.cgroups.cpu = CgroupVersion::kV2;
    const TenantReport r = tenant_report(t, host_of(features, root_caller()), facts);
    EXPECT_THAT(joined(r, "memory"), HasSubstr("2G (mode hosted): cgroup v2"));
    EXPECT_THAT(joined(r, "pids"), HasSubstr("512 (mode hosted)"));
    EXPECT_THAT(joined(r, "cpu"), HasSubstr("1 (mode hosted): cgroup v2"));
    EXPECT_THAT(joined(r, "/tmp"), HasSubstr("512M (mode hosted)"));
    EXPECT_THAT(joined(r, "policy"), HasSubstr("mode hosted"));
}

TEST(TenantDoctorTest, ARangeOverlappingAccountsSubIdsAndRunningProcessesWarns) {
    Tenant t = acme();
    t.host_uid_range = parse_host_id_range("300000-365535").value();
    DoctorHost host = host_of(full_host(), root_caller());
    host.subuid = kSubuid;
    host.subgid = "carol:200000:100001\n";
    host.processes = {{.pid = 1, .uid = 0, .command = "init"},
                      {.pid = 4242, .uid = 300005, .command = "sleep"}};
    TenantFacts facts = good_facts();
    facts.workspace_root.uid = 300000;  // the root is the tenant's, in its range
    const TenantReport r = tenant_report(t, host, facts);
    const std::string ids = joined(r, "host uids");
    EXPECT_THAT(ids, HasSubstr("1 user of /etc/passwd has a uid in the range: 300010 (intruder)"));
    EXPECT_THAT(ids, HasSubstr("1 group of /etc/group has a gid in the range: 300020 (shared)"));
    EXPECT_THAT(ids, HasSubstr("overlaps an entry of /etc/subuid (bob:365000:65536)"));
    EXPECT_THAT(ids, Not(HasSubstr("alice:100000")));  // 100000-165535 ends before the range
    EXPECT_THAT(ids, HasSubstr("overlaps an entry of /etc/subgid (carol:200000:100001)"));
    EXPECT_THAT(ids, HasSubstr("1 running process has a uid in the range (pid 4242 uid 300005 "
                               "sleep)"));
    EXPECT_EQ(r.count(Severity::kWarning), 6U) << format_tenant_report(r);  // + cpu
    EXPECT_TRUE(r.ok());
}

TEST(TenantDoctorTest, ARangeSmallerThanTheSessionsWarns) {
    Tenant t = acme();
    t.host_uid_range = parse_host_id_range("400000-400003").value();
    t.limits.sessions = 8;
    const TenantReport r = tenant_report(t, host_of(full_host(), root_caller()), good_facts());
    EXPECT_THAT(joined(r, "host uids"), HasSubstr("the range has 4 ids for limits.sessions 8"));
}

TEST(TenantDoctorTest, AnUnprivilegedCallerHasOneHostUidItsOwn) {
    const TenantReport r = tenant_report(acme(), host_of(full_host(), alice()), good_facts());
    const std::vector<std::string> ids = lines_of(r, "host uids");
    ASSERT_THAT(ids, SizeIs(2)) << format_tenant_report(r);
    EXPECT_THAT(ids[0], HasSubstr("one host uid: yours, 1000 (alice), for every session of every "
                                  "tenant"));
    EXPECT_THAT(ids[1], HasSubstr("host_uid_range 400000-465535 does not apply"));
    // Neither /etc/passwd nor processes are a concern then.
    Tenant without_range = acme();
    without_range.host_uid_range.reset();
    const TenantReport r2 =
        tenant_report(without_range, host_of(full_host(), alice()), good_facts());
    EXPECT_THAT(lines_of(r2, "host uids"), SizeIs(1));
}

TEST(TenantDoctorTest, AnUnprivilegedCallerWarnsOfAWorkspaceRootItCannotWrite) {
    TenantFacts facts = good_facts();
    facts.workspace_root.writable = false;
    facts.workspace_root.uid = 0;
    facts.workspace_root.mode = 0757;
    const TenantReport r = tenant_report(acme(), host_of(full_host(), alice()), facts);
    const std::string ws = joined(r, "workspace");
    EXPECT_THAT(ws, HasSubstr("owner uid 0 (root)"));
    EXPECT_THAT(ws, HasSubstr("writable by every host user"));
    EXPECT_THAT(ws, HasSubstr("not writable by you (uid 1000)"));
}

TEST(TenantDoctorTest, AMissingWorkspaceRootOrAPolicyThatFailsIsAnError) {
    TenantFacts facts = good_facts();
    facts.workspace_root = PathFacts{};
    facts.policy =
        PolicyFacts{.loaded = false, .error = "--policy \"/etc/stockade/acme.json\": no such file"};
    Tenant t = acme();
    t.policy = "/etc/stockade/acme.json";
    t.deny = {"Read(./.env)"};
    const TenantReport r = tenant_report(t, host_of(full_host(), root_caller()), facts);
    EXPECT_THAT(joined(r, "workspace"),
                HasSubstr("/srv/stockade/acme does not exist: create it (mkdir -p "
                          "/srv/stockade/acme)"));
    EXPECT_THAT(joined(r, "policy"),
                AllOf(HasSubstr("/etc/stockade/acme.json, 0 allow, 0 ask, 1 deny rules"),
                      HasSubstr("does not load"), HasSubstr("no such file")));
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.count(Severity::kError), 2U);
    EXPECT_THAT(format_tenant_report(r),
                AllOf(HasSubstr("  workspace  ERROR: /srv/stockade/acme does not exist"),
                      HasSubstr("  verdict    error (2 errors, 1 warning)\n")));
}

TEST(TenantDoctorTest, AsRootAWorkspaceRootTheTenantDoesNotOwnIsAnError) {
    TenantFacts facts = good_facts();
    facts.workspace_root.uid = 0;
    const TenantReport r = tenant_report(acme(), host_of(full_host(), root_caller()), facts);
    EXPECT_THAT(joined(r, "workspace"),
                AllOf(HasSubstr("serve refuses it as root: /srv/stockade/acme is owned by uid 0 "
                                "(root)"),
                      HasSubstr("chown 400000:400000 /srv/stockade/acme")));
    EXPECT_FALSE(r.ok());
    facts.workspace_root.uid = 1000;  // alice's: a user, but not one of the tenant's
    EXPECT_FALSE(tenant_report(acme(), host_of(full_host(), root_caller()), facts).ok());
    // Unprivileged, every session writes as the caller: there is no owner to choose.
    EXPECT_THAT(joined(tenant_report(acme(), host_of(full_host(), alice()), facts), "workspace"),
                Not(HasSubstr("refuses")));
}

TEST(TenantDoctorTest, AWorkspaceRootThatIsAFileIsAnError) {
    TenantFacts facts = good_facts();
    facts.workspace_root.directory = false;
    const TenantReport r = tenant_report(acme(), host_of(full_host(), root_caller()), facts);
    EXPECT_THAT(joined(r, "workspace"), HasSubstr("is not a directory"));
    EXPECT_FALSE(r.ok());
}

TEST(TenantDoctorTest, PolicyWarningsAndARelativePathAreWarnings) {
    Tenant t = acme();
    t.policy = "acme.json";
    TenantFacts facts = good_facts();
    facts.policy.warnings = {"acme.json: unknown key \"foo\" ignored"};
    facts.policy.without_workspace = true;
    const TenantReport r = tenant_report(t, host_of(full_host(), root_caller()), facts);
    const std::string policy = joined(r, "policy");
    EXPECT_THAT(policy, HasSubstr("acme.json is relative"));
    EXPECT_THAT(policy, HasSubstr("unknown key \"foo\" ignored"));
    EXPECT_THAT(policy, HasSubstr("checked on an empty directory"));
}

TEST(TenantDoctorTest, APolicyThatAllowsTheNetworkGivesTheHostsNetwork) {
    TenantFacts facts = good_facts();
    facts.policy.network = sandbox::NetworkMode::kHost;
    const TenantReport r = tenant_report(acme(), host_of(full_host(), root_caller()), facts);
    EXPECT_THAT(joined(r, "network"),
                AllOf(HasSubstr("host: the tenant asks for \"none\""), HasSubstr("policy allows")));
}

TEST(TenantDoctorTest, AtLevelLandlockAllowlistCannotStartAndTmpIsNotBounded) {
    Tenant t = acme();
    t.network = sandbox::NetworkMode::kAllowlist;
    TenantFacts facts = good_facts();
    facts.policy.network = sandbox::NetworkMode::kAllowlist;
    const TenantReport r = tenant_report(t, host_of(landlock_host(), root_caller()), facts);
    EXPECT_THAT(joined(r, "isolation"), AllOf(HasSubstr("landlock"), HasSubstr("CLONE_NEWUSER")));
    EXPECT_THAT(joined(r, "network"), HasSubstr("allowlist needs a network namespace"));
    EXPECT_THAT(joined(r, "/tmp"), HasSubstr("512M: not enforced at level landlock"));
    EXPECT_THAT(joined(r, "host uids"),
                HasSubstr("runs as the owner of its workspace, here uid 400000"));
    EXPECT_THAT(joined(r, "pids"), HasSubstr("every process of the sandbox's host uid"));
    EXPECT_FALSE(r.ok());

    t.network = sandbox::NetworkMode::kNone;
    facts.policy.network = sandbox::NetworkMode::kNone;
    const TenantReport none = tenant_report(t, host_of(landlock_host(), root_caller()), facts);
    EXPECT_THAT(joined(none, "network"), HasSubstr("seccomp refuses every socket()"));
    EXPECT_TRUE(none.ok());
}

TEST(TenantDoctorTest, NoIsolationAtAllIsAnError) {
    HostFeatures features = landlock_host();
    features.landlock = {.abi = 0, .sys_errno = 38};
    features.seccomp = false;
    features.seccomp_reason = "no seccomp";
    const TenantReport r = tenant_report(acme(), host_of(features, root_caller()), good_facts());
    EXPECT_THAT(joined(r, "isolation"), HasSubstr("none available"));
    EXPECT_THAT(lines_of(r, "memory"), IsEmpty());
    EXPECT_FALSE(r.ok());
}

TEST(TenantDoctorTest, IdsOfPasswdAndSubIdTexts) {
    const auto in = ids_in_range(kPasswd, 1000, 299011);
    ASSERT_THAT(in, SizeIs(2));
    EXPECT_EQ(in[0].name, "alice");
    EXPECT_EQ(in[1].id, 300010U);
    EXPECT_THAT(ids_in_range(kPasswd, 1, 999), IsEmpty());
    EXPECT_THAT(ids_in_range("a:x:notanumber:0\n\n::\n", 0, 100), IsEmpty());
    EXPECT_EQ(id_name(kPasswd, 1000), "alice");
    EXPECT_EQ(id_name(kPasswd, 4), "");
    EXPECT_EQ(id_name("", 0), "");

    EXPECT_THAT(subids_overlapping(kSubuid, 200000, 165001), SizeIs(1));  // bob's first id
    EXPECT_THAT(subids_overlapping(kSubuid, 165535, 1), SizeIs(1));       // alice's last id
    EXPECT_THAT(subids_overlapping(kSubuid, 165536, 165000 - 1536), IsEmpty());
    EXPECT_THAT(subids_overlapping("x:1:0\nbad\ny:5:nope\n", 0, 100), IsEmpty());
}

}  // namespace
}  // namespace stockade::runner
