// Host feature probes: what this kernel and this process may use (namespaces, seccomp, Landlock,
// cgroups, idmapped mounts, pidfd, clone3), for `stockade doctor` and for choosing the
// isolation level. choose_isolation() is pure, so tests feed it literal HostFeatures.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sandbox/cgroup.h"
#include "sandbox/landlock.h"
#include "sandbox/spec.h"

namespace stockade::sandbox {

// One `stockade doctor` line: the feature, whether it is usable, and why (or what was found).
struct FeatureCheck {
    std::string name{};
    bool ok = false;
    std::string detail{};
};

struct HostFeatures {
    bool user_ns = false;
    bool mount_ns = false;
    bool pid_ns = false;
    bool net_ns = false;
    bool ipc_uts_cgroup_ns = false;
    // The setup steps of a mount namespace a container may refuse even where the namespace
    // itself is allowed: mounting a new /proc (refused where the caller's /proc has masked
    // paths, as under Docker's default masks) and pivot_root into a new root.
    bool proc_mount = false;
    bool pivot_root = false;
    // "clone(CLONE_NEWUSER): EPERM (Operation not permitted) — unprivileged user namespaces
    // are disabled (sysctl kernel.unprivileged_userns_clone=0)"
    std::string userns_reason{};
    std::string mount_ns_reason{};  // each other namespace is probed inside a user namespace
    std::string pid_ns_reason{};
    std::string net_ns_reason{};
    std::string ipc_uts_cgroup_ns_reason{};
    std::string proc_mount_reason{};
    std::string pivot_root_reason{};
    bool seccomp = false;
    std::string seccomp_reason{};
    LandlockSupport landlock{};
    CgroupSupport cgroups{};
    bool idmapped_mounts = false;
    bool idmap_required = true;  // false for non-root callers: binds already belong to them
    std::string idmap_reason{};
    bool pidfd = false;
    std::string pidfd_reason{};
    bool clone3 = false;
    std::string clone3_reason{};
    // This process already runs under a seccomp filter ("Seccomp: 2" in /proc/self/status): a
    // container's, whose profile decides which namespace and mount calls Stockade may make.
    // It changes the fix a missing level names, not the level.
    bool caller_seccomp_filtered = false;

    // One line per probe, in a fixed order; a failed check always carries its reason.
    [[nodiscard]] std::vector<FeatureCheck> checks() const;
};

// The full probe (doctor, and once before the first launch). Forks short-lived children to
// try clone() with each namespace flag and, as root, to build an idmapped mount; reaps them all
// and leaves no descriptor behind.
HostFeatures probe_host_features();

// The probes that need no child process (seccomp, Landlock, cgroups, pidfd, clone3), with the
// namespaces, a new /proc, pivot_root and idmapped mounts taken as available: what to try first
// when a failed launch can still be followed by the full probe (`stockade run`). Checks of
// those features name no reason.
HostFeatures probe_host_features_without_children();

// Resolves `requested` against the host. kAuto picks the strongest of full > namespaces >
// landlock and never none. A level the host cannot give fails with kUnavailable:
//   "full isolation is not available: <cause>. Fix: <remedy>"
// Rules: full = user, mount, pid, net, ipc/uts/cgroup namespaces, a new /proc and pivot_root in
// them + seccomp (+ Landlock where present) + usable cgroups; namespaces = the same without
// cgroups; landlock = Landlock + seccomp; none is always available when asked for by name.
Result<Isolation> choose_isolation(Isolation requested, const HostFeatures& features);

// Why `auto` chose `chosen` and not a stronger level: the cause and fix of the level just above
// it ("namespaces isolation is not available: user namespace: ..."), or empty when `chosen` is
// full (or none, which auto never picks).
std::string auto_shortfall(Isolation chosen, const HostFeatures& features);

}  // namespace stockade::sandbox
