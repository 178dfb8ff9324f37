// Escape attempts from inside `stockade run`, one per test, each made by the probe binary
// (tests/security/probe.cc) and bounded in time (--timeout, the harness's hard limit) and in
// resources. Under ctest every case runs as root and as an unprivileged user, and again on an
// imported image (STOCKADE_TEST_IMAGE=1, tests/testing/test_image.h: busybox, the host's libc
// and a few host programs, in a store of the test's own) rather than the host's /usr; cases at
// levels without a mount namespace, where an image cannot be used, run on the host image there too.
//
// Reading an outcome: the probe prints "BLOCKED ..." and exits 0, or "ESCAPED ..." and exits 1.
// A failing case here is a sandbox escape, not a flaky test: the message carries the probe's line.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "tests/testing/escape_support.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/test_image.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr uid_t kRootCallerHostUid = 1879048192;  // runner/cli/run_command.h kDefaultHostUid
constexpr int kExitUnavailable = 77;

MATCHER(Blocked, "the probe reports the attempt BLOCKED") {
    return arg.exit_code == 0 && !arg.timed_out && arg.out.rfind("BLOCKED ", 0) == 0;
}

// The probe reported an escape: used for positive controls that prove a probe can see one.
MATCHER(Escaped, "the probe reports an ESCAPE") {
    return arg.exit_code == 1 && !arg.timed_out && arg.out.rfind("ESCAPED ", 0) == 0;
}

class EscapeTest : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        ASSERT_FALSE(stockade_path().empty())
            << "STOCKADE_BIN is not set: run this suite through ctest";
        ASSERT_FALSE(probe_path().empty())
            << "STOCKADE_PROBE is not set: run this suite through ctest";
        workspace_ = root_.make_dir("workspace");
        sibling_ = root_.make_dir("sibling");
        secret_ = root_.write_file("sibling/secret.txt", "sibling secret\n", 0644);
        (void)take_started_stockade_pids();
    }

    // Whatever the probe did, its sandbox's cgroups are gone afterwards.
    void TearDown() override {
        for (pid_t pid : take_started_stockade_pids()) {
            auto deadline = std::chrono::steady_clock::now() + 2s;
            while (!sandbox_cgroup_dirs(pid).empty() &&
                   std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(20ms);
            }
            EXPECT_THAT(sandbox_cgroup_dirs(pid), ::testing::IsEmpty())
                << "cgroup(s) of stockade pid " << pid << " outlived it";
        }
    }

    // stockade run --workspace <ws> --ro <probe dir> --timeout 30 OPTIONS -- COMMAND, from the
    // workspace.
    RunResult sandboxed(const std::vector<std::string>& command,
                        const std::vector<std::string>& options = {}, RunConfig config = {}) {
        std::vector<std::string> args{"run",       "--workspace", workspace_, "--ro",
                                      probe_dir(), "--timeout",   "30"};
        args.insert(args.end(), options.begin(), options.end());
        const bool no_mount_namespace =
            std::find(options.begin(), options.end(), "landlock") != options.end() ||
            std::find(options.begin(), options.end(), "none") != options.end();
        if (!no_mount_namespace) {
            const std::vector<std::string> image = test_image_flags();
            args.insert(args.end(), image.begin(), image.end());
            const std::vector<std::string> env = test_image_env();
            config.env.insert(config.env.end(), env.begin(), env.end());
        }
        args.emplace_back("--");
        args.insert(args.end(), command.begin(), command.end());
        if (config.cwd.empty()) {
            config.cwd = workspace_;
        }
        return run_stockade(args, config);
    }

    // The probe with `probe_args`, in a sandbox.
    RunResult probe(const std::vector<std::string>& probe_args,
                    const std::vector<std::string>& options = {}, RunConfig config = {}) {
        std::vector<std::string> command{probe_path()};
        command.insert(command.end(), probe_args.begin(), probe_args.end());
        return sandboxed(command, options, std::move(config));
    }

    // A shell script in a sandbox; $PROBE is the probe's path.
    RunResult probe_script(const std::string& script,
                           const std::vector<std::string>& options = {}) {
        return sandboxed({"/bin/sh", "-c", "PROBE=" + probe_path() + "; " + script}, options);
    }

    // Landlock isolation, run so that the workspace is writable: without a mount namespace the
    // command runs as the workspace's owner, which for a root caller must not be root.
    RunResult probe_landlock(const std::vector<std::string>& probe_args) {
        if (running_as_root()) {
            EXPECT_EQ(::chown(workspace_.c_str(), kRootCallerHostUid, kRootCallerHostUid), 0);
        }
        return probe(probe_args, {"--isolation", "landlock"});
    }

    FdLeakChecker fd_leak_checker_;
    TempDir root_;
    std::string workspace_;
    std::string sibling_;
    std::string secret_;
};

#define SKIP_IF_UNAVAILABLE(result)                                                       \
    do {                                                                                  \
        if ((result).exit_code == kExitUnavailable) {                                     \
            GTEST_SKIP() << "isolation level unavailable on this host: " << (result).err; \
        }                                                                                 \
    } while (0)

// --- the probe itself -------------------------------------------------------------------------

TEST_F(EscapeTest, ProbeReportsEscapesWhenRunOutsideTheSandbox) {
    // Positive control: without a sandbox the same probes must say ESCAPED, or a BLOCKED inside
    // would prove nothing.
    RunConfig here;
    here.cwd = workspace_;
    EXPECT_THAT(run_process({probe_path(), "read-file", secret_}, here), Escaped());
    EXPECT_THAT(run_process({probe_path(), "symlink-escape", secret_}, here), Escaped());
    EXPECT_THAT(run_process({probe_path(), "write-file", root_.sub("new-file")}, here), Escaped());
    EXPECT_THAT(run_process({probe_path(), "fill-tmp", root_.path(), "2"}, here), Escaped());
    EXPECT_THAT(run_process({probe_path(), "read-environ", "self", "STOCKADE_PROBE"}, here),
                Escaped());
    EXPECT_THAT(run_process({probe_path(), "no-such-subcommand"}, here).exit_code, 2);
}

// --- host files -------------------------------------------------------------------------------

TEST_F(EscapeTest, CannotReadEtcShadow) {
    EXPECT_THAT(probe({"read-file", "/etc/shadow"}), Blocked());
    EXPECT_THAT(probe({"read-file", "/etc/gshadow"}), Blocked());
}

TEST_F(EscapeTest, CannotListRootsHome) {
    EXPECT_THAT(probe({"list-dir", "/root"}), Blocked());
    EXPECT_THAT(probe({"read-file", "/root/.bashrc"}), Blocked());
}

TEST_F(EscapeTest, CannotListHome) {
    EXPECT_THAT(probe({"list-dir", "/home"}), Blocked());
}

TEST_F(EscapeTest, CannotReadAFileInASiblingOfTheWorkspace) {
    EXPECT_THAT(probe({"read-file", secret_}), Blocked());
    EXPECT_THAT(probe({"list-dir", sibling_}), Blocked());
    EXPECT_THAT(probe({"read-file", workspace_ + "/../sibling/secret.txt"}), Blocked());
}

TEST_F(EscapeTest, LandlockIsolationCannotReadAFileInASiblingOfTheWorkspace) {
    // Landlock level: no mount namespace, so only Landlock stands between the command and the
    // host's files. The sibling lies in the host's temporary directory, as workspaces often do.
    RunResult r = probe_landlock({"read-file", secret_});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked()) << "FAIL (sandbox bug): with --isolation landlock, " << secret_
                              << " next to the workspace is readable";
}

TEST_F(EscapeTest, LandlockIsolationCannotReadHostFilesOutsideTheImage) {
    RunResult r = probe_landlock({"list-dir", "/root"});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked());
    EXPECT_THAT(probe_landlock({"list-dir", "/home"}), Blocked());
    EXPECT_THAT(probe_landlock({"read-file", "/etc/shadow"}), Blocked());
}

// Landlock level, other processes and the network: no pid or network namespace here, so
// Landlock's scopes and network rules (or seccomp) must keep the command in.
class LandlockHostAccessTest : public EscapeTest {
protected:
    // A host process with the landlock sandbox's host uid.
    ChildProcess start_victim() {
        std::vector<std::string> argv{"/bin/sleep", "30"};
        if (running_as_root()) {
            std::string id = std::to_string(kRootCallerHostUid);
            argv = {"/usr/bin/setpriv", "--reuid=" + id, "--regid=" + id,
                    "--clear-groups",   "/bin/sleep",    "30"};
        }
        return ChildProcess::start(argv);
    }
};

TEST_F(LandlockHostAccessTest, CannotSignalAHostProcessOfTheSameUser) {
    ChildProcess victim = start_victim();
    ASSERT_TRUE(victim.running());
    RunResult r = probe_landlock({"signal-pid", std::to_string(victim.pid())});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked());
}

TEST_F(LandlockHostAccessTest, CannotReadTheEnvironmentOfAHostProcessOfTheSameUser) {
    ChildProcess victim = start_victim();
    ASSERT_TRUE(victim.running());
    RunResult r = probe_landlock({"read-environ", std::to_string(victim.pid())});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked());
    EXPECT_THAT(probe_landlock({"ptrace-pid", std::to_string(victim.pid())}), Blocked());
}

TEST_F(LandlockHostAccessTest, CannotConnectToAHostAbstractUnixSocket) {
    std::string name = "stockade-test-" + unique_suffix();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::copy(name.begin(), name.end(), addr.sun_path + 1);
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    Listener listener(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr), len);
    ASSERT_TRUE(listener.ok());
    RunResult r = probe_landlock({"connect-abstract", name});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked());
    EXPECT_FALSE(listener.connected());
}

TEST_F(LandlockHostAccessTest, NetworkNoneCannotConnectToAHostLoopbackPort) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Listener listener(AF_INET, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    ASSERT_TRUE(listener.ok());
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    std::string port = std::to_string(ntohs(addr.sin_port));
    if (running_as_root()) {
        ASSERT_EQ(::chown(workspace_.c_str(), kRootCallerHostUid, kRootCallerHostUid), 0);
    }
    RunResult r =
        probe({"connect-tcp", "127.0.0.1", port}, {"--isolation", "landlock", "--network", "none"});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked()) << "FAIL (sandbox bug): --isolation landlock --network none reached "
                                 "a TCP port on the host's loopback";
    EXPECT_FALSE(listener.connected());
}

// --- writes outside the workspace -------------------------------------------------------------

TEST_F(EscapeTest, CannotWriteUnderUsr) {
    std::string target = "/usr/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
    EXPECT_THAT(probe({"write-file", "/usr/bin/env"}), Blocked());
}

TEST_F(EscapeTest, CannotWriteUnderEtc) {
    std::string target = "/etc/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
    EXPECT_THAT(probe({"write-file", "/etc/passwd"}), Blocked());
    EXPECT_THAT(probe({"write-file", "/etc/resolv.conf"}), Blocked());
}

TEST_F(EscapeTest, CannotWriteAtTheRoot) {
    std::string target = "/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
}

TEST_F(EscapeTest, CannotWriteARoPath) {
    std::string ro = root_.make_dir("ro", 0777);  // writable on the host: only the mount stops it
    std::string existing = root_.write_file("ro/existing.txt", "unchanged\n", 0666);
    std::string target = ro + "/new-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}, {"--ro", ro}), Blocked());
    EXPECT_THAT(probe({"write-file", existing}, {"--ro", ro}), Blocked());
    expect_absent_on_host(target);
    EXPECT_EQ(read_file_text(existing), "unchanged\n");
}

// --- links ------------------------------------------------------------------------------------

TEST_F(EscapeTest, SymlinkInTheWorkspaceCannotReachAHostFile) {
    ASSERT_EQ(::symlink(secret_.c_str(), (workspace_ + "/to-sibling").c_str()), 0);
    ASSERT_EQ(::symlink("/etc/shadow", (workspace_ + "/to-shadow").c_str()), 0);
    EXPECT_THAT(probe({"read-file", workspace_ + "/to-sibling"}), Blocked());
    EXPECT_THAT(probe({"read-file", workspace_ + "/to-shadow"}), Blocked());
}

TEST_F(EscapeTest, SymlinkMadeInsideCannotReachAHostFile) {
    EXPECT_THAT(probe({"symlink-escape", secret_}), Blocked());
    EXPECT_THAT(probe({"symlink-escape", "/etc/shadow"}), Blocked());
    EXPECT_THAT(probe({"symlink-escape", "/proc/1/root/etc/shadow"}), Blocked());
}

TEST_F(EscapeTest, HardlinkToAFileOutsideTheWorkspaceFails) {
    EXPECT_THAT(probe({"hardlink-escape", secret_}), Blocked());
    EXPECT_THAT(probe({"hardlink-escape", "/etc/passwd"}), Blocked());
    EXPECT_THAT(probe({"hardlink-escape", "/usr/bin/env"}), Blocked());
}

TEST_F(EscapeTest, LandlockIsolationCannotHardlinkAFileOutsideTheWorkspace) {
    if (running_as_root()) {
        // The sandbox user owns the file, so protected_hardlinks alone would not stop the link.
        ASSERT_EQ(::chown(secret_.c_str(), kRootCallerHostUid, kRootCallerHostUid), 0);
    }
    RunResult r = probe_landlock({"hardlink-escape", secret_});
    SKIP_IF_UNAVAILABLE(r);
    EXPECT_THAT(r, Blocked()) << "FAIL (sandbox bug): with --isolation landlock, " << secret_
                              << " next to the workspace can be hard-linked into it";
}

TEST_F(EscapeTest, SetuidRootExecutableCannotBePlantedInTheWorkspace) {
    // The workspace is the host's filesystem: a setuid file made inside stays setuid outside,
    // where nosuid does not apply. It must never be a setuid-root (or setgid-root) file.
    RunResult r = sandboxed({"/bin/sh", "-c",
                             "cp /bin/true suid-true && chmod 6755 suid-true; "
                             "mkdir sgid-dir && chmod 2777 sgid-dir; true"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (const char* name : {"suid-true", "sgid-dir"}) {
        expect_not_setid_root(workspace_ + "/" + name, "the sandbox");
    }
}

// --- /proc and other processes ----------------------------------------------------------------

TEST_F(EscapeTest, ProcRootOfPid1IsNotTraversable) {
    EXPECT_THAT(probe({"open-proc-root", "1"}), Blocked());
}

TEST_F(EscapeTest, ProcExeOfPid1CannotBeOpened) {
    EXPECT_THAT(probe({"open-proc-exe", "1"}), Blocked());
}

TEST_F(EscapeTest, Pid1CannotBePtraced) {
    EXPECT_THAT(probe({"ptrace-pid", "1"}), Blocked());
    EXPECT_THAT(probe({"ptrace-parent"}), Blocked());
}

TEST_F(EscapeTest, ASiblingProcessCannotBePtraced) {
    RunResult r =
        probe_script("sleep 30 & \"$PROBE\" ptrace-pid $!; status=$?; kill $!; exit $status");
    EXPECT_THAT(r, Blocked());
}

TEST_F(EscapeTest, ASiblingProcessMemoryCannotBeRead) {
    RunResult r =
        probe_script("sleep 30 & \"$PROBE\" process-vm-read $!; status=$?; kill $!; exit $status");
    EXPECT_THAT(r, Blocked());
}

TEST_F(EscapeTest, Pid1MemoryCannotBeRead) {
    EXPECT_THAT(probe({"read-proc-mem", "1"}), Blocked());
    EXPECT_THAT(probe({"process-vm-read", "1"}), Blocked());
}

TEST_F(EscapeTest, Pid1EnvironmentCannotBeRead) {
    EXPECT_THAT(probe({"read-environ", "1"}), Blocked());
}

// --- mounts and namespaces --------------------------------------------------------------------

TEST_F(EscapeTest, MountIsDenied) {
    EXPECT_THAT(probe({"mount-tmpfs"}), Blocked());
}

TEST_F(EscapeTest, PivotRootIsDenied) {
    EXPECT_THAT(probe({"pivot-root"}), Blocked());
}

TEST_F(EscapeTest, ChrootIsDenied) {
    EXPECT_THAT(probe({"chroot"}), Blocked());
}

TEST_F(EscapeTest, UnshareOfANewUserNamespaceIsDenied) {
    EXPECT_THAT(probe({"unshare-user"}), Blocked());
}

TEST_F(EscapeTest, CloneIntoANewUserNamespaceIsDenied) {
    EXPECT_THAT(probe({"clone-newuser"}), Blocked());
}

TEST_F(EscapeTest, Clone3IsDeniedWithEnosys) {
    RunResult r = probe({"clone3"});
    EXPECT_THAT(r, Blocked());
    EXPECT_THAT(r.out, HasSubstr("ENOSYS"))
        << "DESIGN §4: clone3 fails with ENOSYS so libc falls back";
}

TEST_F(EscapeTest, LandlockIsolationLeavesNoDaemonBehind) {
    // No pid namespace at this level: what the command leaves running is adopted by stockade
    // (a child subreaper) and killed when the command ends.
    RunResult r = probe_script(
        "setsid sleep 9411 </dev/null >/dev/null 2>&1 & (sleep 9412 </dev/null >/dev/null 2>&1 &);"
        " echo started",
        {"--isolation", "landlock"});
    SKIP_IF_UNAVAILABLE(r);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (const char* n : {"9411", "9412"}) {
        bool found = true;
        for (int i = 0; i < 100 && found; ++i) {
            found = false;
            for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
                auto cmdline = read_file_text(entry.path().string() + "/cmdline");
                found = found || (cmdline && *cmdline == std::string("sleep\0", 6) + n + '\0');
            }
            if (found) {
                std::this_thread::sleep_for(20ms);
            }
        }
        EXPECT_FALSE(found) << "sleep " << n << " outlived stockade run --isolation landlock";
    }
}

TEST_F(EscapeTest, KillingEverythingInsideDoesNotReachHostProcesses) {
    // A host process with the sandbox user's host uid: only the pid namespace keeps it out of
    // reach of kill(-1).
    std::vector<std::string> argv{"/bin/sleep", "30"};
    if (running_as_root()) {
        std::string id = std::to_string(kRootCallerHostUid);
        argv = {"/usr/bin/setpriv", "--reuid=" + id, "--regid=" + id,
                "--clear-groups",   "/bin/sleep",    "30"};
    }
    ChildProcess victim = ChildProcess::start(argv);
    ASSERT_TRUE(victim.running());
    RunResult r = sandboxed({"/bin/sh", "-c", "kill -KILL -1; true"});
    EXPECT_FALSE(r.timed_out) << r.describe();
    EXPECT_TRUE(victim.signal(0)) << "the host process is gone";
    int status = 0;
    EXPECT_EQ(::waitpid(victim.pid(), &status, WNOHANG), 0) << "the host process was killed";
}

// --- kernel interfaces ------------------------------------------------------------------------

TEST_F(EscapeTest, KeyctlIsDenied) {
    EXPECT_THAT(probe({"keyctl"}), Blocked());
}

TEST_F(EscapeTest, BpfIsDenied) {
    EXPECT_THAT(probe({"bpf"}), Blocked());
}

TEST_F(EscapeTest, PerfEventOpenIsDenied) {
    EXPECT_THAT(probe({"perf-event-open"}), Blocked());
}

TEST_F(EscapeTest, IoUringIsDenied) {
    EXPECT_THAT(probe({"io-uring-setup"}), Blocked());
}

TEST_F(EscapeTest, UserfaultfdIsDenied) {
    EXPECT_THAT(probe({"userfaultfd"}), Blocked());
}

TEST_F(EscapeTest, ModuleLoadingIsDenied) {
    EXPECT_THAT(probe({"init-module"}), Blocked());
}

TEST_F(EscapeTest, TiocstiIsDeniedEvenWithTheHighBitsSet) {
    EXPECT_THAT(probe({"tiocsti"}), Blocked());
}

TEST_F(EscapeTest, OtherX86SyscallAbisAreDenied) {
    // int $0x80 (i386) and x32 numbers bypass a filter that checks only x86-64 numbers.
    EXPECT_THAT(probe({"compat-syscalls"}), Blocked());
}

// The rest of the baseline deny list (DESIGN §4), with arguments that are harmless even if
// the call went through.
class DeniedSyscallTest : public EscapeTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(DeniedSyscallTest, IsDeniedByTheBaselineFilter) {
    EXPECT_THAT(probe({"syscall", GetParam()}), Blocked());
}

INSTANTIATE_TEST_SUITE_P(Baseline, DeniedSyscallTest,
                         ::testing::Values("adjtimex", "clock_adjtime", "settimeofday",
                                           "clock_settime", "syslog", "name_to_handle_at",
                                           "open_by_handle_at", "personality", "iopl", "ioperm",
                                           "acct", "quotactl", "swapoff", "kexec_load", "reboot",
                                           "setns", "process_vm_writev", "tioclinux"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                             return std::string(param.param);
                         });

// --- network ----------------------------------------------------------------------------------

TEST_F(EscapeTest, CannotConnectToAHostLoopbackPortWithNetworkNone) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    Listener listener(AF_INET, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    ASSERT_TRUE(listener.ok());
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    std::string port = std::to_string(ntohs(addr.sin_port));

    EXPECT_THAT(probe({"connect-tcp", "127.0.0.1", port}, {"--network", "none"}), Blocked());
    EXPECT_FALSE(listener.connected()) << "the host listener saw a connection from the sandbox";

    // Positive control: with the host's network the same probe reaches the listener.
    EXPECT_THAT(probe({"connect-tcp", "127.0.0.1", port}, {"--network", "host"}), Escaped());
    EXPECT_TRUE(listener.connected());
}

TEST_F(EscapeTest, CannotConnectToAHostIpv6LoopbackPortWithNetworkNone) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    Listener listener(AF_INET6, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    if (!listener.ok()) {
        GTEST_SKIP() << "no IPv6 loopback on this host";
    }
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    std::string port = std::to_string(ntohs(addr.sin6_port));
    EXPECT_THAT(probe({"connect-tcp", "::1", port}, {"--network", "none"}), Blocked());
    EXPECT_FALSE(listener.connected()) << "the host listener saw a connection from the sandbox";
}

TEST_F(EscapeTest, CannotConnectToAHostAbstractUnixSocket) {
    std::string name = "stockade-test-" + unique_suffix();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(name.size() + 1, sizeof addr.sun_path);
    std::copy(name.begin(), name.end(), addr.sun_path + 1);
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    Listener listener(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr), len);
    ASSERT_TRUE(listener.ok());

    EXPECT_THAT(probe({"connect-abstract", name}), Blocked());
    EXPECT_FALSE(listener.connected()) << "the host's abstract socket saw a connection";
}

TEST_F(EscapeTest, NetlinkAndOtherSocketFamiliesAreDeniedWithNetworkNone) {
    EXPECT_THAT(probe({"socket-netlink"}, {"--network", "none"}), Blocked());
    EXPECT_THAT(probe({"socket-family", "17"}, {"--network", "none"}), Blocked());  // AF_PACKET
    EXPECT_THAT(probe({"socket-family", "38"}, {"--network", "none"}), Blocked());  // AF_ALG
}

// --- secrets ----------------------------------------------------------------------------------

TEST_F(EscapeTest, SecretsInStockadesEnvironmentDoNotReachTheSandbox) {
    std::string secret = "stockade-secret-" + unique_suffix();
    RunConfig config;
    config.env = {"STOCKADE_TEST_SECRET=" + secret};
    EXPECT_THAT(probe({"read-environ", "self", secret}, {}, config), Blocked());
    EXPECT_THAT(probe({"read-environ", "self", "STOCKADE_TEST_SECRET"}, {}, config), Blocked());
    EXPECT_THAT(probe({"read-environ", "1", secret}, {}, config), Blocked());
    RunResult env = sandboxed({"/usr/bin/env"}, {}, config);
    EXPECT_EQ(env.exit_code, 0) << env.describe();
    EXPECT_THAT(env.out, ::testing::Not(HasSubstr(secret)));
    EXPECT_THAT(env.out, ::testing::Not(HasSubstr("STOCKADE_TEST_SECRET")));
}

// --- kernel settings --------------------------------------------------------------------------

TEST_F(EscapeTest, CorePatternCannotBeWritten) {
    auto before = read_file_text("/proc/sys/kernel/core_pattern");
    EXPECT_THAT(probe({"write-core-pattern"}), Blocked());
    EXPECT_EQ(read_file_text("/proc/sys/kernel/core_pattern"), before);
}

TEST_F(EscapeTest, ProcSysCannotBeWritten) {
    for (const char* path : {"/proc/sys/vm/drop_caches", "/proc/sys/kernel/modprobe",
                             "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward"}) {
        EXPECT_THAT(probe({"write-proc-sys", path}), Blocked()) << path;
    }
    EXPECT_THAT(probe({"write-proc-sys", "/proc/sysrq-trigger"}), Blocked());
}

// --- resources --------------------------------------------------------------------------------

TEST_F(EscapeTest, ForkBombIsContainedByThePidsLimit) {
    RunResult r = probe({"fork-bomb", "10", "1000"}, {"--pids", "64"});
    EXPECT_THAT(r, Blocked());
    EXPECT_THAT(r.out, HasSubstr("EAGAIN"));
    EXPECT_LT(r.elapsed, 30s);
    // The host still forks.
    EXPECT_EQ(run_process({"/bin/true"}).exit_code, 0);
}

TEST_F(EscapeTest, MemoryBombIsKilledOrRefused) {
    RunResult r = probe({"mem-bomb", "512"}, {"--memory", "64M"});
    EXPECT_FALSE(r.timed_out) << r.describe();
    if (r.exit_code == 128 + SIGKILL) {
        SUCCEED() << "killed at the limit: " << r.err;
    } else {
        EXPECT_THAT(r, Blocked()) << "expected ENOMEM from mmap or a SIGKILL (137)";
        EXPECT_THAT(r.out, HasSubstr("ENOMEM"));
    }
}

TEST_F(EscapeTest, MemoryLimitAlsoBoundsTmpfs) {
    if (!running_as_root()) {
        GTEST_SKIP() << "no cgroup delegation to this user: the rlimit fallback (RLIMIT_AS) cannot "
                        "bound tmpfs pages, so /tmp is bounded only by --tmp-size";
    }
    // /tmp is larger than the memory limit: its pages must count against --memory.
    RunResult r = probe({"fill-tmp", "/tmp", "256"}, {"--memory", "64M", "--tmp-size", "512M"});
    EXPECT_FALSE(r.timed_out) << r.describe();
    if (r.exit_code != 128 + SIGKILL) {
        EXPECT_THAT(r, Blocked()) << "expected a SIGKILL (137) or ENOMEM past 64 MB of /tmp";
    }
}

TEST_F(EscapeTest, FillingTmpStopsAtTheTmpSizeLimit) {
    RunResult r = probe({"fill-tmp", "/tmp", "64"}, {"--tmp-size", "8M"});
    ASSERT_THAT(r, Blocked());
    EXPECT_THAT(r.out, HasSubstr("ENOSPC"));
    // The probe's line: BLOCKED fill-tmp: ENOSPC after <bytes> bytes (<n> MB) in "<path>"
    size_t after = r.out.find("after ");
    size_t quote = r.out.find('"', after);
    ASSERT_TRUE(after != std::string::npos && quote != std::string::npos) << r.out;
    long long bytes = std::stoll(r.out.substr(after + 6));
    std::string path = r.out.substr(quote + 1, r.out.find('"', quote + 1) - quote - 1);
    EXPECT_LE(bytes, 8LL << 20);
    expect_absent_on_host(path);
}

}  // namespace
}  // namespace stockade::testing
