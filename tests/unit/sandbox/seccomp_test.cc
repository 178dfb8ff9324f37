#include "sandbox/seccomp.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/child_check.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::ChildOutcome;
using ::stockade::testing::ChildReport;
using ::stockade::testing::err_name;
using ::stockade::testing::FdLeakChecker;
using ::stockade::testing::IsOk;
using ::stockade::testing::run_in_child;

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t errno_action(int err) {
    return SECCOMP_RET_ERRNO | static_cast<uint32_t>(err);
}

// ---- In-process: run the program on synthetic syscalls -----------------------------------

// A classic-BPF interpreter for the instructions libseccomp and the prologue emit. It fails the
// test on anything else, and on a jump or a load out of range.
uint32_t run_filter(const SeccompProgram& program, const seccomp_data& data) {
    const sock_fprog prog = program.fprog();
    uint32_t a = 0;
    for (size_t pc = 0; pc < prog.len; ++pc) {
        const sock_filter& insn = prog.filter[pc];
        switch (insn.code) {
            case BPF_LD | BPF_W | BPF_ABS:
                if (insn.k > sizeof(data) - sizeof(uint32_t) || insn.k % 4 != 0) {
                    ADD_FAILURE() << "load out of range at " << pc;
                    return UINT32_MAX;
                }
                std::memcpy(&a, reinterpret_cast<const char*>(&data) + insn.k, sizeof(a));
                break;
            case BPF_ALU | BPF_AND | BPF_K:
                a &= insn.k;
                break;
            case BPF_JMP | BPF_JA:
                pc += insn.k;
                break;
            case BPF_JMP | BPF_JEQ | BPF_K:
                pc += a == insn.k ? insn.jt : insn.jf;
                break;
            case BPF_JMP | BPF_JGT | BPF_K:
                pc += a > insn.k ? insn.jt : insn.jf;
                break;
            case BPF_JMP | BPF_JGE | BPF_K:
                pc += a >= insn.k ? insn.jt : insn.jf;
                break;
            case BPF_JMP | BPF_JSET | BPF_K:
                pc += (a & insn.k) != 0 ? insn.jt : insn.jf;
                break;
            case BPF_RET | BPF_K:
                return insn.k;
            default:
                ADD_FAILURE() << "unexpected BPF opcode 0x" << std::hex << insn.code << " at "
                              << std::dec << pc;
                return UINT32_MAX;
        }
    }
    ADD_FAILURE() << "program fell off its end";
    return UINT32_MAX;
}

seccomp_data syscall_data(long nr, std::array<uint64_t, 6> args = {},
                          uint32_t arch = seccomp_arch_native()) {
    seccomp_data data{};
    data.nr = static_cast<int>(nr);
    data.arch = arch;
    for (size_t i = 0; i < args.size(); ++i) {
        data.args[i] = args[i];
    }
    return data;
}

class SeccompProgramTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto restricted = build_seccomp_program({.restrict_socket_families = true});
        ASSERT_THAT(restricted, IsOk());
        restricted_ = std::move(*restricted);
        auto open = build_seccomp_program({.restrict_socket_families = false});
        ASSERT_THAT(open, IsOk());
        unrestricted_ = std::move(*open);
    }

    uint32_t run(long nr, std::array<uint64_t, 6> args = {}) const {
        return run_filter(restricted_, syscall_data(nr, args));
    }

    FdLeakChecker fd_leak_checker_;
    SeccompProgram restricted_;
    SeccompProgram unrestricted_;
};

TEST_F(SeccompProgramTest, FitsTheKernelLimitAndIsDeterministic) {
    EXPECT_GT(restricted_.size(), 0U);
    EXPECT_LT(restricted_.size(), 512U);
    auto again = build_seccomp_program({.restrict_socket_families = true});
    ASSERT_THAT(again, IsOk());
    ASSERT_EQ(again->size(), restricted_.size());
    EXPECT_EQ(std::memcmp(again->fprog().filter, restricted_.fprog().filter,
                          restricted_.size() * sizeof(sock_filter)),
              0);
}

TEST_F(SeccompProgramTest, EveryDeniedSyscallFailsWithEperm) {
    int resolved = 0;
    for (const char* name : seccomp_denied_syscalls()) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr < 0) {
            continue;
        }
        ++resolved;
        EXPECT_EQ(run(nr), errno_action(EPERM)) << name;
    }
    EXPECT_GE(resolved, 50);
}

TEST_F(SeccompProgramTest, OrdinarySyscallsAreAllowed) {
    for (long nr : {SYS_read, SYS_write, SYS_openat, SYS_close, SYS_mmap, SYS_execve, SYS_getpid,
                    SYS_wait4, SYS_socketpair, SYS_prctl, SYS_seccomp}) {
        EXPECT_EQ(run(nr), kAllow) << nr;
    }
}

TEST_F(SeccompProgramTest, Clone3FailsWithEnosysSoThatLibcFallsBack) {
    EXPECT_EQ(run(SYS_clone3), errno_action(ENOSYS));
}

TEST_F(SeccompProgramTest, CloneWithANamespaceFlagFailsWithEperm) {
    for (uint64_t flag : std::initializer_list<uint64_t>{CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID,
                                                         CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
                                                         CLONE_NEWCGROUP, CLONE_NEWTIME}) {
        EXPECT_EQ(run(SYS_clone, {flag | SIGCHLD}), errno_action(EPERM)) << std::hex << flag;
        EXPECT_EQ(run(SYS_clone, {flag | CLONE_VM | CLONE_VFORK | SIGCHLD | (1ULL << 40)}),
                  errno_action(EPERM))
            << std::hex << flag;
    }
    // What fork(), pthread_create() and posix_spawn() pass.
    EXPECT_EQ(run(SYS_clone, {CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD}), kAllow);
    EXPECT_EQ(
        run(SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                        CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID}),
        kAllow);
    EXPECT_EQ(run(SYS_clone, {CLONE_VM | CLONE_VFORK | SIGCHLD}), kAllow);
}

TEST_F(SeccompProgramTest, TerminalInjectionIoctlsFailWhateverTheHighBits) {
    for (uint64_t high : std::initializer_list<uint64_t>{0, 1ULL << 32, 0xffffffff00000000}) {
        EXPECT_EQ(run(SYS_ioctl, {0, high | TIOCSTI}), errno_action(EPERM)) << std::hex << high;
        EXPECT_EQ(run(SYS_ioctl, {0, high | TIOCLINUX}), errno_action(EPERM)) << std::hex << high;
    }
    EXPECT_EQ(run(SYS_ioctl, {0, TIOCGWINSZ}), kAllow);
    EXPECT_EQ(run(SYS_ioctl, {0, FIONREAD}), kAllow);
}

TEST_F(SeccompProgramTest, LeasesAreDeniedTheRestOfFcntlIsNot) {
    for (uint64_t high : std::initializer_list<uint64_t>{0, 1ULL << 32}) {
        EXPECT_EQ(run(SYS_fcntl, {3, high | F_SETLEASE, F_WRLCK}), errno_action(EPERM))
            << std::hex << high;
    }
    EXPECT_EQ(run(SYS_fcntl, {3, F_GETLEASE}), kAllow);
    EXPECT_EQ(run(SYS_fcntl, {3, F_SETFD, FD_CLOEXEC}), kAllow);
    EXPECT_EQ(run(SYS_fcntl, {3, F_SETLK}), kAllow);
}

TEST_F(SeccompProgramTest, PersonalityAllowsOnlyTheDefaultsAndTheQuery) {
    for (uint64_t persona : std::initializer_list<uint64_t>{
             0x0, 0x8, 0x20000, 0x20008, 0xffffffff,
             // The kernel reads 32 bits: these are 0 and the query to it.
             1ULL << 32, ~0ULL}) {
        EXPECT_EQ(run(SYS_personality, {persona}), kAllow) << std::hex << persona;
    }
    for (uint64_t persona : std::initializer_list<uint64_t>{
             ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO, PER_BSD,
             0x8 | ADDR_NO_RANDOMIZE, 1, 0xfffffffe}) {
        EXPECT_EQ(run(SYS_personality, {persona}), errno_action(EPERM)) << std::hex << persona;
    }
}

TEST_F(SeccompProgramTest, SocketFamiliesAreRestrictedOnlyWhenAsked) {
    for (uint64_t family = 0; family < AF_MAX + 2; ++family) {
        const bool allowed = family == AF_UNIX || family == AF_INET || family == AF_INET6;
        EXPECT_EQ(run(SYS_socket, {family, SOCK_STREAM}),
                  allowed ? kAllow : errno_action(EAFNOSUPPORT))
            << family;
        EXPECT_EQ(run_filter(unrestricted_, syscall_data(SYS_socket, {family, SOCK_STREAM})),
                  kAllow)
            << family;
    }
    EXPECT_EQ(run(SYS_socket, {(1ULL << 32) | AF_INET}), kAllow);
    EXPECT_EQ(run(SYS_socket, {(1ULL << 32) | AF_NETLINK}), errno_action(EAFNOSUPPORT));
    // The rest of the baseline is the same either way.
    EXPECT_EQ(run_filter(unrestricted_, syscall_data(SYS_ptrace)), errno_action(EPERM));
    EXPECT_EQ(run_filter(unrestricted_, syscall_data(SYS_personality, {ADDR_NO_RANDOMIZE})),
              errno_action(EPERM));
}

TEST_F(SeccompProgramTest, WithoutANetworkNamespaceNoSocketCanBeCreated) {
    auto none = build_seccomp_program({.restrict_socket_families = true, .deny_all_sockets = true});
    ASSERT_THAT(none, IsOk());
    for (int family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET}) {
        EXPECT_EQ(run_filter(*none, syscall_data(SYS_socket,
                                                 {static_cast<uint64_t>(family), SOCK_STREAM})),
                  errno_action(EAFNOSUPPORT))
            << family;
    }
    EXPECT_EQ(run_filter(*none, syscall_data(SYS_socketpair, {AF_UNIX, SOCK_STREAM})), kAllow);
}

TEST_F(SeccompProgramTest, SetuidAndSetgidModeBitsAreRefusedEverywhereAModeIsTaken) {
    struct Call {
        long nr;
        unsigned mode_arg;
    };
    const Call calls[] = {{SYS_chmod, 1},   {SYS_fchmod, 1}, {SYS_fchmodat, 2}, {452, 2},
                          {SYS_open, 2},    {SYS_openat, 3}, {SYS_creat, 1},    {SYS_mkdir, 1},
                          {SYS_mkdirat, 2}, {SYS_mknod, 1},  {SYS_mknodat, 2}};
    for (const Call& call : calls) {
        for (uint64_t mode : {04755ULL, 02755ULL, 06777ULL, 0100000ULL | 04644ULL}) {
            std::array<uint64_t, 6> args{};
            args[call.mode_arg] = mode;
            EXPECT_EQ(run(call.nr, args), errno_action(EPERM)) << call.nr << " mode " << mode;
        }
        for (uint64_t mode : {0755ULL, 0644ULL, 01777ULL, 0ULL}) {
            std::array<uint64_t, 6> args{};
            args[call.mode_arg] = mode;
            EXPECT_EQ(run(call.nr, args), kAllow) << call.nr << " mode " << mode;
        }
    }
    EXPECT_EQ(run(SYS_openat2), errno_action(ENOSYS)) << "its mode sits in memory";
}

TEST_F(SeccompProgramTest, OtherArchitecturesAndX32AreKilled) {
    EXPECT_EQ(run_filter(restricted_, syscall_data(20, {}, AUDIT_ARCH_I386)), kKill);
    EXPECT_EQ(run_filter(restricted_, syscall_data(SYS_getpid, {}, AUDIT_ARCH_AARCH64)), kKill);
#ifdef __x86_64__
    EXPECT_EQ(run(0x40000000 | SYS_getpid), kKill);
    EXPECT_EQ(run(0x40000000 | SYS_ptrace), kKill);
    EXPECT_EQ(run(0x7fffffff), kKill);
    // -1 is how a tracer skips a syscall; libseccomp lets it through, and so does the prologue.
    EXPECT_EQ(run(-1), kAllow);
#endif
}

TEST(SeccompDeniedSyscallsTest, ListsTheBaselineWithoutArgumentFilteredOnes) {
    std::vector<std::string> names;
    for (const char* name : seccomp_denied_syscalls()) {
        names.emplace_back(name);
    }
    EXPECT_THAT(names, ::testing::IsSupersetOf({"ptrace", "mount", "unshare", "setns", "bpf",
                                                "io_uring_setup", "keyctl", "kexec_load"}));
    EXPECT_THAT(names, ::testing::Not(::testing::Contains("clone")));
    EXPECT_THAT(names, ::testing::Not(::testing::Contains("clone3")));
    EXPECT_THAT(names, ::testing::Not(::testing::Contains("personality")));
}

// ---- In a child: the kernel's verdict ----------------------------------------------------

std::string describe(int status) {
    if (WIFEXITED(status)) {
        return "exited " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return std::string("killed by ") + sigabbrev_np(WTERMSIG(status));
    }
    return "status " + std::to_string(status);
}

#define EXPECT_CHILD_OK(outcome)                                                   \
    EXPECT_TRUE(WIFEXITED((outcome).status) && WEXITSTATUS((outcome).status) == 0) \
        << describe((outcome).status) << "\n"                                      \
        << (outcome).report

// Sets no_new_privs and installs `program`; false (reported) on failure.
bool confine(ChildReport& report, const SeccompProgram& program) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        report.fail("PR_SET_NO_NEW_PRIVS: {}", err_name(errno));
        return false;
    }
    if (int err = install_seccomp_program(program.fprog()); err != 0) {
        report.fail("install_seccomp_program: {}", err_name(err));
        return false;
    }
    return true;
}

// A pty made the calling process's controlling terminal, so that TIOCSTI would succeed on it
// (or fail with EIO when dev.tty.legacy_tiocsti=0) were it not for the filter. Returns the
// slave descriptor or -1.
int open_controlling_pty(ChildReport& report) {
    int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    std::array<char, 64> name{};
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
        ::ptsname_r(master, name.data(), name.size()) != 0) {
        report.fail("open pty: {}", err_name(errno));
        return -1;
    }
    (void)::setsid();
    int slave = ::open(name.data(), O_RDWR | O_CLOEXEC);  // no O_NOCTTY: becomes controlling
    if (slave < 0) {
        report.fail("open \"{}\": {}", name.data(), err_name(errno));
    }
    return slave;
}

// The probes whose outcome differs with and without the filter.
void probe_terminal(ChildReport& report, int tty, bool filtered) {
    char c = 'x';
    int sub = 0;
    if (filtered) {
        report.expect_errno(
            "ioctl TIOCSTI", [&] { return ::ioctl(tty, TIOCSTI, &c); }, EPERM);
        report.expect_errno(
            "ioctl TIOCSTI|1<<32", [&] { return ::ioctl(tty, TIOCSTI | (1UL << 32), &c); }, EPERM);
        report.expect_errno(
            "ioctl TIOCLINUX|1<<32", [&] { return ::ioctl(tty, TIOCLINUX | (1UL << 32), &sub); },
            EPERM);
    } else {
        errno = 0;
        if (::ioctl(tty, TIOCSTI | (1UL << 32), &c) != 0 && errno != EIO) {
            report.fail("unfiltered ioctl TIOCSTI|1<<32: {}", err_name(errno));
        }
        report.expect_errno(
            "unfiltered ioctl TIOCLINUX", [&] { return ::ioctl(tty, TIOCLINUX, &sub); }, ENOTTY);
    }
    winsize ws{};
    report.expect_ok("ioctl TIOCGWINSZ", [&] { return ::ioctl(tty, TIOCGWINSZ, &ws); });
}

void expect_fork_and_threads_work(ChildReport& report) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::_exit(7);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 7) {
        report.fail("fork: pid={} status={} errno={}", pid, status, err_name(errno));
    }
    // glibc tries clone3 first and falls back to clone(2) on ENOSYS.
    pthread_t thread{};
    int err = ::pthread_create(
        &thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
    if (err != 0) {
        report.fail("pthread_create: {}", err_name(err));
    } else {
        (void)::pthread_join(thread, nullptr);
    }
}

TEST(SeccompKernelTest, BaselineDeniesWhatItShouldAndAllowsTheRest) {
    FdLeakChecker fd_leak_checker;
    auto program = build_seccomp_program({.restrict_socket_families = true});
    ASSERT_THAT(program, IsOk());
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        int tty = open_controlling_pty(report);
        if (!confine(report, *program)) {
            return;
        }
        report.expect_errno(
            "ptrace TRACEME", [] { return ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); }, EPERM);
        report.expect_errno(
            "unshare NEWUSER", [] { return ::unshare(CLONE_NEWUSER); }, EPERM);
        report.expect_errno(
            "setns", [] { return ::setns(-1, 0); }, EPERM);
        report.expect_errno(
            "mount", [] { return ::syscall(SYS_mount, "none", "/", "tmpfs", 0L, nullptr); }, EPERM);
        std::array<uint64_t, 11> clone_args{};  // struct clone_args
        clone_args[0] = CLONE_NEWUSER;
        clone_args[4] = SIGCHLD;  // exit_signal
        report.expect_errno(
            "clone3",
            [&] {
                long rc = ::syscall(SYS_clone3, clone_args.data(), sizeof(clone_args));
                if (rc == 0) {
                    ::_exit(0);
                }
                return rc;
            },
            ENOSYS);
        report.expect_errno(
            "clone NEWUSER",
            [] {
                long rc = ::syscall(SYS_clone, long{CLONE_NEWUSER | SIGCHLD}, 0L, 0L, 0L, 0L);
                if (rc == 0) {
                    ::_exit(0);
                }
                return rc;
            },
            EPERM);
        report.expect_errno(
            "keyctl", [] { return ::syscall(SYS_keyctl, 0L /* GET_KEYRING_ID */, -3L, 0L); },
            EPERM);
        report.expect_errno(
            "bpf", [] { return ::syscall(SYS_bpf, 0L, nullptr, 0L); }, EPERM);
        std::array<char, 120> uring_params{};
        report.expect_errno(
            "io_uring_setup",
            [&] { return ::syscall(SYS_io_uring_setup, 1L, uring_params.data()); }, EPERM);
        report.expect_errno(
            "userfaultfd", [] { return ::syscall(SYS_userfaultfd, long{O_CLOEXEC}); }, EPERM);
        report.expect_errno(
            "perf_event_open",
            [] { return ::syscall(SYS_perf_event_open, nullptr, 0L, -1L, -1L, 0L); }, EPERM);
        // glibc's personality() returns -errno instead of setting errno: use the raw syscall.
        report.expect_errno(
            "personality ADDR_NO_RANDOMIZE",
            [] { return ::syscall(SYS_personality, long{ADDR_NO_RANDOMIZE}); }, EPERM);
        report.expect_ok("personality query",
                         [] { return ::syscall(SYS_personality, 0xffffffffUL); });
        report.expect_ok("personality PER_LINUX", [] { return ::syscall(SYS_personality, 0L); });
        if (tty >= 0) {
            probe_terminal(report, tty, true);
        }
        report.expect_errno(
            "socket AF_NETLINK", [] { return ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0); },
            EAFNOSUPPORT);
        report.expect_errno(
            "socket AF_PACKET", [] { return ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); },
            EAFNOSUPPORT);
        for (int family : {AF_UNIX, AF_INET}) {
            long fd = report.expect_ok(
                "socket", [&] { return ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0); });
            if (fd >= 0) {
                (void)::close(static_cast<int>(fd));
            }
        }
        if (::getpid() != ::syscall(SYS_getpid)) {
            report.fail("getpid disagrees with the raw syscall");
        }
        long fd = report.expect_ok("open /dev/null",
                                   [] { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); });
        if (fd >= 0) {
            (void)::close(static_cast<int>(fd));
        }
        expect_fork_and_threads_work(report);
    });
    EXPECT_CHILD_OK(outcome);
}

TEST(SeccompKernelTest, ProbesBehaveDifferentlyWithoutTheFilter) {
    FdLeakChecker fd_leak_checker;
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        int tty = open_controlling_pty(report);
        if (tty >= 0) {
            probe_terminal(report, tty, false);
        }
        report.expect_ok("personality ADDR_NO_RANDOMIZE",
                         [] { return ::syscall(SYS_personality, long{ADDR_NO_RANDOMIZE}); });
        long fd = report.expect_ok("socket AF_NETLINK",
                                   [] { return ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0); });
        if (fd >= 0) {
            (void)::close(static_cast<int>(fd));
        }
    });
    EXPECT_CHILD_OK(outcome);
}

TEST(SeccompKernelTest, UnrestrictedSocketFamiliesWork) {
    FdLeakChecker fd_leak_checker;
    auto program = build_seccomp_program({.restrict_socket_families = false});
    ASSERT_THAT(program, IsOk());
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, *program)) {
            return;
        }
        long fd = report.expect_ok("socket AF_NETLINK",
                                   [] { return ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0); });
        if (fd >= 0) {
            (void)::close(static_cast<int>(fd));
        }
        report.expect_errno(
            "ptrace TRACEME", [] { return ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); }, EPERM);
    });
    EXPECT_CHILD_OK(outcome);
}

TEST(SeccompKernelTest, InstallWithoutNoNewPrivsNeedsCapSysAdmin) {
    auto program = build_seccomp_program({});
    ASSERT_THAT(program, IsOk());
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (::getuid() == 0 || ::geteuid() == 0) {
            // Leaving uid 0 clears the capabilities, CAP_SYS_ADMIN included.
            if (::setresuid(65534, 65534, 65534) != 0) {
                report.fail("setresuid: {}", err_name(errno));
                return;
            }
        }
        if (int err = install_seccomp_program(program->fprog()); err != EACCES) {
            report.fail("install without no_new_privs: {}, want EACCES", err_name(err));
        }
    });
    EXPECT_CHILD_OK(outcome);
}

#ifdef __x86_64__
TEST(SeccompKernelTest, X32SyscallKillsTheProcess) {
    auto program = build_seccomp_program({});
    ASSERT_THAT(program, IsOk());
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, *program)) {
            return;
        }
        long rc = ::syscall(0x40000000 | SYS_getpid);
        report.fail("x32 getpid returned {} ({})", rc, err_name(errno));
    });
    EXPECT_TRUE(WIFSIGNALED(outcome.status) && WTERMSIG(outcome.status) == SIGSYS)
        << describe(outcome.status) << "\n"
        << outcome.report;
}

long i386_getpid() {
    long ret = 20;  // __NR_getpid in the i386 table
    __asm__ volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
    return ret;
}

TEST(SeccompKernelTest, I386SyscallKillsTheProcess) {
    ChildOutcome control = run_in_child([](ChildReport& report) {
        if (i386_getpid() != ::getpid()) {
            report.fail("int 0x80 getpid did not return the pid");
        }
    });
    if (!WIFEXITED(control.status) || WEXITSTATUS(control.status) != 0) {
        GTEST_SKIP() << "no ia32 emulation (int 0x80 getpid: " << describe(control.status) << ")";
    }
    auto program = build_seccomp_program({});
    ASSERT_THAT(program, IsOk());
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, *program)) {
            return;
        }
        long rc = i386_getpid();
        report.fail("i386 getpid returned {}", rc);
    });
    EXPECT_TRUE(WIFSIGNALED(outcome.status) && WTERMSIG(outcome.status) == SIGSYS)
        << describe(outcome.status) << "\n"
        << outcome.report;
}
#endif

}  // namespace
}  // namespace stockade::sandbox
