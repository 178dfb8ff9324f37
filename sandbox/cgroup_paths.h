// Pure helpers for cgroup.cc: parsing /proc/self/mountinfo and /proc/self/cgroup, mapping a
// process's cgroup to a directory, naming leaves and building the contents of limit files.
// Nothing here touches the file system, so every function is unit-testable with literal text.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::sandbox {

// One cgroup or cgroup2 mount from /proc/self/mountinfo.
struct CgroupMount {
    std::string mount_point;               // "/sys/fs/cgroup/memory" (octal escapes decoded)
    std::string root;                      // the hierarchy path mounted there, usually "/"
    bool v2 = false;                       // fstype cgroup2
    std::vector<std::string> controllers;  // v1 only, from the super options: "cpu", "cpuacct"
    friend bool operator==(const CgroupMount&, const CgroupMount&) = default;
};

// Parses one mountinfo line; nullopt for malformed lines and for other file systems.
std::optional<CgroupMount> parse_cgroup_mount(std::string_view line);
// Every cgroup/cgroup2 mount of a whole mountinfo text, in file order.
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

// One line of /proc/<pid>/cgroup: "4:memory:/process_api/b61f" or "0::/user.slice/x.scope".
struct CgroupMembership {
    int hierarchy_id = 0;
    std::vector<std::string> controllers;  // empty for the v2 line ("0::")
    std::string path;                      // absolute, relative to the hierarchy's root
    friend bool operator==(const CgroupMembership&, const CgroupMembership&) = default;
};

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text);

// The v1 mount that carries `controller`, or the cgroup2 mount (controller ignored) when v2.
// The first match wins (later ones are usually bind mounts of the same hierarchy).
const CgroupMount* find_v1_mount(const std::vector<CgroupMount>& mounts,
                                 std::string_view controller);
const CgroupMount* find_v2_mount(const std::vector<CgroupMount>& mounts);
// The process's path in the v1 hierarchy of `controller`, or its v2 path ("0::").
std::optional<std::string> find_v1_path(const std::vector<CgroupMembership>& memberships,
                                        std::string_view controller);
std::optional<std::string> find_v2_path(const std::vector<CgroupMembership>& memberships);

// The directory of hierarchy path `cgroup_path` under `mount`: the mount point plus the part
// of the path below the mount's root. nullopt when the path lies outside the mounted subtree
// (e.g. "/../.." seen from another cgroup namespace).
std::optional<std::string> cgroup_dir(const CgroupMount& mount, std::string_view cgroup_path);

// "/a/b/c" -> "/a/b"; "/a" -> "/"; "/" -> nullopt.
std::optional<std::string> parent_dir(std::string_view path);

// A cgroup.controllers / cgroup.subtree_control line: "cpuset cpu io memory pids".
std::vector<std::string> parse_controller_list(std::string_view text);
bool contains_controller(const std::vector<std::string>& list, std::string_view controller);

// cgroup.procs: one pid per line.
std::vector<pid_t> parse_pid_list(std::string_view text);

// The value of `key` in a flat-keyed file ("oom_kill 3" in memory.events / memory.oom_control).
std::optional<uint64_t> parse_keyed_value(std::string_view text, std::string_view key);

// Leaf names: "run-<supervisor pid>-<counter>". parse_leaf_pid gives the pid of a leaf name,
// nullopt for any other name.
std::string leaf_name(pid_t supervisor, uint64_t counter);
std::optional<pid_t> parse_leaf_pid(std::string_view name);

inline constexpr uint64_t kCpuPeriodUs = 100000;
// The CFS quota in microseconds per `period_us` for `cpus` CPUs (0.5 -> 50000); at least the
// kernel's minimum of 1000 us. kInvalidArgument for a non-finite, non-positive or absurd value.
Result<uint64_t> cpu_quota_us(double cpus, uint64_t period_us = kCpuPeriodUs);
// The contents of v2 cpu.max: "<quota> <period>", e.g. "50000 100000" for 0.5 CPUs.
Result<std::string> cpu_max_value(double cpus, uint64_t period_us = kCpuPeriodUs);

}  // namespace stockade::sandbox
