#include "sandbox/cgroup.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/syscall.h"
#include "sandbox/cgroup_paths.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::FdLeakChecker;
using ::stockade::testing::IsOk;

constexpr uint64_t kMemory = 64ULL << 20;

Limits make_limits(std::optional<uint64_t> memory, std::optional<uint64_t> pids,
                   std::optional<double> cpu) {
    Limits limits;
    limits.memory_bytes = memory;
    limits.pids = pids;
    limits.cpu = cpu;
    return limits;
}

std::string basename_of(const std::string& path) {
    return path.substr(path.rfind('/') + 1);
}

// The first leaf directory that has `file`, i.e. whose hierarchy carries that controller.
std::optional<std::string> read_leaf_file(const CgroupLeaf& leaf, const std::string& file) {
    for (const std::string& dir : leaf.dirs()) {
        if (auto text = read_file(fmt::format("{}/{}", dir, file))) {
            while (!text->empty() && text->back() == '\n') {
                text->pop_back();
            }
            return *text;
        }
    }
    return std::nullopt;
}

// A child that waits for one byte on `go`, then runs `body` and exits 0.
template <class F>
pid_t fork_waiting_child(int go, F body) {
    pid_t pid = ::fork();
    if (pid == 0) {
        char byte = 0;
        if (::read(go, &byte, 1) != 1) {
            _exit(2);
        }
        body();
        _exit(0);
    }
    return pid;
}

void hold_forever() {
    while (true) {
        ::pause();
    }
}

class CgroupLeafTest : public ::testing::Test {
protected:
    void SetUp() override {
        support_ = probe_cgroups();
        if (!support_.usable()) {
            GTEST_SKIP() << "cgroups not usable: " << support_.reason;
        }
    }
    CgroupSupport support_;
    FdLeakChecker fd_check_;
};

TEST_F(CgroupLeafTest, WritesLimitsHoldsProcessesKillsAndRemoves) {
    auto leaf = CgroupLeaf::create(make_limits(kMemory, 32, 0.5), support_);
    ASSERT_THAT(leaf, IsOk());
    EXPECT_TRUE(leaf->applies_memory());
    EXPECT_TRUE(leaf->applies_pids());
    EXPECT_EQ(leaf->applies_cpu(), support_.cpu != CgroupVersion::kNone);
    EXPECT_EQ(leaf->applies_swap(), support_.memory_swap);
    ASSERT_FALSE(leaf->dirs().empty());
    for (const std::string& dir : leaf->dirs()) {
        EXPECT_TRUE(path_exists(dir)) << dir;
        EXPECT_THAT(basename_of(dir), ::testing::StartsWith(fmt::format("run-{}-", ::getpid())));
    }
    EXPECT_EQ(leaf->v2_dir_fd() >= 0,
              support_.memory == CgroupVersion::kV2 || support_.pids == CgroupVersion::kV2);

    const std::string bytes = std::to_string(kMemory);
    if (support_.memory == CgroupVersion::kV2) {
        EXPECT_EQ(read_leaf_file(*leaf, "memory.max"), bytes);
        if (support_.memory_swap) {
            EXPECT_EQ(read_leaf_file(*leaf, "memory.swap.max"), "0");
        }
    } else {
        EXPECT_EQ(read_leaf_file(*leaf, "memory.limit_in_bytes"), bytes);
        if (support_.memory_swap) {
            EXPECT_EQ(read_leaf_file(*leaf, "memory.memsw.limit_in_bytes"), bytes);
        }
    }
    EXPECT_EQ(read_leaf_file(*leaf, "pids.max"), "32");
    if (support_.cpu == CgroupVersion::kV2) {
        EXPECT_EQ(read_leaf_file(*leaf, "cpu.max"), "50000 100000");
    } else if (support_.cpu == CgroupVersion::kV1) {
        EXPECT_EQ(read_leaf_file(*leaf, "cpu.cfs_period_us"), "100000");
        EXPECT_EQ(read_leaf_file(*leaf, "cpu.cfs_quota_us"), "50000");
    }
    EXPECT_FALSE(leaf->oom_killed());

    auto go = make_pipe();
    ASSERT_THAT(go, IsOk());
    pid_t child = fork_waiting_child(go->first.get(), hold_forever);
    ASSERT_GT(child, 0);
    ASSERT_THAT(leaf->add_process(child, /*v2_done=*/false), IsOk());
    ASSERT_THAT(write_all(go->second.get(), "x"), IsOk());

    // /proc/<pid>/cgroup names the leaf once per hierarchy the leaf spans.
    auto membership = read_file(fmt::format("/proc/{}/cgroup", child));
    ASSERT_THAT(membership, IsOk());
    const std::string name = basename_of(leaf->dirs().front());
    size_t lines = 0;
    for (const CgroupMembership& m : parse_proc_cgroup(*membership)) {
        lines += m.path.ends_with("/" + name) ? 1U : 0U;
    }
    EXPECT_EQ(lines, leaf->dirs().size()) << *membership;

    leaf->kill();
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

    std::vector<std::string> dirs = leaf->dirs();
    ASSERT_THAT(leaf->remove(), IsOk());
    EXPECT_TRUE(leaf->dirs().empty());
    for (const std::string& dir : dirs) {
        EXPECT_FALSE(path_exists(dir)) << dir;
    }
}

TEST_F(CgroupLeafTest, DestructorKillsMembersAndRemovesDirectories) {
    auto go = make_pipe();
    ASSERT_THAT(go, IsOk());
    pid_t child = fork_waiting_child(go->first.get(), hold_forever);
    ASSERT_GT(child, 0);
    std::vector<std::string> dirs;
    {
        auto leaf = CgroupLeaf::create(make_limits(std::nullopt, 8, std::nullopt), support_);
        ASSERT_THAT(leaf, IsOk());
        EXPECT_FALSE(leaf->applies_cpu());
        ASSERT_THAT(leaf->add_process(child, false), IsOk());
        dirs = leaf->dirs();
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    for (const std::string& dir : dirs) {
        EXPECT_FALSE(path_exists(dir)) << dir;
    }
}

TEST_F(CgroupLeafTest, MemoryLimitEndsInAnOomKillThatIsReported) {
    auto leaf = CgroupLeaf::create(make_limits(kMemory, std::nullopt, std::nullopt), support_);
    ASSERT_THAT(leaf, IsOk());
    if (!leaf->applies_swap() && ::access("/proc/swaps", R_OK) == 0) {
        auto swaps = read_file("/proc/swaps");
        if (swaps && std::count(swaps->begin(), swaps->end(), '\n') > 1) {
            GTEST_SKIP() << "swap is on and cannot be limited: the child would swap, not die";
        }
    }
    auto go = make_pipe();
    ASSERT_THAT(go, IsOk());
    pid_t child = fork_waiting_child(go->first.get(), [] {
        constexpr size_t kSize = 4 * kMemory;
        void* p =
            ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            std::memset(p, 1, kSize);
        }
    });
    ASSERT_GT(child, 0);
    ASSERT_THAT(leaf->add_process(child, false), IsOk());
    ASSERT_THAT(write_all(go->second.get(), "x"), IsOk());
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    EXPECT_TRUE(leaf->oom_killed());
    EXPECT_THAT(leaf->remove(), IsOk());
}

// What a session's commands fill — memory nobody's RSS counts (a memfd, tmpfs), or their own —
// is charged to their cgroup, whose limit is the sandbox's: the OOM kill picks among them,
// while the init (the worker) has a reserve of its own above it and survives.
TEST_F(CgroupLeafTest, WithACommandsCgroupAnOomKillFallsOnTheCommandsNotOnTheInit) {
    auto leaf = CgroupLeaf::create(make_limits(kMemory, std::nullopt, std::nullopt), support_,
                                   /*commands=*/true);
    ASSERT_THAT(leaf, IsOk());
    ASSERT_GE(leaf->commands_procs_fd(), 0);
    if (!leaf->applies_swap() && ::access("/proc/swaps", R_OK) == 0) {
        auto swaps = read_file("/proc/swaps");
        if (swaps && std::count(swaps->begin(), swaps->end(), '\n') > 1) {
            GTEST_SKIP() << "swap is on and cannot be limited: the child would swap, not die";
        }
    }
    const std::string limit = std::to_string(kMemory);
    const std::string with_reserve = std::to_string(kMemory + kWorkerMemoryReserve);
    const std::string commands_dir = leaf->dirs().back();
    EXPECT_EQ(basename_of(commands_dir), "commands");
    if (support_.memory == CgroupVersion::kV1) {
        EXPECT_EQ(read_leaf_file(*leaf, "memory.limit_in_bytes"), with_reserve);
        EXPECT_EQ(read_file(commands_dir + "/memory.limit_in_bytes").value_or(""), limit + "\n");
    }

    auto init_go = make_pipe();
    ASSERT_THAT(init_go, IsOk());
    pid_t init = fork_waiting_child(init_go->first.get(), hold_forever);
    ASSERT_GT(init, 0);
    ASSERT_THAT(leaf->add_process(init, false), IsOk());
    ASSERT_THAT(write_all(init_go->second.get(), "x"), IsOk());

    auto go = make_pipe();
    ASSERT_THAT(go, IsOk());
    const int procs = leaf->commands_procs_fd();
    pid_t command = fork_waiting_child(go->first.get(), [procs] {
        // As the worker's spawned child does: join the commands cgroup, then fill a memfd.
        if (::write(procs, "0", 1) != 1) {
            _exit(3);
        }
        const int fd = ::memfd_create("fill", 0);
        std::vector<char> block(1 << 20, 'x');
        for (size_t i = 0; fd >= 0 && i < 4 * kMemory / block.size(); ++i) {
            if (::write(fd, block.data(), block.size()) < 0) {
                _exit(4);
            }
        }
    });
    ASSERT_GT(command, 0);
    ASSERT_THAT(leaf->add_process(command, false), IsOk());
    ASSERT_THAT(write_all(go->second.get(), "x"), IsOk());
    int status = 0;
    ASSERT_EQ(::waitpid(command, &status, 0), command);
    EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                (WIFEXITED(status) && WEXITSTATUS(status) == 4))
        << "the command is killed (or refused the memory); status " << status;
    EXPECT_EQ(::waitpid(init, &status, WNOHANG), 0) << "the init survived";
    EXPECT_FALSE(leaf->oom_killed()) << "no OOM kill in the init's own cgroup";
    leaf->kill();
    ASSERT_EQ(::waitpid(init, &status, 0), init);
    EXPECT_THAT(leaf->remove(), IsOk());
}

TEST_F(CgroupLeafTest, RemovesStaleEmptyLeavesOfDeadSupervisorsWithTheirChildren) {
    pid_t dead = ::fork();
    if (dead == 0) {
        _exit(0);
    }
    ASSERT_GT(dead, 0);
    ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
    // Where a leaf would go: the parent of a fresh leaf's directory.
    std::vector<std::string> stale;
    {
        auto probe = CgroupLeaf::create(Limits{}, support_);
        ASSERT_THAT(probe, IsOk());
        for (const std::string& dir : probe->dirs()) {
            std::string base = dir.substr(0, dir.rfind('/'));
            stale.push_back(base + "/" + leaf_name(dead, 1));
            ASSERT_EQ(::mkdir(stale.back().c_str(), 0755), 0) << stale.back();
            // A session worker's leaf left behind with its commands' cgroup inside.
            stale.push_back(base + "/" + leaf_name(dead, 2));
            ASSERT_EQ(::mkdir(stale.back().c_str(), 0755), 0) << stale.back();
            ASSERT_EQ(::mkdir((stale.back() + "/commands").c_str(), 0755), 0) << stale.back();
        }
    }
    auto leaf = CgroupLeaf::create(Limits{}, support_);
    ASSERT_THAT(leaf, IsOk());
    for (const std::string& dir : stale) {
        EXPECT_FALSE(path_exists(dir)) << dir;
    }
}

TEST_F(CgroupLeafTest, ATenantsLeavesShareAGroupWithItsCpuWeight) {
    if (support_.cpu == CgroupVersion::kNone) {
        GTEST_SKIP() << "no cpu controller: " << support_.reason;
    }
    Limits limits = make_limits(std::nullopt, 16, std::nullopt);
    limits.group = fmt::format("tenant-test-{}", ::getpid());
    limits.group_cpu_weight = 300;
    const bool v2 = support_.cpu == CgroupVersion::kV2;
    const std::string group =
        fmt::format("{}/{}", v2 ? support_.v2_base : support_.cpu_v1_base, limits.group);
    {
        auto first = CgroupLeaf::create(limits, support_);
        ASSERT_THAT(first, IsOk());
        auto second = CgroupLeaf::create(limits, support_);
        ASSERT_THAT(second, IsOk());
        EXPECT_EQ(first->cpu_weight(), 300U);
        EXPECT_FALSE(first->applies_cpu()) << "a weight is no limit";
        for (const CgroupLeaf* leaf : {&*first, &*second}) {
            for (const std::string& dir : leaf->dirs()) {
                EXPECT_NE(dir.find("/" + limits.group + "/"), std::string::npos)
                    << dir << " is not in the tenant's group";
            }
        }
        auto weight = read_file(group + (v2 ? "/cpu.weight" : "/cpu.shares"));
        ASSERT_TRUE(weight) << group;
        EXPECT_EQ(*weight, v2 ? "300\n" : "3072\n");
    }
    // The leaves went with their owners; the group stays for the tenant's next sandbox.
    EXPECT_TRUE(path_exists(group));
    for (const std::string* base : {&support_.v2_base, &support_.memory_v1_base,
                                    &support_.pids_v1_base, &support_.cpu_v1_base}) {
        if (!base->empty()) {
            (void)::rmdir(fmt::format("{}/{}", *base, limits.group).c_str());
        }
    }
}

TEST(CgroupLeafNoSupportTest, LimitsWithoutControllersAreLeftToTheCaller) {
    FdLeakChecker fd_check;
    auto leaf = CgroupLeaf::create(make_limits(kMemory, 32, 1.0), CgroupSupport{});
    ASSERT_THAT(leaf, IsOk());
    EXPECT_TRUE(leaf->dirs().empty());
    EXPECT_EQ(leaf->v2_dir_fd(), -1);
    EXPECT_FALSE(leaf->applies_memory());
    EXPECT_FALSE(leaf->applies_pids());
    EXPECT_FALSE(leaf->applies_cpu());
    EXPECT_FALSE(leaf->oom_killed());
    EXPECT_THAT(leaf->add_process(::getpid(), false), IsOk());
    EXPECT_THAT(leaf->remove(), IsOk());
}

TEST(CgroupLeafNoSupportTest, RejectsANonPositiveCpuLimit) {
    auto leaf = CgroupLeaf::create(make_limits(std::nullopt, std::nullopt, 0.0), CgroupSupport{});
    EXPECT_THAT(leaf, ::stockade::testing::HasErrc(Errc::kInvalidArgument));
}

TEST(CgroupProbeTest, ExplainsEveryUnavailableController) {
    FdLeakChecker fd_check;
    CgroupSupport support = probe_cgroups();
    for (auto [name, version] : {std::pair{"memory", support.memory},
                                 std::pair{"pids", support.pids}, std::pair{"cpu", support.cpu}}) {
        if (version == CgroupVersion::kNone) {
            EXPECT_THAT(support.reason, ::testing::HasSubstr(name));
        }
    }
    if (support.memory == CgroupVersion::kV1) {
        EXPECT_FALSE(support.memory_v1_base.empty());
    }
    if (support.memory == CgroupVersion::kV2 || support.pids == CgroupVersion::kV2) {
        EXPECT_FALSE(support.v2_base.empty());
    }
}

}  // namespace
}  // namespace stockade::sandbox
