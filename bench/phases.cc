// stockade-bench-phases: where `stockade run`'s start-up time goes, step by step, measured
// in-process on the supervisor's side (the steps of sandbox::launch and what runner does before
// it), so that a change to one step shows up as a number next to the others.
//
//   stockade-bench-phases [-n RUNS] [--workspace DIR]
//
// Each step runs RUNS times (default 50); the median and p95 wall time in microseconds are
// printed, with the step's share of an in-process launch. Steps that need root or a cgroup
// hierarchy are skipped with the reason. Not a test: nothing is asserted.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"
#include "runner/cli/run_command.h"
#include "sandbox/cgroup.h"
#include "sandbox/features.h"
#include "sandbox/idmap.h"
#include "sandbox/landlock.h"
#include "sandbox/launcher.h"
#include "sandbox/seccomp.h"

namespace {

namespace sb = stockade::sandbox;
namespace runner = stockade::runner;

int64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Stat {
    double median_us = 0;
    double p95_us = 0;
};

Stat summarize(std::vector<int64_t> ns) {
    std::sort(ns.begin(), ns.end());
    Stat s;
    size_t n = ns.size();
    s.median_us =
        (n % 2 == 1 ? static_cast<double>(ns[n / 2])
                    : (static_cast<double>(ns[n / 2 - 1]) + static_cast<double>(ns[n / 2])) / 2) /
        1000.0;
    size_t k = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(n)));
    s.p95_us = static_cast<double>(ns[std::max<size_t>(k, 1) - 1]) / 1000.0;
    return s;
}

void row(const std::string& name, const Stat& s, const std::string& note = {}) {
    fmt::print("  {:<60} {:>9.1f} {:>9.1f}  {}\n", name, s.median_us, s.p95_us, note);
}

void skipped(const std::string& name, const std::string& why) {
    fmt::print("  {:<60} {:>9} {:>9}  skipped: {}\n", name, "-", "-", why);
}

// Times `body` `runs` times; `body` returns false to abort (the step is then skipped).
bool measure(const std::string& name, int runs, const std::function<bool(std::string*)>& body,
             const std::string& note = {}) {
    std::vector<int64_t> samples;
    std::string why;
    for (int i = 0; i < runs; ++i) {
        int64_t t0 = now_ns();
        if (!body(&why)) {
            skipped(name, why);
            return false;
        }
        samples.push_back(now_ns() - t0);
    }
    row(name, summarize(std::move(samples)), note);
    return true;
}

// A child that only waits to be killed (a stand-in for the sandbox's init in a cgroup move).
pid_t spawn_sleeper() {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::pause();
        ::_exit(0);
    }
    return pid;
}

void kill_and_reap(pid_t pid) {
    (void)::kill(pid, SIGKILL);
    int status = 0;
    (void)::waitpid(pid, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 50;
    std::string workspace;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if ((arg == "-n" || arg == "--runs") && i + 1 < argc) {
            runs = std::max(5, std::atoi(argv[++i]));
        } else if (arg == "--workspace" && i + 1 < argc) {
            workspace = argv[++i];
        } else {
            fmt::print(stderr, "usage: stockade-bench-phases [-n RUNS] [--workspace DIR]\n");
            return 2;
        }
    }
    stockade::log::init();
    const bool root = ::geteuid() == 0;
    if (workspace.empty()) {
        char tmpl[] = "/tmp/stockade-phases.XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) {
            fmt::print(stderr, "stockade-bench-phases: mkdtemp failed\n");
            return 1;
        }
        workspace = tmpl;
    }

    fmt::print("stockade-bench-phases: {} runs per step, uid {}, workspace {}\n", runs, ::geteuid(),
               workspace);
    fmt::print("  {:<60} {:>9} {:>9}\n", "step (supervisor side, in-process)", "median", "p95 us");

    // Runner, before launch.
    runner::RunOptions options;
    options.workspace = workspace;
    options.command = {"/bin/true"};
    measure("parse_run_flags + make_sandbox_spec (flags -> SandboxSpec, host image)", runs,
            [&](std::string* why) {
                runner::CallerContext caller = runner::current_caller();
                caller.tty_fds = {false, false, false};
                auto parsed = runner::parse_run_flags(options, caller);
                if (!parsed) {
                    *why = parsed.error().message;
                    return false;
                }
                auto spec =
                    runner::make_sandbox_spec(parsed->config, caller, sb::Isolation::kNamespaces);
                if (!spec) {
                    *why = spec.error().message;
                }
                return spec.has_value();
            });
    measure("probe_host_features (every isolation probe: namespaces child, idmap, cgroups)", runs,
            [](std::string*) {
                (void)sb::probe_host_features();
                return true;
            });
    measure("probe_landlock", runs, [](std::string*) {
        (void)sb::probe_landlock();
        return true;
    });
    sb::CgroupSupport cgroups;
    measure("probe_cgroups (run_command calls it twice)", runs, [&](std::string*) {
        cgroups = sb::probe_cgroups();
        return true;
    });
    measure("build_seccomp_program (libseccomp compile + export)", runs, [](std::string* why) {
        auto program = sb::build_seccomp_program(sb::SeccompOptions{});
        if (!program) {
            *why = program.error().message;
        }
        return program.has_value();
    });

    // launch(), step by step.
    if (root) {
        measure("make_userns_fd (idmap helper: clone NEWUSER, maps, wait)", runs,
                [](std::string* why) {
                    auto ns = sb::make_userns_fd(0, 1879048192, 0, 1879048192);
                    if (!ns) {
                        *why = ns.error().message;
                    }
                    return ns.has_value();
                });
        auto ns = sb::make_userns_fd(0, 1879048192, 0, 1879048192);
        if (ns) {
            measure("make_idmapped_tree (open_tree + MOUNT_ATTR_IDMAP)", runs,
                    [&](std::string* why) {
                        auto tree = sb::make_idmapped_tree(workspace, -1, ns->get());
                        if (!tree) {
                            *why = tree.error().message;
                        }
                        return tree.has_value();
                    });
        }
    } else {
        skipped("make_userns_fd / make_idmapped_tree",
                "idmapped workspace is for root callers only");
    }
    if (cgroups.usable()) {
        sb::Limits limits;
        measure("CgroupLeaf::create + remove (mkdir/rmdir, stale scan)", runs,
                [&](std::string* why) {
                    auto leaf = sb::CgroupLeaf::create(limits, cgroups);
                    if (!leaf) {
                        *why = leaf.error().message;
                        return false;
                    }
                    (void)leaf->remove();
                    return true;
                });
        // The move of a process into the leaf: on cgroup v1 (and v2 without CLONE_INTO_CGROUP)
        // this takes cgroup_threadgroup_rwsem for writing, which waits for an RCU grace period
        // unless one is already in progress; "cold" = 50 ms after the previous move.
        for (bool cold : {true, false}) {
            std::string name = cold ? "CgroupLeaf::add_process, cold (50 ms apart)"
                                    : "CgroupLeaf::add_process, back to back";
            std::vector<int64_t> samples;
            std::string why;
            for (int i = 0; i < runs && why.empty(); ++i) {
                auto leaf = sb::CgroupLeaf::create(limits, cgroups);
                if (!leaf) {
                    why = leaf.error().message;
                    break;
                }
                pid_t pid = spawn_sleeper();
                if (cold) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                }
                int64_t t0 = now_ns();
                auto added = leaf->add_process(pid, false);
                samples.push_back(now_ns() - t0);
                kill_and_reap(pid);
                (void)leaf->remove();
                if (!added) {
                    why = added.error().message;
                }
            }
            if (!why.empty()) {
                skipped(name, why);
            } else {
                row(name, summarize(samples));
            }
        }
    } else {
        skipped("CgroupLeaf::create / add_process",
                cgroups.reason.empty() ? "no usable cgroups" : cgroups.reason);
    }

    // Whole launches of /bin/true from this process (no exec of the stockade binary, no CLI).
    for (auto level : {sb::Isolation::kNamespaces, sb::Isolation::kFull}) {
        if (level == sb::Isolation::kFull && !cgroups.usable()) {
            skipped("launch + wait, isolation full", "no usable cgroups");
            continue;
        }
        runner::CallerContext caller = runner::current_caller();
        caller.tty_fds = {false, false, false};
        auto parsed = runner::parse_run_flags(options, caller);
        if (!parsed) {
            skipped("launch", parsed.error().message);
            continue;
        }
        auto spec = runner::make_sandbox_spec(parsed->config, caller, level);
        if (!spec) {
            skipped("launch", spec.error().message);
            continue;
        }
        measure(fmt::format("launch + wait of /bin/true, isolation {}", sb::isolation_name(level)),
                runs, [&](std::string* why) {
                    auto box = sb::launch(*spec, cgroups);
                    if (!box) {
                        *why = box.error().message;
                        return false;
                    }
                    auto status = box->wait();
                    if (!status || status->code != 0) {
                        *why =
                            status ? fmt::format("exit {}", status->code) : status.error().message;
                        return false;
                    }
                    return true;
                });
    }
    return 0;
}
