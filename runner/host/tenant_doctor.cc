#include "runner/host/tenant_doctor.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "common/parse.h"
#include "runner/host/tenant_roots.h"
#include "runner/session/host_ids.h"
#include "runner/session/isolation.h"
#include "runner/session/session.h"

namespace stockade::runner {

namespace {

using sandbox::CgroupVersion;
using sandbox::Isolation;
using sandbox::NetworkMode;

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    while (true) {
        const auto at = text.find(separator);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) {
            return parts;
        }
        text.remove_prefix(at + 1);
    }
}

std::optional<uint64_t> number(std::string_view text) {
    uint64_t value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end) {
        return std::nullopt;
    }
    return value;
}

// Each non-blank, non-comment line of a colon-separated file, split into its fields.
template <typename Fn>
void for_each_entry(std::string_view text, Fn&& fn) {
    for (std::string_view line : split(text, '\n')) {
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.empty() || line.front() == '#') {
            continue;
        }
        fn(split(line, ':'));
    }
}

std::string duration_text(std::chrono::seconds duration) {
    const auto s = duration.count();
    if (s >= 2 * 86400 && s % 86400 == 0) {
        return fmt::format("{}d", s / 86400);
    }
    for (const auto& [unit, scale] : {std::pair{'h', 3600}, std::pair{'m', 60}}) {
        if (s >= scale && s % scale == 0) {
            return fmt::format("{}{}", s / scale, unit);
        }
    }
    return fmt::format("{}s", s);
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string with_name(uint64_t id, std::string_view text) {
    const std::string name = id_name(text, id);
    return name.empty() ? fmt::format("{}", id) : fmt::format("{} ({})", id, name);
}

// A few items of a list and how many there are in all: "a, b, c and 4 more".
template <typename T, typename Fn>
std::string some_of(const std::vector<T>& items, Fn&& show, std::size_t shown = 3) {
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < shown; ++i) {
        out += (i == 0 ? "" : ", ") + show(items[i]);
    }
    if (items.size() > shown) {
        out += fmt::format(" and {} more", items.size() - shown);
    }
    return out;
}

class Builder {
public:
    explicit Builder(TenantReport& report) : report_(report) {}
    void info(std::string key, std::string text) {
        add(std::move(key), Severity::kInfo, std::move(text));
    }
    void warning(std::string key, std::string text) {
        add(std::move(key), Severity::kWarning, std::move(text));
    }
    void error(std::string key, std::string text) {
        add(std::move(key), Severity::kError, std::move(text));
    }

private:
    void add(std::string key, Severity severity, std::string text) {
        report_.lines.push_back(ReportLine{std::move(key), severity, std::move(text)});
    }
    TenantReport& report_;
};

// Where a controller's limit goes at level full.
std::string cgroup_where(CgroupVersion version, const sandbox::CgroupSupport& cgroups,
                         const std::string& v1_base) {
    if (version == CgroupVersion::kV2) {
        return cgroups.create_bases ? fmt::format("cgroup v2 (at {})", cgroups.v2_base)
                                    : fmt::format("cgroup v2 (delegated at {})", cgroups.v2_base);
    }
    return fmt::format("cgroup v1 (at {})", v1_base);
}

void report_host_ids(const Tenant& tenant, const DoctorHost& host, const TenantFacts& facts,
                     std::optional<Isolation> level, Builder& out) {
    const CallerContext& caller = host.caller;
    const HostIdRange range = tenant.host_uid_range.value_or(HostIdRange{});
    const uint64_t first = range.first;
    const uint64_t last = range.last();
    const std::string shown = host_id_range_text(range);
    if (!caller.privileged) {
        out.info("host uids", fmt::format("one host uid: yours, {}, for every session of every "
                                          "tenant (serve is not run as root with CAP_SYS_ADMIN)",
                                          with_name(caller.euid, host.passwd)));
        if (tenant.host_uid_range) {
            out.warning("host uids",
                        fmt::format("host_uid_range {} does not apply: only serve run as root "
                                    "(with CAP_SYS_ADMIN) leases a host uid per session from it",
                                    shown));
        }
        return;
    }
    out.info("host uids",
             fmt::format("{} ({} ids{}): one leased per session, as root, as uid "
                         "and gid of its sandbox",
                         shown, range.count, tenant.host_uid_range ? "" : ", the default range"));
    if (level == Isolation::kLandlock && facts.workspace_root.exists &&
        facts.workspace_root.uid != 0) {
        out.warning("host uids",
                    fmt::format("at level landlock (no user namespace) a session runs as the "
                                "owner of its workspace, here uid {}, not as a leased uid: the "
                                "tenant's sessions share that uid",
                                with_name(facts.workspace_root.uid, host.passwd)));
    }
    if (range.count < tenant.limits.sessions) {
        out.warning("host uids",
                    fmt::format("the range has {} ids for limits.sessions {}: a session past "
                                "{} open at once fails to open",
                                range.count, tenant.limits.sessions, range.count));
    }
    const auto show_id = [](const IdEntry& e) {
        return fmt::format("{} ({})", e.id, e.name);
    };
    if (auto users = ids_in_range(host.passwd, first, range.count); !users.empty()) {
        out.warning(
            "host uids",
            fmt::format("{} of /etc/passwd ha{} a uid in the range: {}; a session leasing "
                        "it would run as that account's uid: give a range no account uses",
                        users.size() == 1 ? "1 user" : fmt::format("{} users", users.size()),
                        users.size() == 1 ? "s" : "ve", some_of(users, show_id)));
    }
    if (auto groups = ids_in_range(host.group, first, range.count); !groups.empty()) {
        out.warning(
            "host uids",
            fmt::format("{} of /etc/group ha{} a gid in the range: {}; a session's "
                        "sandbox gets the same number as gid",
                        groups.size() == 1 ? "1 group" : fmt::format("{} groups", groups.size()),
                        groups.size() == 1 ? "s" : "ve", some_of(groups, show_id)));
    }
    const auto show_sub = [](const SubIdEntry& e) {
        return fmt::format("{}:{}:{}", e.name, e.first, e.count);
    };
    for (const auto& [file, text] :
         {std::pair{"/etc/subuid", &host.subuid}, std::pair{"/etc/subgid", &host.subgid}}) {
        if (auto subs = subids_overlapping(*text, first, range.count); !subs.empty()) {
            out.warning(
                "host uids",
                fmt::format("the range overlaps {} of {} ({}): that user's containers "
                            "may map the same ids",
                            subs.size() == 1 ? "an entry" : fmt::format("{} entries", subs.size()),
                            file, some_of(subs, show_sub)));
        }
    }
    std::vector<ProcessOwner> running;
    for (const ProcessOwner& p : host.processes) {
        if (p.uid >= first && p.uid <= last) {
            running.push_back(p);
        }
    }
    if (!running.empty()) {
        out.warning("host uids",
                    fmt::format("{} running process{} ha{} a uid in the range ({}): another "
                                "program, another supervisor or a running serve uses these ids",
                                running.size(), running.size() == 1 ? "" : "es",
                                running.size() == 1 ? "s" : "ve",
                                some_of(running, [](const ProcessOwner& p) {
                                    return fmt::format("pid {} uid {} {}", p.pid, p.uid, p.command);
                                })));
    }
}

// The limits a session's sandbox asks for: the tenant's, then (mode hosted) the hosted quotas.
struct Wanted {
    SandboxLimits limits{};
    bool memory_given = false, pids_given = false, cpu_given = false, tmp_given = false;
};

Wanted wanted_limits(const Tenant& tenant, const PolicyFacts& policy) {
    Wanted w;
    const TenantLimits& l = tenant.limits;
    w.limits.memory_bytes = l.memory_bytes;
    w.limits.pids = l.pids;
    w.limits.cpu = l.cpu;
    w.limits.tmp_bytes = l.tmp_bytes;
    w.memory_given = l.memory_bytes.has_value();
    w.pids_given = l.pids.has_value();
    w.cpu_given = l.cpu.has_value();
    w.tmp_given = l.tmp_bytes.has_value();
    if (policy.loaded && policy.quotas) {
        apply_hosted_quotas(w.limits);
    }
    return w;
}

void report_limits(const Tenant& tenant, const DoctorHost& host, const TenantFacts& facts,
                   Isolation level, Builder& out) {
    const Wanted w = wanted_limits(tenant, facts.policy);
    const sandbox::CgroupSupport& cg = host.features.cgroups;
    // At level full, choose_isolation has found memory and pids controllers.
    const bool full = level == Isolation::kFull;
    const std::string level_name = sandbox::isolation_name(level);
    const auto why_not = [&] {
        if (!full) {
            return fmt::format("level {} has no cgroup", level_name);
        }
        return cg.reason.empty() ? std::string("no cgroup controller for it") : cg.reason;
    };
    const bool hosted = facts.policy.loaded && facts.policy.quotas;

    // memory
    if (w.limits.memory_bytes) {
        const std::string value =
            size_text(*w.limits.memory_bytes) + (w.memory_given ? "" : " (mode hosted)");
        if (full && cg.memory != CgroupVersion::kNone) {
            out.info("memory", fmt::format("{}: {}, {}", value,
                                           cgroup_where(cg.memory, cg, cg.memory_v1_base),
                                           cg.memory_swap ? "swap included"
                                                          : "swap not limited (no swap "
                                                            "controller)"));
        } else {
            out.warning("memory",
                        fmt::format("{}: RLIMIT_AS only ({}): it bounds address space, not memory "
                                    "in use, and runtimes that reserve more than they use (V8, the "
                                    "JVM) may fail",
                                    value, why_not()));
        }
    } else if (full && cg.memory != CgroupVersion::kNone && host.caller.memory_bytes > 0) {
        out.info("memory", fmt::format("{} (the default: half of this host's): {}",
                                       size_text(default_memory_bytes(host.caller.memory_bytes)),
                                       cgroup_where(cg.memory, cg, cg.memory_v1_base)));
    } else {
        out.info("memory", fmt::format("not limited: the default (half of this host's memory) "
                                       "needs a memory cgroup ({})",
                                       why_not()));
    }

    // pids
    const uint64_t pids = w.limits.pids.value_or(kDefaultPids);
    const std::string pids_value = fmt::format("{}{}", pids,
                                               w.pids_given ? ""
                                               : hosted     ? " (mode hosted)"
                                                            : " (the default)");
    if (full && cg.pids != CgroupVersion::kNone) {
        out.info("pids",
                 fmt::format("{}: {}", pids_value, cgroup_where(cg.pids, cg, cg.pids_v1_base)));
    } else {
        out.info("pids", fmt::format("{}: RLIMIT_NPROC ({}){}", pids_value, why_not(),
                                     level == Isolation::kLandlock
                                         ? ", counted over every process of the sandbox's host uid"
                                         : ", counted in the sandbox's user namespace"));
    }

    // cpu
    if (w.limits.cpu) {
        const std::string value =
            fmt::format("{}{}", *w.limits.cpu, w.cpu_given ? "" : " (mode hosted)");
        if (full && cg.cpu != CgroupVersion::kNone) {
            out.info("cpu", fmt::format("{}: {}", value, cgroup_where(cg.cpu, cg, cg.cpu_v1_base)));
        } else {
            out.warning("cpu", fmt::format("{}: cannot be enforced: {}, and no rlimit bounds "
                                           "CPU time per second",
                                           value, why_not()));
        }
    } else {
        out.info("cpu", "not limited (no limits.cpu)");
    }
    if (!tenant.limits.cpu_weight) {
        out.info("cpu weight",
                 "not set (100 when another tenant sets one; none set: tenants "
                 "share the CPU as their processes do)");
    } else if (full && cg.cpu != CgroupVersion::kNone) {
        out.info("cpu weight", fmt::format("{} against the other tenants' (cgroup group tenant-{})",
                                           *tenant.limits.cpu_weight, tenant.name));
    } else {
        out.warning("cpu weight",
                    fmt::format("{}: cannot be applied: {}", *tenant.limits.cpu_weight, why_not()));
    }

    // /tmp
    const std::string tmp_value =
        w.tmp_given ? size_text(*w.limits.tmp_bytes)
        : hosted    ? fmt::format("{} (mode hosted)", size_text(*w.limits.tmp_bytes))
                    : fmt::format("{} (the default)", size_text(sandbox::Limits{}.tmp_bytes));
    if (level == Isolation::kLandlock) {
        const std::string text = fmt::format(
            "{}: not enforced at level landlock: /tmp is a private directory of the host's /tmp, "
            "bounded only by that file system",
            tmp_value);
        if (w.limits.tmp_bytes) {
            out.warning("/tmp", text);
        } else {
            out.info("/tmp", text);
        }
    } else if (level != Isolation::kNone) {
        out.info("/tmp", fmt::format("{}: a tmpfs of that size", tmp_value));
    }
}

void report_quotas(const Tenant& tenant, Builder& out) {
    const TenantLimits& l = tenant.limits;
    out.info("disk",
             fmt::format("{}: what one session keeps of spilled results and process logs, "
                         "the oldest pruned first",
                         l.disk_bytes ? size_text(*l.disk_bytes)
                                      : fmt::format("{} (the default, or serve's "
                                                    "--output-budget)",
                                                    size_text(SessionConfig{}.spill_cap_bytes))));
    out.info("quotas",
             fmt::format("{} sessions at once, {} calls at once per session, {}, idle TTL {}, "
                         "lifetime {}: enforced by the server",
                         l.sessions, l.calls,
                         l.calls_per_second > 0 ? fmt::format("{} calls/s", l.calls_per_second)
                                                : std::string("no calls/s bound"),
                         duration_text(l.idle_ttl), duration_text(l.max_lifetime)));
}

void report_network(const Tenant& tenant, const TenantFacts& facts, std::optional<Isolation> level,
                    Builder& out) {
    const NetworkMode mode = facts.policy.loaded ? facts.policy.network : tenant.network;
    const bool landlock = level == Isolation::kLandlock;
    switch (mode) {
        case NetworkMode::kNone:
            out.info("network", landlock ? "none: no network namespace at level landlock, so "
                                           "seccomp refuses every socket() (unix sockets too)"
                                         : "none: an empty network namespace, loopback up");
            break;
        case NetworkMode::kAllowlist:
            if (landlock) {
                out.error("network",
                          "allowlist needs a network namespace, which level landlock lacks: "
                          "sessions would fail to start; give the host namespaces or use "
                          "\"none\"");
            } else {
                out.info("network",
                         "allowlist: an empty network namespace whose only way out is the "
                         "supervisor's proxy, to the hosts the policy allows");
            }
            break;
        case NetworkMode::kHost:
            out.warning("network",
                        fmt::format("host: the tenant asks for \"{}\", but its policy allows "
                                    "network access for bash, so sessions share the host's "
                                    "network",
                                    sandbox::network_name(tenant.network)));
            break;
    }
}

void report_workspace(const Tenant& tenant, const DoctorHost& host, const PathFacts& root,
                      Builder& out) {
    const std::string& path = tenant.workspace_root;
    if (!root.error.empty()) {
        out.error("workspace", fmt::format("{}: {}", path, root.error));
        return;
    }
    if (!root.exists) {
        out.error("workspace", fmt::format("{} does not exist: create it (mkdir -p {}) before "
                                           "starting serve, which refuses a tenant without one",
                                           path, path));
        return;
    }
    if (!root.directory) {
        out.error("workspace",
                  fmt::format("{} is not a directory: serve refuses a tenant without one", path));
        return;
    }
    out.info("workspace", fmt::format("{}: a directory, owner uid {}, gid {}, mode {:04o}", path,
                                      with_name(root.uid, host.passwd),
                                      with_name(root.gid, host.group), root.mode & 07777));
    if (host.caller.privileged) {
        if (std::string why = owner_problem(tenant, root.uid, path); !why.empty()) {
            out.error("workspace", fmt::format("serve refuses it as root: {}", why));
        }
    }
    if ((root.mode & 0002) != 0) {
        out.warning("workspace",
                    fmt::format("{} is writable by every host user: any of them can change the "
                                "tenant's files (chmod o-w {})",
                                path, path));
    }
    if (!host.caller.privileged && !root.writable) {
        out.warning("workspace",
                    fmt::format("{} is not writable by you (uid {}), whom every session runs as: "
                                "its sessions could not change files there",
                                path, host.caller.euid));
    }
}

void report_policy(const Tenant& tenant, const PolicyFacts& policy, Builder& out) {
    const std::string file =
        tenant.policy.empty() ? std::string("no policy file") : fmt::format("{}", tenant.policy);
    const std::string rules =
        fmt::format("{} allow, {} ask, {} deny rules of the tenant", tenant.allow.size(),
                    tenant.ask.size(), tenant.deny.size());
    if (!tenant.policy.empty() && !tenant.policy.starts_with('/')) {
        out.warning("policy", fmt::format("{} is relative: serve reads it from its own working "
                                          "directory; give an absolute path",
                                          tenant.policy));
    }
    if (!policy.loaded) {
        out.error("policy", fmt::format("{}, {}: does not load, so no session would open: {}", file,
                                        rules, policy.error));
        return;
    }
    out.info(
        "policy",
        fmt::format("{}, {}: loads with the host's settings layers (mode {}, preset {}, {} "
                    "in all){}",
                    file, rules, policy.mode, policy.preset, plural(policy.rules, "rule", "rules"),
                    policy.without_workspace
                        ? "; checked on an empty directory, as the workspace root is not one"
                        : ""));
    if (policy.quotas) {
        out.info("policy",
                 "mode hosted: memory, pids, cpu and /tmp the tenant leaves unset get "
                 "2G, 512, 1 and 512M");
    }
    for (const std::string& warning : policy.warnings) {
        out.warning("policy", warning);
    }
}

}  // namespace

std::size_t TenantReport::count(Severity severity) const {
    return static_cast<std::size_t>(std::count_if(
        lines.begin(), lines.end(), [&](const ReportLine& l) { return l.severity == severity; }));
}

TenantReport tenant_report(const Tenant& tenant, const DoctorHost& host, const TenantFacts& facts) {
    TenantReport report{.tenant = tenant.name, .lines = {}};
    Builder out(report);
    // The same resolution every session's worker makes (serve's --isolation defaults to auto).
    std::optional<Isolation> level;
    if (auto resolved = resolve_isolation(Isolation::kAuto, host.features); !resolved) {
        out.error("isolation", fmt::format("none available, so no session would start: {}",
                                           resolved.error().message));
    } else {
        level = resolved->level;
        const std::string name = sandbox::isolation_name(*level);
        if (*level == Isolation::kFull) {
            out.info("isolation",
                     "full: namespaces, seccomp, Landlock and cgroups (--isolation "
                     "auto, as each session's worker resolves it)");
        } else {
            out.warning("isolation",
                        fmt::format("{} (--isolation auto, as each session's worker resolves "
                                    "it), weaker than full: {}",
                                    name, resolved->shortfall));
        }
    }
    report_host_ids(tenant, host, facts, level, out);
    if (level) {
        report_limits(tenant, host, facts, *level, out);
    }
    report_quotas(tenant, out);
    report_network(tenant, facts, level, out);
    report_workspace(tenant, host, facts.workspace_root, out);
    report_policy(tenant, facts.policy, out);
    return report;
}

std::string format_tenant_report(const TenantReport& report) {
    std::string out = fmt::format("tenant {}\n", report.tenant);
    for (const ReportLine& line : report.lines) {
        const char* prefix = line.severity == Severity::kError     ? "ERROR: "
                             : line.severity == Severity::kWarning ? "WARNING: "
                                                                   : "";
        out += fmt::format("  {:<10} {}{}\n", line.key, prefix, line.text);
    }
    const std::size_t errors = report.count(Severity::kError);
    const std::size_t warnings = report.count(Severity::kWarning);
    std::string verdict = "ok";
    if (errors > 0) {
        verdict = fmt::format("error ({} error{}, {} warning{})", errors, errors == 1 ? "" : "s",
                              warnings, warnings == 1 ? "" : "s");
    } else if (warnings > 0) {
        verdict = fmt::format("warnings ({})", warnings);
    }
    out += fmt::format("  {:<10} {}\n", "verdict", verdict);
    return out;
}

std::vector<IdEntry> ids_in_range(std::string_view text, uint64_t first, uint64_t count) {
    std::vector<IdEntry> found;
    for_each_entry(text, [&](const std::vector<std::string_view>& fields) {
        if (fields.size() < 3) {
            return;
        }
        const auto id = number(fields[2]);
        if (id && *id >= first && *id - first < count) {
            found.push_back(IdEntry{std::string(fields[0]), *id});
        }
    });
    return found;
}

std::string id_name(std::string_view text, uint64_t id) {
    std::string name;
    for_each_entry(text, [&](const std::vector<std::string_view>& fields) {
        if (name.empty() && fields.size() >= 3 && number(fields[2]) == id) {
            name = std::string(fields[0]);
        }
    });
    return name;
}

std::vector<SubIdEntry> subids_overlapping(std::string_view text, uint64_t first, uint64_t count) {
    std::vector<SubIdEntry> found;
    for_each_entry(text, [&](const std::vector<std::string_view>& fields) {
        if (fields.size() != 3) {
            return;
        }
        const auto start = number(fields[1]);
        const auto n = number(fields[2]);
        if (start && n && *n > 0 && *start < first + count && first < *start + *n) {
            found.push_back(SubIdEntry{std::string(fields[0]), *start, *n});
        }
    });
    return found;
}

}  // namespace stockade::runner
