// `stockade doctor --tenants FILE`: what isolation each tenant's sessions will get on this host,
// for an operator to check a deployment before starting it. The report is pure: it is built
// from a Tenant, the host's probes (HostFeatures), the caller, the texts of /etc/passwd,
// /etc/group, /etc/subuid and /etc/subgid, the running processes' uids, and what was found of
// the tenant's workspace root and policy (gather_tenant_facts, doctor_command.cc), so that unit
// tests give literals for all of them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runner/host/tenants.h"
#include "runner/session/sandbox_config.h"
#include "sandbox/features.h"
#include "sandbox/spec.h"

namespace stockade::runner {

// One running process: whose uid it runs as (/proc/PID/status, the real uid).
struct ProcessOwner {
    pid_t pid = 0;
    uid_t uid = 0;
    std::string command{};  // /proc/PID/comm, for the report
};

// What the report needs of the host, the same for every tenant.
struct DoctorHost {
    sandbox::HostFeatures features{};
    CallerContext caller{};  // privileged, euid, memory_bytes are read
    std::string passwd{};    // /etc/passwd, /etc/group: name:x:ID:...
    std::string group{};
    std::string subuid{};  // /etc/subuid, /etc/subgid: name:FIRST:COUNT
    std::string subgid{};
    std::vector<ProcessOwner> processes{};  // read only for a privileged caller
};

// What stat() found of the tenant's workspace root.
struct PathFacts {
    bool exists = false;
    bool directory = false;
    bool writable = false;  // by the caller (access W_OK)
    uid_t uid = 0;
    gid_t gid = 0;
    unsigned mode = 0;    // permission bits
    std::string error{};  // stat's, when it failed for another reason than ENOENT
};

// What loading the tenant's policy found, as a session loads it (load_policy, then
// session_network on the tenant's network mode).
struct PolicyFacts {
    bool loaded = false;
    std::string error{};  // when not loaded
    std::vector<std::string> warnings{};
    std::string mode{};  // "local", "ci", "hosted"
    std::string preset{};
    std::size_t rules = 0;
    bool quotas = false;  // mode hosted: tighter limits for what the tenant leaves unset
    sandbox::NetworkMode network = sandbox::NetworkMode::kNone;  // what sessions will have
    // The workspace root was missing, so the policy was loaded on an empty directory instead.
    bool without_workspace = false;
};

struct TenantFacts {
    PathFacts workspace_root{};
    PolicyFacts policy{};
};

enum class Severity { kInfo, kWarning, kError };

struct ReportLine {
    std::string key{};  // "isolation", "host uids", "memory", ...
    Severity severity = Severity::kInfo;
    std::string text{};
};

struct TenantReport {
    std::string tenant{};
    std::vector<ReportLine> lines{};
    [[nodiscard]] std::size_t count(Severity severity) const;
    [[nodiscard]] bool ok() const { return count(Severity::kError) == 0; }
};

// The report of one tenant: isolation, host uids, limits and how each is enforced, /tmp, disk,
// quotas, network, workspace root, policy.
TenantReport tenant_report(const Tenant& tenant, const DoctorHost& host, const TenantFacts& facts);

// The block printed for a report: "tenant NAME", one indented line per entry (a warning's or an
// error's text starts with "WARNING: " or "ERROR: "), then "  verdict   ok|warnings (N)|error
// (N errors, M warnings)".
std::string format_tenant_report(const TenantReport& report);

// An entry of /etc/passwd or /etc/group whose id lies in [first, first + count).
struct IdEntry {
    std::string name{};
    uint64_t id = 0;
};
// Entries of a passwd or group text (name:x:ID:...) whose id lies in the range; malformed lines
// and comments are skipped.
std::vector<IdEntry> ids_in_range(std::string_view text, uint64_t first, uint64_t count);
// The name of `id` in a passwd or group text, or empty.
std::string id_name(std::string_view text, uint64_t id);

// An /etc/subuid or /etc/subgid entry (name:FIRST:COUNT) that overlaps the range.
struct SubIdEntry {
    std::string name{};
    uint64_t first = 0;
    uint64_t count = 0;
};
std::vector<SubIdEntry> subids_overlapping(std::string_view text, uint64_t first, uint64_t count);

}  // namespace stockade::runner
