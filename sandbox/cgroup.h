// CgroupLeaf: one cgroup per sandbox, with memory (+swap), pids and cpu limits, on cgroup v2
// or — on hybrid hosts whose controllers are bound to v1 — on the v1 hierarchies. The leaf is
// owned: its destructor kills whatever is left in it and removes the directories.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "sandbox/spec.h"

namespace stockade::sandbox {

enum class CgroupVersion { kNone, kV1, kV2 };
const char* cgroup_version_name(CgroupVersion version) noexcept;  // "none", "v1", "v2"

// What the host lets this process do with cgroups, controller by controller.
struct CgroupSupport {
    CgroupVersion memory = CgroupVersion::kNone;
    CgroupVersion pids = CgroupVersion::kNone;
    CgroupVersion cpu = CgroupVersion::kNone;
    bool memory_swap = false;  // swap can be limited too (memory.swap.max / memsw)
    std::string reason{};      // why a controller is unavailable, for doctor and warnings
    // Where leaves go, as found by probe_cgroups (empty when that hierarchy is not used).
    std::string v2_base{};         // e.g. "/sys/fs/cgroup/stockade"
    std::string memory_v1_base{};  // e.g. "/sys/fs/cgroup/memory/stockade"
    std::string pids_v1_base{};
    std::string cpu_v1_base{};
    // Root: the bases are "<hierarchy root>/stockade", created (and on v2 given their
    // controllers through the parent's cgroup.subtree_control) by CgroupLeaf::create.
    bool create_bases = false;
    [[nodiscard]] bool usable() const noexcept {
        return memory != CgroupVersion::kNone && pids != CgroupVersion::kNone;
    }
};

// Probes without side effects beyond a test directory it creates and removes.
CgroupSupport probe_cgroups();

// What the session worker's sandbox adds to its memory limit for the worker itself, when its
// commands get a memory cgroup of their own (CgroupLeaf::create's `commands`).
inline constexpr uint64_t kWorkerMemoryReserve = uint64_t{64} << 20;

class CgroupLeaf {
public:
    // Creates the leaf (one directory per hierarchy used) named after this process and a
    // counter, and writes the limits. Also removes stale empty leaves of dead supervisors.
    // `commands` (with a memory limit on a memory cgroup): the leaf gets a child `commands`
    // with the memory limit, for the processes the sandbox's init starts (through
    // commands_procs_fd()), and the leaf itself the limit plus kWorkerMemoryReserve: an OOM
    // kill the commands cause then picks among them, never the init. On v2, where a cgroup
    // with controlled children holds no process, the init's own is a second child `worker`.
    static Result<CgroupLeaf> create(const Limits& limits, const CgroupSupport& support,
                                     bool commands = false);

    CgroupLeaf() = default;
    CgroupLeaf(CgroupLeaf&&) noexcept;
    CgroupLeaf& operator=(CgroupLeaf&&) noexcept;
    CgroupLeaf(const CgroupLeaf&) = delete;
    CgroupLeaf& operator=(const CgroupLeaf&) = delete;
    ~CgroupLeaf();  // kill() + remove(), never throws

    // A v2 directory fd for clone3(CLONE_INTO_CGROUP) (the init's: `worker` with commands),
    // or -1 when the leaf is v1-only.
    [[nodiscard]] int v2_dir_fd() const noexcept { return v2_fd_.get(); }
    // The commands cgroup's cgroup.procs, open for writing (a process writes "0" to move
    // itself there); -1 when there is none.
    [[nodiscard]] int commands_procs_fd() const noexcept { return commands_procs_fd_.get(); }
    // Moves `pid` into every v1 directory of the leaf (and the v2 one, if it was not
    // entered at clone time).
    Status add_process(pid_t pid, bool v2_done) const;
    // SIGKILLs every process in the leaf (cgroup.kill on v2; cgroup.procs on v1).
    void kill() const noexcept;
    // Removes the directories (retrying briefly while processes finish exiting).
    Status remove() noexcept;
    // True if an OOM kill happened in the leaf's own memory cgroup — the init's, when the
    // commands have their own (memory.events / memory.oom_control).
    [[nodiscard]] bool oom_killed() const;
    [[nodiscard]] const std::vector<std::string>& dirs() const noexcept { return dirs_; }

    // Which of the requested limits the leaf enforces. A limit asked for whose controller is
    // unavailable is not applied here: the launcher falls back to rlimits for it.
    [[nodiscard]] bool applies_memory() const noexcept { return applies_memory_; }
    [[nodiscard]] bool applies_swap() const noexcept { return applies_swap_; }  // swap held at 0
    [[nodiscard]] bool applies_pids() const noexcept { return applies_pids_; }
    [[nodiscard]] bool applies_cpu() const noexcept { return applies_cpu_; }
    // The weight written on the leaf's group (Limits::group_cpu_weight), if it has one.
    [[nodiscard]] std::optional<uint64_t> cpu_weight() const noexcept { return cpu_weight_; }

private:
    std::vector<std::string> dirs_;       // absolute paths, parents before their children
    std::vector<std::string> join_dirs_;  // where the init goes: one per hierarchy
    std::string v2_dir_;                  // where the init goes on v2 (the leaf, or its `worker`)
    std::string memory_dir_;  // the init's memory cgroup, whose controller counts OOM kills
    bool memory_v2_ = false;
    bool applies_memory_ = false;
    bool applies_swap_ = false;
    bool applies_pids_ = false;
    bool applies_cpu_ = false;
    std::optional<uint64_t> cpu_weight_;
    UniqueFd v2_fd_;
    UniqueFd commands_procs_fd_;
};

}  // namespace stockade::sandbox
