#include "sandbox/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/log.h"
#include "common/syscall.h"
#include "sandbox/cgroup_paths.h"

namespace stockade::sandbox {

namespace {

using namespace std::chrono_literals;

constexpr std::array<std::string_view, 3> kControllers = {"memory", "pids", "cpu"};

std::atomic<uint64_t> g_counter{0};

std::string join(std::string_view dir, std::string_view name) {
    return fmt::format("{}/{}", dir, name);
}

std::vector<std::string> read_controllers(const std::string& path) {
    auto text = read_file(path);
    return text ? parse_controller_list(*text) : std::vector<std::string>{};
}

bool writable(const std::string& path) noexcept {
    return ::access(path.c_str(), W_OK) == 0;
}

// Creates and removes a uniquely named directory in `dir`: the test that we could put leaves
// there. Returns an empty string on success, the cause otherwise.
std::string try_mkdir_in(const std::string& dir, std::string_view prefix) {
    std::string probe = join(dir, fmt::format("{}-{}-{}", prefix, ::getpid(), g_counter++));
    if (::mkdir(probe.c_str(), 0755) != 0) {
        return fmt::format("cannot create a cgroup in \"{}\": {}", dir, errno_string(errno));
    }
    (void)::rmdir(probe.c_str());
    return {};
}

// The outcome of probing one hierarchy: a base directory for leaves, the controllers leaves
// there can get (v2), and why it is unusable otherwise.
struct HierarchyProbe {
    std::string base;
    std::vector<std::string> controllers;  // v2 only
    std::string reason;
};

// Root: controllers available at the cgroup2 root can be enabled for <root>/stockade, unless the
// mounted root is a namespaced, non-root cgroup with member processes (a container): then the
// no-internal-process rule forbids enabling them for children.
HierarchyProbe probe_v2_as_root(const CgroupMount& mount) {
    HierarchyProbe out;
    const std::string& root = mount.mount_point;
    std::string base = join(root, "stockade");
    bool base_exists = path_exists(base);
    std::vector<std::string> available = read_controllers(join(root, "cgroup.controllers"));
    std::vector<std::string> base_available =
        base_exists ? read_controllers(join(base, "cgroup.controllers"))
                    : std::vector<std::string>{};
    std::vector<std::string> enabled = read_controllers(join(root, "cgroup.subtree_control"));
    bool namespaced_root = path_exists(join(root, "cgroup.type"));
    auto procs = read_file(join(root, "cgroup.procs"));
    bool root_has_procs = procs && !parse_pid_list(*procs).empty();
    for (std::string_view c : kControllers) {
        bool ok = contains_controller(base_available, c) || contains_controller(enabled, c) ||
                  (contains_controller(available, c) && !(namespaced_root && root_has_procs));
        if (ok) {
            out.controllers.emplace_back(c);
        }
    }
    if (out.controllers.empty()) {
        if (namespaced_root && root_has_procs && !available.empty()) {
            out.reason = fmt::format(
                "cgroup v2 root \"{}\" is a namespaced cgroup with member processes, so no "
                "controller can be enabled for its children (typical inside a container)",
                root);
        } else {
            std::string list = fmt::format("{}", fmt::join(available, " "));
            out.reason = fmt::format(
                "cgroup v2 at \"{}\" offers no memory/pids/cpu controller "
                "(cgroup.controllers: \"{}\")",
                root, list);
        }
        return out;
    }
    out.reason = base_exists ? try_mkdir_in(base, "probe") : try_mkdir_in(root, "stockade-probe");
    if (out.reason.empty()) {
        out.base = base;
    } else {
        out.controllers.clear();
    }
    return out;
}

// Non-root: the parent of our own cgroup, when it is delegated to us.
HierarchyProbe probe_v2_delegated(const CgroupMount& mount,
                                  const std::vector<CgroupMembership>& self) {
    HierarchyProbe out;
    auto own_path = find_v2_path(self);
    std::optional<std::string> own = own_path ? cgroup_dir(mount, *own_path) : std::nullopt;
    if (!own) {
        out.reason = fmt::format("our cgroup v2 is not visible under \"{}\"", mount.mount_point);
        return out;
    }
    std::optional<std::string> base = *own == mount.mount_point ? std::nullopt : parent_dir(*own);
    if (!base) {
        out.reason =
            fmt::format("our cgroup is the root of the cgroup2 mount \"{}\"", mount.mount_point);
        return out;
    }
    if (!writable(*base) || !writable(join(*base, "cgroup.procs"))) {
        out.reason = fmt::format(
            "cgroup v2 directory \"{}\" is not writable by uid {} (no delegation; start under "
            "`systemd-run --user --scope -p Delegate=yes` or run as root)",
            *base, ::geteuid());
        return out;
    }
    std::vector<std::string> enabled = read_controllers(join(*base, "cgroup.subtree_control"));
    std::vector<std::string> available = read_controllers(join(*base, "cgroup.controllers"));
    bool can_enable = writable(join(*base, "cgroup.subtree_control"));
    for (std::string_view c : kControllers) {
        if (contains_controller(enabled, c) || (can_enable && contains_controller(available, c))) {
            out.controllers.emplace_back(c);
        }
    }
    if (out.controllers.empty()) {
        out.reason =
            fmt::format("delegated cgroup \"{}\" offers no memory/pids/cpu controller", *base);
        return out;
    }
    out.reason = try_mkdir_in(*base, "probe");
    if (out.reason.empty()) {
        out.base = *base;
    } else {
        out.controllers.clear();
    }
    return out;
}

HierarchyProbe probe_v1(const CgroupMount& mount, std::string_view controller) {
    HierarchyProbe out;
    if (::geteuid() != 0) {
        out.reason = fmt::format("cgroup v1 {} hierarchy not writable by uid {} (no delegation)",
                                 controller, ::geteuid());
        return out;
    }
    std::string base = join(mount.mount_point, "stockade");
    out.reason = path_exists(base) ? try_mkdir_in(base, "probe")
                                   : try_mkdir_in(mount.mount_point, "stockade-probe");
    if (out.reason.empty()) {
        out.base = base;
    }
    return out;
}

// memory.swap.max exists wherever the memory controller is enabled, if the kernel accounts swap.
// Looks at the first cgroup that has the memory controller: the base, our own, or a child of
// the root (system.slice, user.slice, ...).
bool v2_swap_limit_exists(const CgroupMount& mount, const std::string& base,
                          const std::vector<CgroupMembership>& self) {
    std::vector<std::string> candidates = {base};
    if (auto own = find_v2_path(self)) {
        if (auto dir = cgroup_dir(mount, *own)) {
            candidates.push_back(*dir);
        }
    }
    std::error_code ec;
    for (std::filesystem::directory_iterator it(mount.mount_point, ec), end; !ec && it != end;
         it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
            candidates.push_back(it->path().string());
        }
    }
    for (const std::string& dir : candidates) {
        if (path_exists(join(dir, "memory.current"))) {
            return path_exists(join(dir, "memory.swap.max"));
        }
    }
    return false;
}

Status make_dir(const std::string& path, bool exist_ok) {
    if (::mkdir(path.c_str(), 0755) != 0 && !(exist_ok && errno == EEXIST)) {
        return errno_error(fmt::format("create cgroup \"{}\"", path), errno);
    }
    return {};
}

// Enables `controller` for the children of `dir` (v2), if it is not already.
Status enable_controller(const std::string& dir, std::string_view controller) {
    std::string file = join(dir, "cgroup.subtree_control");
    if (contains_controller(read_controllers(file), controller)) {
        return {};
    }
    if (auto st = write_file(file, fmt::format("+{}", controller)); !st) {
        return std::move(st).error().wrap(fmt::format("enable controller \"{}\"", controller));
    }
    return {};
}

// Makes the base usable: creates it (root) and, on v2, enables the leaves' controllers. Then
// removes empty leaves left by supervisors that are gone.
Status prepare_base(const std::string& base, bool create, bool v2,
                    const std::vector<std::string_view>& controllers) {
    if (base.empty()) {
        return Error{Errc::kInvalidArgument, "cgroup support names no base directory"};
    }
    if (create) {
        RETURN_IF_ERROR(make_dir(base, /*exist_ok=*/true));
    }
    if (v2) {
        std::optional<std::string> parent = parent_dir(base);
        for (std::string_view c : controllers) {
            if (create && parent &&
                !contains_controller(read_controllers(join(base, "cgroup.controllers")), c)) {
                RETURN_IF_ERROR(enable_controller(*parent, c));
            }
            RETURN_IF_ERROR(enable_controller(base, c));
        }
    }
    // Housekeeping only: a base that cannot be listed fails at the leaf's mkdir instead.
    std::error_code ec;
    std::filesystem::directory_iterator it(base, ec);
    std::vector<std::string> stale;
    for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        std::optional<pid_t> pid = parse_leaf_pid(name);
        if (pid && *pid != ::getpid() && ::kill(*pid, 0) != 0 && errno == ESRCH) {
            stale.push_back(join(base, name));
        }
    }
    for (const std::string& dir : stale) {
        // A session worker's leaf has children of its own (the commands' memory cgroup, and
        // on v2 the worker's): they go first. Fails harmlessly (EBUSY) while one still holds
        // processes.
        for (const char* child : {"commands", "worker"}) {
            (void)::rmdir(join(dir, child).c_str());
        }
        if (::rmdir(dir.c_str()) == 0) {
            SPDLOG_LOGGER_DEBUG(log::get("sandbox"), "stale cgroup removed dir=\"{}\"", dir);
        }
    }
    return {};
}

Status write_limit(const std::string& dir, std::string_view file, std::string_view value) {
    if (auto st = write_file(join(dir, file), value); !st) {
        return std::move(st).error().wrap(fmt::format("set cgroup limit {}={}", file, value));
    }
    return {};
}

// SIGKILLs the members listed in `dir`/cgroup.procs until none is left (bounded: a fork bomb
// is held by pids.max). A pid may be reused between the read and the kill; cgroup.kill (v2)
// has no such race.
void kill_listed(const std::string& dir) noexcept {
    try {
        constexpr int kRounds = 200;
        for (int round = 0; round < kRounds; ++round) {
            auto procs = read_file(join(dir, "cgroup.procs"));
            if (!procs) {
                return;
            }
            std::vector<pid_t> pids = parse_pid_list(*procs);
            if (pids.empty()) {
                return;
            }
            for (pid_t pid : pids) {
                (void)::kill(pid, SIGKILL);
            }
            std::this_thread::sleep_for(1ms);
        }
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; remove() reports what is left
    }
}

// Controllers that are unavailable for the same reason share one clause:
// "memory, pids, cpu: cgroup v2 directory ... is not writable by uid 1000 (...)".
struct ControllerReason {
    std::vector<std::string_view> controllers;
    std::string reason;
};

void add_reason(std::vector<ControllerReason>& reasons, std::string_view controller,
                std::string reason) {
    for (ControllerReason& r : reasons) {
        if (r.reason == reason) {
            r.controllers.push_back(controller);
            return;
        }
    }
    reasons.push_back(ControllerReason{{controller}, std::move(reason)});
}

}  // namespace

const char* cgroup_version_name(CgroupVersion version) noexcept {
    switch (version) {
        case CgroupVersion::kNone:
            return "none";
        case CgroupVersion::kV1:
            return "v1";
        case CgroupVersion::kV2:
            return "v2";
    }
    return "unknown";
}

CgroupSupport probe_cgroups() {
    CgroupSupport support;
    auto mountinfo = read_file("/proc/self/mountinfo", 16 << 20);
    auto self_text = read_file("/proc/self/cgroup");
    if (!mountinfo || !self_text) {
        support.reason = (!mountinfo ? mountinfo.error() : self_text.error()).message;
        return support;
    }
    std::vector<CgroupMount> mounts = parse_cgroup_mounts(*mountinfo);
    std::vector<CgroupMembership> self = parse_proc_cgroup(*self_text);
    bool root = ::geteuid() == 0;

    const CgroupMount* v2_mount = find_v2_mount(mounts);
    HierarchyProbe v2;
    if (v2_mount == nullptr) {
        v2.reason = "no cgroup2 file system is mounted";
    } else {
        v2 = root ? probe_v2_as_root(*v2_mount) : probe_v2_delegated(*v2_mount, self);
    }

    std::vector<ControllerReason> reasons;
    for (std::string_view c : kControllers) {
        CgroupVersion version = CgroupVersion::kNone;
        std::string v1_base;
        std::string reason;
        const CgroupMount* v1_mount = find_v1_mount(mounts, c);
        if (contains_controller(v2.controllers, c)) {
            version = CgroupVersion::kV2;
        } else if (v1_mount != nullptr) {
            HierarchyProbe v1 = probe_v1(*v1_mount, c);
            if (v1.base.empty()) {
                reason = std::move(v1.reason);
            } else {
                version = CgroupVersion::kV1;
                v1_base = std::move(v1.base);
            }
        } else {
            reason =
                v2.reason.empty() ? fmt::format("no cgroup hierarchy offers {}", c) : v2.reason;
        }
        if (version == CgroupVersion::kNone) {
            add_reason(reasons, c, reason);
        }
        if (c == "memory") {
            support.memory = version;
            support.memory_v1_base = std::move(v1_base);
            if (version == CgroupVersion::kV2) {
                support.memory_swap = v2_swap_limit_exists(*v2_mount, v2.base, self);
            } else if (version == CgroupVersion::kV1) {
                support.memory_swap =
                    path_exists(join(v1_mount->mount_point, "memory.memsw.limit_in_bytes"));
            }
        } else if (c == "pids") {
            support.pids = version;
            support.pids_v1_base = std::move(v1_base);
        } else {
            support.cpu = version;
            support.cpu_v1_base = std::move(v1_base);
        }
    }
    if (!v2.controllers.empty()) {
        support.v2_base = v2.base;
    }
    support.create_bases = root;
    for (const ControllerReason& r : reasons) {
        support.reason += fmt::format("{}{}: {}", support.reason.empty() ? "" : "; ",
                                      fmt::join(r.controllers, ", "), r.reason);
    }
    SPDLOG_LOGGER_DEBUG(
        log::get("sandbox"),
        "cgroups probed memory={} pids={} cpu={} swap={} v2_base=\"{}\" reason=\"{}\"",
        cgroup_version_name(support.memory), cgroup_version_name(support.pids),
        cgroup_version_name(support.cpu), support.memory_swap, support.v2_base, support.reason);
    return support;
}

Result<CgroupLeaf> CgroupLeaf::create(const Limits& limits, const CgroupSupport& host,
                                      bool commands) {
    std::optional<uint64_t> cpu_quota;
    if (limits.cpu) {
        ASSIGN_OR_RETURN(cpu_quota, cpu_quota_us(*limits.cpu));
    }
    // A group (a tenant's) sits between each base and the leaf: the leaves go in the group,
    // which is made and prepared like a base, once its base is.
    CgroupSupport support = host;
    if (!limits.group.empty()) {
        for (std::string* base : {&support.v2_base, &support.memory_v1_base, &support.pids_v1_base,
                                  &support.cpu_v1_base}) {
            if (!base->empty()) {
                *base = join(*base, limits.group);
            }
        }
    }
    auto prepare = [&](const std::string& host_base, const std::string& base, bool v2,
                       const std::vector<std::string_view>& controllers) -> Status {
        RETURN_IF_ERROR(prepare_base(host_base, host.create_bases, v2, controllers));
        return base == host_base ? Status{} : prepare_base(base, true, v2, controllers);
    };
    const bool weighted = limits.group_cpu_weight.has_value() && !limits.group.empty();
    bool want_cpu = (cpu_quota.has_value() || weighted) && support.cpu != CgroupVersion::kNone;
    std::string name = leaf_name(::getpid(), g_counter++);

    CgroupLeaf leaf;
    Defer undo{[&leaf] {
        leaf.kill();
        (void)leaf.remove();
    }};
    auto make_leaf = [&](const std::string& base,
                         std::string_view leaf_name) -> Result<std::string> {
        std::string dir = join(base, leaf_name);
        RETURN_IF_ERROR(make_dir(dir, /*exist_ok=*/false));
        leaf.dirs_.push_back(dir);
        return dir;
    };

    constexpr std::string_view kMemory = "memory";
    constexpr std::string_view kPids = "pids";
    constexpr std::string_view kCpu = "cpu";
    std::vector<std::string_view> v2_controllers;
    if (support.memory == CgroupVersion::kV2) {
        v2_controllers.push_back(kMemory);
    }
    if (support.pids == CgroupVersion::kV2) {
        v2_controllers.push_back(kPids);
    }
    if (want_cpu && support.cpu == CgroupVersion::kV2) {
        v2_controllers.push_back(kCpu);
    }
    if (!v2_controllers.empty()) {
        RETURN_IF_ERROR(prepare(host.v2_base, support.v2_base, true, v2_controllers));
        ASSIGN_OR_RETURN(leaf.v2_dir_, make_leaf(support.v2_base, name));
    }
    std::string memory_v1;
    std::string pids_v1;
    std::string cpu_v1;
    auto v1_leaf = [&](CgroupVersion version, const std::string& host_base, const std::string& base,
                       std::string* dir) -> Status {
        if (version != CgroupVersion::kV1) {
            return {};
        }
        RETURN_IF_ERROR(prepare(host_base, base, false, {}));
        ASSIGN_OR_RETURN(*dir, make_leaf(base, name));
        return {};
    };
    RETURN_IF_ERROR(
        v1_leaf(support.memory, host.memory_v1_base, support.memory_v1_base, &memory_v1));
    RETURN_IF_ERROR(v1_leaf(support.pids, host.pids_v1_base, support.pids_v1_base, &pids_v1));
    if (want_cpu) {
        RETURN_IF_ERROR(v1_leaf(support.cpu, host.cpu_v1_base, support.cpu_v1_base, &cpu_v1));
    }
    if (want_cpu && weighted) {
        // The group's share of the CPU against its siblings (v1: cpu.shares, 1024 for 100).
        const uint64_t weight = std::clamp<uint64_t>(*limits.group_cpu_weight, 1, 10'000);
        if (support.cpu == CgroupVersion::kV2) {
            RETURN_IF_ERROR(write_limit(support.v2_base, "cpu.weight", fmt::format("{}", weight)));
        } else {
            RETURN_IF_ERROR(
                write_limit(support.cpu_v1_base, "cpu.shares",
                            fmt::format("{}", std::max<uint64_t>(2, weight * 1024 / 100))));
        }
        leaf.cpu_weight_ = weight;
    }

    if (support.memory == CgroupVersion::kV2) {
        leaf.memory_dir_ = leaf.v2_dir_;
        leaf.memory_v2_ = true;
    } else {
        leaf.memory_dir_ = memory_v1;
    }
    // With a commands cgroup the leaf holds the limit plus the worker's reserve, and the
    // commands cgroup beneath it the limit itself.
    const bool split = commands && limits.memory_bytes && support.memory != CgroupVersion::kNone;
    const uint64_t leaf_memory =
        limits.memory_bytes ? *limits.memory_bytes + (split ? kWorkerMemoryReserve : 0) : 0;
    auto limit_memory = [&](const std::string& dir, bool v2, uint64_t bytes) -> Status {
        const std::string value = fmt::format("{}", bytes);
        if (v2) {
            RETURN_IF_ERROR(write_limit(dir, "memory.max", value));
            if (path_exists(join(dir, "memory.swap.max"))) {
                RETURN_IF_ERROR(write_limit(dir, "memory.swap.max", "0"));
                leaf.applies_swap_ = true;
            }
            return {};
        }
        RETURN_IF_ERROR(write_limit(dir, "memory.limit_in_bytes", value));
        // memsw counts memory + swap: the same value leaves no room for swap. It must be set
        // after limit_in_bytes, which it may not undercut.
        if (path_exists(join(dir, "memory.memsw.limit_in_bytes"))) {
            RETURN_IF_ERROR(write_limit(dir, "memory.memsw.limit_in_bytes", value));
            leaf.applies_swap_ = true;
        }
        return {};
    };
    const std::string leaf_v2 = leaf.v2_dir_;  // the leaf itself, where pids and cpu are limited
    std::string commands_dir;
    if (limits.memory_bytes && support.memory != CgroupVersion::kNone) {
        const bool v2 = support.memory == CgroupVersion::kV2;
        const std::string dir = v2 ? leaf_v2 : memory_v1;
        RETURN_IF_ERROR(limit_memory(dir, v2, leaf_memory));
        leaf.applies_memory_ = true;
        if (split) {
            if (v2) {
                // No process in a cgroup whose children have controllers: the init gets a
                // child of its own, beside the commands'.
                RETURN_IF_ERROR(enable_controller(dir, kMemory));
                ASSIGN_OR_RETURN(std::string worker, make_leaf(dir, "worker"));
                leaf.v2_dir_ = worker;
                leaf.memory_dir_ = worker;
            }
            ASSIGN_OR_RETURN(commands_dir, make_leaf(dir, "commands"));
            RETURN_IF_ERROR(limit_memory(commands_dir, v2, *limits.memory_bytes));
        }
    }
    if (limits.pids && support.pids != CgroupVersion::kNone) {
        const std::string& dir = support.pids == CgroupVersion::kV2 ? leaf_v2 : pids_v1;
        RETURN_IF_ERROR(write_limit(dir, "pids.max", fmt::format("{}", *limits.pids)));
        leaf.applies_pids_ = true;
    }
    if (cpu_quota && want_cpu && support.cpu == CgroupVersion::kV2) {
        RETURN_IF_ERROR(
            write_limit(leaf_v2, "cpu.max", fmt::format("{} {}", *cpu_quota, kCpuPeriodUs)));
        leaf.applies_cpu_ = true;
    } else if (cpu_quota && want_cpu && support.cpu == CgroupVersion::kV1) {
        RETURN_IF_ERROR(write_limit(cpu_v1, "cpu.cfs_period_us", fmt::format("{}", kCpuPeriodUs)));
        RETURN_IF_ERROR(write_limit(cpu_v1, "cpu.cfs_quota_us", fmt::format("{}", *cpu_quota)));
        leaf.applies_cpu_ = true;
    }

    if (!leaf.v2_dir_.empty()) {
        ASSIGN_OR_RETURN(leaf.v2_fd_, open_path(leaf.v2_dir_, O_RDONLY | O_DIRECTORY));
    }
    for (const std::string* dir : {&leaf.v2_dir_, &memory_v1, &pids_v1, &cpu_v1}) {
        if (!dir->empty()) {
            leaf.join_dirs_.push_back(*dir);
        }
    }
    if (!commands_dir.empty()) {
        ASSIGN_OR_RETURN(leaf.commands_procs_fd_,
                         open_path(join(commands_dir, "cgroup.procs"), O_WRONLY));
    }
    undo.dismiss();
    SPDLOG_LOGGER_DEBUG(log::get("sandbox"),
                        "cgroup leaf created name={} dirs={} memory={} swap={} pids={} cpu={}",
                        name, leaf.dirs_.size(), leaf.applies_memory_, leaf.applies_swap_,
                        leaf.applies_pids_, leaf.applies_cpu_);
    return leaf;
}

CgroupLeaf::CgroupLeaf(CgroupLeaf&& o) noexcept
    : dirs_(std::exchange(o.dirs_, {})),
      join_dirs_(std::exchange(o.join_dirs_, {})),
      v2_dir_(std::exchange(o.v2_dir_, {})),
      memory_dir_(std::exchange(o.memory_dir_, {})),
      memory_v2_(std::exchange(o.memory_v2_, false)),
      applies_memory_(std::exchange(o.applies_memory_, false)),
      applies_swap_(std::exchange(o.applies_swap_, false)),
      applies_pids_(std::exchange(o.applies_pids_, false)),
      applies_cpu_(std::exchange(o.applies_cpu_, false)),
      cpu_weight_(std::exchange(o.cpu_weight_, std::nullopt)),
      v2_fd_(std::move(o.v2_fd_)),
      commands_procs_fd_(std::move(o.commands_procs_fd_)) {}

CgroupLeaf& CgroupLeaf::operator=(CgroupLeaf&& o) noexcept {
    if (this != &o) {
        if (!dirs_.empty()) {
            kill();
            (void)remove();
        }
        dirs_ = std::exchange(o.dirs_, {});
        join_dirs_ = std::exchange(o.join_dirs_, {});
        v2_dir_ = std::exchange(o.v2_dir_, {});
        memory_dir_ = std::exchange(o.memory_dir_, {});
        memory_v2_ = std::exchange(o.memory_v2_, false);
        applies_memory_ = std::exchange(o.applies_memory_, false);
        applies_swap_ = std::exchange(o.applies_swap_, false);
        applies_pids_ = std::exchange(o.applies_pids_, false);
        applies_cpu_ = std::exchange(o.applies_cpu_, false);
        cpu_weight_ = std::exchange(o.cpu_weight_, std::nullopt);
        v2_fd_ = std::move(o.v2_fd_);
        commands_procs_fd_ = std::move(o.commands_procs_fd_);
    }
    return *this;
}

CgroupLeaf::~CgroupLeaf() {
    if (dirs_.empty()) {
        return;
    }
    kill();
    Status st = remove();
    if (!st) {
        try {
            SPDLOG_LOGGER_WARN(log::get("sandbox"), "cgroup leaf not removed error=\"{}\"",
                               st.error().message);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
        }
    }
}

Status CgroupLeaf::add_process(pid_t pid, bool v2_done) const {
    for (const std::string& dir : join_dirs_) {
        if (v2_done && dir == v2_dir_) {
            continue;
        }
        if (auto st = write_file(join(dir, "cgroup.procs"), fmt::format("{}", pid)); !st) {
            return std::move(st).error().wrap(fmt::format("add pid {} to cgroup", pid));
        }
    }
    return {};
}

void CgroupLeaf::kill() const noexcept {
    try {
        // cgroup.kill (v2; of the leaf, it takes the children too) where there is one.
        for (const std::string& dir : dirs_) {
            if (write_file(join(dir, "cgroup.kill"), "1")) {
                continue;
            }
            kill_listed(dir);
        }
    } catch (...) {  // NOLINT(bugprone-empty-catch): best effort; remove() reports what is left
    }
}

Status CgroupLeaf::remove() noexcept {
    try {
        v2_fd_.reset();
        commands_procs_fd_.reset();
        Status result;
        std::vector<std::string> left;
        // Children before their parents.
        for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
            const std::string& dir = *it;
            // A killed process leaves its cgroup a moment after the kill: retry EBUSY briefly.
            auto deadline = std::chrono::steady_clock::now() + 1s;
            while (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
                int err = errno;
                if (err == EBUSY && std::chrono::steady_clock::now() < deadline) {
                    std::this_thread::sleep_for(10ms);
                    continue;
                }
                if (result) {
                    result = errno_error(fmt::format("remove cgroup \"{}\"", dir), err);
                }
                left.push_back(dir);
                break;
            }
        }
        std::reverse(left.begin(), left.end());
        dirs_ = std::move(left);
        if (dirs_.empty()) {
            v2_dir_.clear();
            memory_dir_.clear();
        }
        return result;
    } catch (...) {
        return Error{Errc::kInternal, "remove cgroup: out of memory"};
    }
}

bool CgroupLeaf::oom_killed() const {
    if (memory_dir_.empty()) {
        return false;
    }
    if (memory_v2_) {
        auto events = read_file(join(memory_dir_, "memory.events"));
        return events && parse_keyed_value(*events, "oom_kill").value_or(0) > 0;
    }
    auto control = read_file(join(memory_dir_, "memory.oom_control"));
    return control && (parse_keyed_value(*control, "oom_kill").value_or(0) > 0 ||
                       parse_keyed_value(*control, "under_oom").value_or(0) > 0);
}

}  // namespace stockade::sandbox
