// Behaviour of `stockade run`, driven through the real binary (tests/testing/sandbox_harness.h).
// Every case runs twice under ctest: as root and as an unprivileged user
// (tests/testing/as_user.sh), each with its own temporary directories.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;
using namespace std::chrono_literals;

// What a root caller's sandbox user is on the host (runner/session/sandbox_config.h
// kDefaultHostUid).
constexpr uid_t kRootCallerHostUid = 1879048192;

constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 77;
constexpr int kExitTimeout = 124;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;

std::string unique_suffix() {
    return std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::set<std::string> names_of_env(const std::string& env_output) {
    std::set<std::string> names;
    for (const auto& line : split_lines(env_output)) {
        names.insert(line.substr(0, line.find('=')));
    }
    return names;
}

// Polls `condition` every 20 ms until it holds or `limit` passes.
template <class F>
bool eventually(F condition, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

// No cgroup of any sandbox the current test started remains (empty where there are none, e.g.
// for an unprivileged caller without delegation).
void expect_no_cgroup_left() {
    for (pid_t pid : take_started_stockade_pids()) {
        std::vector<std::string> left;
        EXPECT_TRUE(eventually(
            [&] {
                left = sandbox_cgroup_dirs(pid);
                return left.empty();
            },
            2s))
            << "cgroup(s) of stockade pid " << pid
            << " outlived it: " << ::testing::PrintToString(left);
    }
}

// For cases about the namespace sandbox (own hostname, uid 1000, pid 1, fresh /tmp...): on a
// host where `auto` cannot have user namespaces they do not apply.
#define SKIP_WITHOUT_NAMESPACES()                                                            \
    do {                                                                                     \
        std::string level_ = auto_isolation_level();                                         \
        if (level_ != "full" && level_ != "namespaces") {                                    \
            GTEST_SKIP() << "no namespace isolation for this caller here (stockade doctor: " \
                            "auto chooses \""                                                \
                         << level_ << "\")";                                                 \
        }                                                                                    \
    } while (0)

// A stockade usage error: exit 2 and exactly one line on stderr that names the problem.
MATCHER_P(IsUsageErrorNaming, needle,
          "exits 2 with one stderr line naming " + std::string(needle)) {
    return arg.exit_code == kExitUsage && !arg.timed_out &&
           std::count(arg.err.begin(), arg.err.end(), '\n') == 1 &&
           arg.err.find(needle) != std::string::npos;
}

MATCHER_P(ExitsWith, code, "exits with " + std::to_string(code)) {
    return arg.exit_code == code && !arg.timed_out;
}

class RunTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(stockade_path().empty())
            << "STOCKADE_BIN is not set: run this suite through ctest";
        ASSERT_FALSE(probe_path().empty())
            << "STOCKADE_PROBE is not set: run this suite through ctest";
        workspace_ = root_.make_dir("workspace");
        (void)take_started_stockade_pids();
    }

    // After every run of every case: no cgroup of its sandbox remains.
    void TearDown() override { expect_no_cgroup_left(); }

    // stockade run --workspace <ws> OPTIONS -- COMMAND
    [[nodiscard]] std::vector<std::string> run_args(const std::vector<std::string>& options,
                                                    const std::vector<std::string>& command) const {
        std::vector<std::string> args{"run", "--workspace", workspace_};
        args.insert(args.end(), options.begin(), options.end());
        args.emplace_back("--");
        args.insert(args.end(), command.begin(), command.end());
        return args;
    }

    // Runs COMMAND in a sandbox on the workspace, from the workspace.
    RunResult run(const std::vector<std::string>& command,
                  const std::vector<std::string>& options = {}, RunConfig config = {}) {
        if (config.cwd.empty()) {
            config.cwd = workspace_;
        }
        return run_stockade(run_args(options, command), config);
    }

    RunResult sh(const std::string& script, const std::vector<std::string>& options = {},
                 RunConfig config = {}) {
        return run({"/bin/sh", "-c", script}, options, std::move(config));
    }

    FdLeakChecker fd_leak_checker_;
    TempDir root_;
    std::string workspace_;
};

// --- git metadata ------------------------------------------------------------------------------

TEST_F(RunTest, GitConfigAndHooksAreReadOnlyUnlessAskedOtherwise) {
    SKIP_WITHOUT_NAMESPACES();
    const std::string git = workspace_ + "/.git";
    ASSERT_TRUE(std::filesystem::create_directories(git + "/hooks"));
    root_.write_file("workspace/.git/config", "[core]\n\tbare = false\n");
    root_.write_file("workspace/src.txt", "x\n");
    // A hook or a setting planted here would run with the user's next git command.
    RunResult planted =
        sh("echo '[core] hooksPath = /tmp' >> .git/config; echo evil > .git/hooks/pre-commit; "
           "echo changed > src.txt; cat src.txt");
    EXPECT_THAT(planted.out, HasSubstr("changed")) << planted.describe();
    EXPECT_EQ(read_file_text(git + "/config"), "[core]\n\tbare = false\n");
    EXPECT_FALSE(std::filesystem::exists(git + "/hooks/pre-commit"));
    RunResult allowed = sh("echo '# mine' >> .git/config", {"--writable-git"});
    EXPECT_THAT(allowed, ExitsWith(0));
    EXPECT_THAT(read_file_text(git + "/config").value_or(""), HasSubstr("# mine"));
}

// --- nested in a user namespace ----------------------------------------------------------------

// Root of a user namespace that maps one id and denies setgroups (`unshare --map-root-user`, a
// rootless container's root): nothing to spare for a sandbox user of its own and no setgroups,
// so the sandbox runs as the caller, at the level the host gives, and does not exit 125.
TEST_F(RunTest, RunsInsideAUserNamespaceOfOneIdThatDeniesSetgroups) {
    SKIP_WITHOUT_NAMESPACES();
    RunConfig config;
    config.cwd = workspace_;
    std::vector<std::string> argv{"/usr/bin/unshare", "--user", "--map-root-user", stockade_path()};
    const std::vector<std::string> args =
        run_args({}, {"/bin/sh", "-c", "id -u; echo made > made-nested"});
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult nested = run_process(argv, config);
    ASSERT_THAT(nested, ExitsWith(0));
    EXPECT_EQ(nested.out, "1000\n");
    struct stat st {};
    ASSERT_EQ(::stat((workspace_ + "/made-nested").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid()) << "the caller's file, on the host";
}

// --- exit status and streams ------------------------------------------------------------------

TEST_F(RunTest, ExitStatusOfTheCommandIsPassedThrough) {
    EXPECT_THAT(sh("exit 7"), ExitsWith(7));
    EXPECT_THAT(run({"/bin/true"}), ExitsWith(0));
}

TEST_F(RunTest, CommandKilledBySignalExitsWith128PlusTheSignal) {
    EXPECT_THAT(sh("kill -TERM $$"), ExitsWith(128 + SIGTERM));
    EXPECT_THAT(sh("kill -KILL $$"), ExitsWith(128 + SIGKILL));
}

TEST_F(RunTest, StdinReachesTheCommand) {
    RunConfig config;
    config.stdin_data = "line one\nline two\n";
    RunResult r = run({"/bin/cat"}, {}, config);
    EXPECT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "line one\nline two\n");
}

TEST_F(RunTest, StdinIsAtEndOfFileWhenTheCallerGivesNone) {
    RunResult r = run({"/bin/cat"});
    EXPECT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "");
}

TEST_F(RunTest, StdoutAndStderrStaySeparate) {
    RunResult r = sh("echo to-stdout; echo to-stderr >&2");
    EXPECT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "to-stdout\n");
    EXPECT_EQ(r.err, "to-stderr\n");
}

TEST_F(RunTest, LargeOutputPassesThroughIntact) {
    RunResult r = sh("yes 0123456789 | head -c 2000000");
    EXPECT_THAT(r, ExitsWith(0));
    ASSERT_EQ(r.out.size(), 2000000U) << r.describe();
    EXPECT_EQ(r.out.find_first_not_of("0123456789\n"), std::string::npos);
}

// --- environment ------------------------------------------------------------------------------

TEST_F(RunTest, EnvironmentHoldsOnlyTheAllowlist) {
    std::string secret = "secret-value-" + unique_suffix();
    RunConfig config;
    config.env = {"STOCKADE_TEST_SECRET=" + secret, "AWS_SECRET_ACCESS_KEY=" + secret,
                  "LD_PRELOAD=/nonexistent/preload.so"};
    RunResult r = run({"/usr/bin/env"}, {}, config);
    ASSERT_THAT(r, ExitsWith(0));
    std::set<std::string> names = names_of_env(r.out);
    names.erase("TERM");  // allowed when a terminal is attached (never under ctest)
    EXPECT_EQ(names, (std::set<std::string>{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "USER"}))
        << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr(secret)));
}

TEST_F(RunTest, EnvFlagWithANamePassesTheCallersValue) {
    RunConfig config;
    config.env = {"STOCKADE_TEST_PASSED=value from the caller"};
    RunResult r = run({"/usr/bin/env"}, {"--env", "STOCKADE_TEST_PASSED"}, config);
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_THAT(split_lines(r.out),
                ::testing::Contains("STOCKADE_TEST_PASSED=value from the caller"));
}

TEST_F(RunTest, EnvFlagWithAValueSetsIt) {
    RunResult r = run({"/usr/bin/env"}, {"--env", "STOCKADE_TEST_SET=a=b c"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_THAT(split_lines(r.out), ::testing::Contains("STOCKADE_TEST_SET=a=b c"));
}

// --package-config: the user's npm and pip settings reach the sandbox's npm and pip; the
// credentials in them reach nothing.
TEST_F(RunTest, PackageConfigGivesNpmAndPipTheUsersSettingsWithoutCredentials) {
    if (const std::string level = auto_isolation_level();
        level != "full" && level != "namespaces") {
        GTEST_SKIP() << "no namespace isolation for this caller here: --package-config needs it";
    }
    root_.make_dir("home");
    root_.make_dir("home/.config");
    root_.make_dir("home/.config/pip");
    root_.write_file("home/.npmrc",
                     "registry=https://npm.mirror.example/\n"
                     "//npm.mirror.example/:_authToken=NPM-SECRET\n");
    root_.write_file("home/.config/pip/pip.conf",
                     "[global]\nindex-url = https://me:PIP-SECRET@pypi.mirror.example/simple\n");
    RunConfig config;
    config.env = {"HOME=" + root_.sub("home"), "XDG_CONFIG_HOME=" + root_.sub("home/.config")};
    RunResult r =
        sh("npm config get registry; python3 -m pip config list; "
           "grep -rl SECRET /.stockade /.cargo 2>/dev/null; env | grep -c SECRET; true",
           {"--package-config"}, config);
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_THAT(r.out, HasSubstr("https://npm.mirror.example/"));
    EXPECT_THAT(r.out, HasSubstr("global.index-url='https://pypi.mirror.example/simple'"));
    EXPECT_THAT(r.out, Not(HasSubstr("SECRET")));
    // Without the flag, neither file is there (HOME inside is /tmp).
    RunResult plain = sh("ls /.stockade 2>&1; npm config get registry", {}, config);
    EXPECT_THAT(plain.out, HasSubstr("https://registry.npmjs.org/"));

    // Where there is no mount namespace for the copies, the run is refused, never given the
    // originals.
    RunResult landlock = sh("true", {"--package-config", "--isolation", "landlock"}, config);
    EXPECT_EQ(landlock.exit_code, 77) << landlock.describe();
    EXPECT_THAT(landlock.err, HasSubstr("--package-config needs a mount namespace"));
}

// --- workspace, binds, working directory ------------------------------------------------------

TEST_F(RunTest, WorkspaceIsWritableAtTheSamePath) {
    RunResult r = sh("pwd; echo data > created.txt");
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, workspace_ + "\n");
    EXPECT_EQ(read_file_text(workspace_ + "/created.txt"), "data\n");
}

TEST_F(RunTest, FilesCreatedInTheWorkspaceKeepTheWorkspaceOwnersIds) {
    SKIP_WITHOUT_NAMESPACES();
    root_.write_file("workspace/from-host.txt", "host\n");
    RunResult r = sh("stat -c '%u %g' from-host.txt; echo x > from-sandbox.txt");
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "1000 1000\n")
        << "a file of the workspace's owner is the sandbox user's inside";
    struct stat st {};
    ASSERT_EQ(::stat((workspace_ + "/from-sandbox.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid())
        << "created files belong to the workspace's owner on the host";
    EXPECT_EQ(st.st_gid, ::getegid());
}

TEST_F(RunTest, WorkingDirectoryDefaultsToTheCallersDirectoryInsideTheWorkspace) {
    std::string sub = root_.make_dir("workspace/sub");
    RunConfig config;
    config.cwd = sub;
    RunResult r = run({"/bin/pwd"}, {}, config);
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, sub + "\n");
}

TEST_F(RunTest, WorkingDirectoryOutsideTheWorkspaceFallsBackToTheWorkspace) {
    RunConfig config;
    config.cwd = root_.path();
    RunResult r = run({"/bin/pwd"}, {}, config);
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, workspace_ + "\n");
}

TEST_F(RunTest, CwdFlagSetsTheWorkingDirectory) {
    std::string sub = root_.make_dir("workspace/elsewhere");
    RunConfig config;
    config.cwd = root_.path();
    RunResult r = run({"/bin/pwd"}, {"--cwd", sub}, config);
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, sub + "\n");
}

TEST_F(RunTest, RoPathIsReadableButNotWritable) {
    std::string ro = root_.make_dir("ro", 0777);  // writable on the host: only the mount stops it
    root_.write_file("ro/data.txt", "read me\n", 0666);
    RunResult r = sh("cat " + ro + "/data.txt; echo changed > " + ro +
                         "/data.txt && echo WROTE; touch " + ro + "/new && echo CREATED; true",
                     {"--ro", ro});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "read me\n");
    EXPECT_EQ(read_file_text(ro + "/data.txt"), "read me\n");
    EXPECT_FALSE(read_file_text(ro + "/new").has_value());
}

TEST_F(RunTest, RwPathIsWritable) {
    std::string rw = root_.make_dir("rw");
    RunResult r = sh("echo written > " + rw + "/new.txt", {"--rw", rw});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(read_file_text(rw + "/new.txt"), "written\n");
}

// --- /tmp -------------------------------------------------------------------------------------

TEST_F(RunTest, TmpIsAFreshTmpfsNotTheHosts) {
    SKIP_WITHOUT_NAMESPACES();
    // A marker in the host's /tmp must not be visible, and a file made inside must not appear.
    std::string marker = "/tmp/stockade-marker-" + unique_suffix();
    int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << "cannot create " << marker;
    (void)::close(fd);
    std::string inside = "/tmp/stockade-inside-" + unique_suffix();
    RunResult r = sh("stat -f -c %T /tmp; test -e " + marker +
                     " && echo MARKER-VISIBLE; echo x > " + inside + " && echo made");
    bool leaked = ::unlink(inside.c_str()) == 0;
    ::unlink(marker.c_str());
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "tmpfs\nmade\n");
    EXPECT_FALSE(leaked) << inside << " appeared in the host's /tmp";
}

TEST_F(RunTest, TmpSizeFlagLimitsTmp) {
    SKIP_WITHOUT_NAMESPACES();
    RunResult r =
        sh("stat -f -c '%b %S' /tmp; head -c 12582912 /dev/zero > /tmp/big 2>/dev/null "
           "&& echo FITS; stat -c %s /tmp/big",
           {"--tmp-size", "8M"});
    ASSERT_THAT(r, ExitsWith(0));
    std::vector<std::string> lines = split_lines(r.out);
    ASSERT_EQ(lines.size(), 2U) << r.describe();
    size_t space = lines[0].find(' ');
    ASSERT_NE(space, std::string::npos) << lines[0];
    EXPECT_EQ(std::stoull(lines[0].substr(0, space)) * std::stoull(lines[0].substr(space + 1)),
              8ULL << 20)
        << "blocks and block size of /tmp: " << lines[0];
    EXPECT_LE(std::stoull(lines[1]), 8ULL << 20) << "a 12 MB write fit in an 8 MB /tmp";
}

// --- identity and hardening -------------------------------------------------------------------

TEST_F(RunTest, HostnameIsStockade) {
    SKIP_WITHOUT_NAMESPACES();
    RunResult r = run({"/bin/uname", "-n"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "stockade\n");
}

TEST_F(RunTest, CommandRunsAsUid1000NamedStockade) {
    SKIP_WITHOUT_NAMESPACES();
    RunResult r = sh("id -u; id -un; id -g; id -G");
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "1000\nstockade\n1000\n1000\n");
}

TEST_F(RunTest, CapabilitiesAreAllZero) {
    RunResult r = run({"/bin/grep", "^Cap", "/proc/self/status"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_THAT(split_lines(r.out),
                ElementsAre("CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
                            "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                            "CapAmb:\t0000000000000000"));
}

TEST_F(RunTest, NoNewPrivsIsSet) {
    RunResult r = run({"/bin/grep", "^NoNewPrivs:", "/proc/self/status"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "NoNewPrivs:\t1\n");
}

TEST_F(RunTest, SeccompFilterIsActive) {
    RunResult r = run({"/bin/grep", "^Seccomp:", "/proc/self/status"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "Seccomp:\t2\n");
}

TEST_F(RunTest, OnlyTheStandardDescriptorsReachTheCommand) {
    // A descriptor stockade inherits from its caller must not reach the command.
    int leaked = ::open("/dev/null", O_RDONLY);  // not O_CLOEXEC: the harness passes it on
    ASSERT_GE(leaked, 3);
    RunConfig config;
    config.inherit_fds = {leaked};
    RunResult r = run({"/bin/ls", "/proc/self/fd"}, {}, config);
    (void)::close(leaked);
    ASSERT_THAT(r, ExitsWith(0));
    // ls itself holds one descriptor open on the directory it lists.
    EXPECT_THAT(split_lines(r.out), ElementsAre("0", "1", "2", "3"));
}

TEST_F(RunTest, NamespacesDifferFromTheHosts) {
    SKIP_WITHOUT_NAMESPACES();
    const std::vector<std::string> types{"cgroup", "ipc", "mnt", "net", "pid", "user", "uts"};
    std::string script;
    for (const auto& type : types) {
        script += "readlink /proc/self/ns/" + type + "; ";
    }
    RunResult r = sh(script);
    ASSERT_THAT(r, ExitsWith(0));
    std::vector<std::string> inside = split_lines(r.out);
    ASSERT_EQ(inside.size(), types.size()) << r.describe();
    for (size_t i = 0; i < types.size(); ++i) {
        std::string host = namespace_of(0, types[i]);
        ASSERT_FALSE(host.empty());
        EXPECT_NE(inside[i], host) << types[i] << " namespace is the host's";
        EXPECT_THAT(inside[i], StartsWith(types[i] + ":[")) << r.describe();
    }
}

TEST_F(RunTest, Pid1IsStockadeInit) {
    SKIP_WITHOUT_NAMESPACES();
    RunResult r = sh("tr '\\0' '\\n' < /proc/1/cmdline | head -n 1; echo $$");
    ASSERT_THAT(r, ExitsWith(0));
    std::vector<std::string> lines = split_lines(r.out);
    ASSERT_EQ(lines.size(), 2U) << r.describe();
    EXPECT_EQ(lines[0].substr(0, lines[0].find_last_not_of(' ') + 1), "stockade-init");
    EXPECT_NE(lines[1], "1") << "the command itself must not be pid 1";
}

TEST_F(RunTest, ProcListsOnlyTheSandboxsProcesses) {
    SKIP_WITHOUT_NAMESPACES();
    // init, sh and ls: nothing of the host's process table.
    RunResult r = sh("ls /proc | grep -c '^[0-9]'");
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_LE(std::stoi(r.out), 4) << r.describe();
}

// --- time limit and signals -------------------------------------------------------------------

TEST_F(RunTest, TimeoutKillsTheCommandWithExitStatus124) {
    RunResult r = run({"/bin/sleep", "30"}, {"--timeout", "1"});
    EXPECT_THAT(r, ExitsWith(kExitTimeout));
    EXPECT_LT(r.elapsed, 5s) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("timed out"));
}

TEST_F(RunTest, SigtermToStockadeReachesTheCommand) {
    ChildProcess child = start_stockade(run_args({}, {"/bin/sleep", "30"}));
    ASSERT_TRUE(child.running());
    // Wait until the sandbox exists (stockade has a child), then signal stockade itself.
    ASSERT_TRUE(eventually([&] { return !children_of(child.pid()).empty(); }, 10s));
    std::this_thread::sleep_for(200ms);
    ASSERT_TRUE(child.signal(SIGTERM));
    RunResult r = child.wait();
    EXPECT_THAT(r, ExitsWith(128 + SIGTERM));
    EXPECT_LT(r.elapsed, 10s);
}

// --- network ----------------------------------------------------------------------------------

TEST_F(RunTest, NetworkNoneHasOnlyLoopbackUp) {
    SKIP_WITHOUT_NAMESPACES();
    RunResult r = run({probe_path(), "ifaces"}, {"--ro", probe_dir(), "--network", "none"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "lo up\n");
}

TEST_F(RunTest, NetworkHostSeesTheHostsInterfaces) {
    RunResult host = run_process({probe_path(), "ifaces"});
    ASSERT_THAT(host, ExitsWith(0));
    RunResult r = run({probe_path(), "ifaces"}, {"--ro", probe_dir(), "--network", "host"});
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_THAT(split_lines(r.out), UnorderedElementsAreArray(split_lines(host.out)));
    RunResult ns = run({"/bin/readlink", "/proc/self/ns/net"}, {"--network", "host"});
    ASSERT_THAT(ns, ExitsWith(0));
    EXPECT_EQ(ns.out, namespace_of(0, "net") + "\n");
}

// --- usage errors and exec failures -----------------------------------------------------------

TEST_F(RunTest, MissingWorkspaceIsAUsageError) {
    std::string missing = root_.sub("no-such-workspace");
    EXPECT_THAT(run_stockade({"run", "--workspace", missing, "--", "/bin/true"}),
                IsUsageErrorNaming(missing));
}

TEST_F(RunTest, MissingRoPathIsAUsageError) {
    std::string missing = root_.sub("no-such-ro-path");
    EXPECT_THAT(run({"/bin/true"}, {"--ro", missing}), IsUsageErrorNaming(missing));
}

TEST_F(RunTest, UnknownOptionIsAUsageError) {
    EXPECT_THAT(run({"/bin/true"}, {"--no-such-option"}), IsUsageErrorNaming("--no-such-option"));
}

TEST_F(RunTest, BadMemoryValueIsAUsageError) {
    EXPECT_THAT(run({"/bin/true"}, {"--memory", "lots"}), IsUsageErrorNaming("--memory"));
}

TEST_F(RunTest, UnknownCommandExits127) {
    RunResult r = run({"stockade-no-such-command"});
    EXPECT_THAT(r, ExitsWith(kExitNotFound));
    EXPECT_THAT(r.err, HasSubstr("stockade-no-such-command"));
}

TEST_F(RunTest, NonExecutableFileExits126) {
    std::string file =
        root_.write_file("workspace/not-executable.sh", "#!/bin/sh\necho ran\n", 0644);
    RunResult r = run({file});
    EXPECT_THAT(r, ExitsWith(kExitNotExecutable));
    EXPECT_THAT(r.out, Not(HasSubstr("ran")));
}

TEST_F(RunTest, HelpAndVersionExitZero) {
    RunResult help = run_stockade({"run", "--help"});
    EXPECT_THAT(help, ExitsWith(0));
    EXPECT_THAT(help.out, HasSubstr("--workspace"));
    RunResult version = run_stockade({"--version"});
    EXPECT_THAT(version, ExitsWith(0));
    EXPECT_THAT(version.out, StartsWith("stockade "));
}

// --- isolation levels -------------------------------------------------------------------------

TEST_F(RunTest, LandlockIsolationLimitsReadsToTheImageAndTheWorkspace) {
    // Without a mount namespace the command runs as the workspace's owner; a root caller's
    // root-owned workspace would run as kRootCallerHostUid and could not write it.
    if (running_as_root()) {
        ASSERT_EQ(::chown(workspace_.c_str(), kRootCallerHostUid, kRootCallerHostUid), 0);
    }
    root_.write_file("workspace/inside.txt", "inside\n", 0644);
    // A world-readable host file outside the image, the workspace and /tmp.
    std::string outside;
    for (const char* candidate : {"/etc/login.defs", "/etc/adduser.conf", "/etc/host.conf",
                                  "/etc/fstab", "/var/lib/dpkg/status"}) {
        struct stat st {};
        if (::stat(candidate, &st) == 0 && (st.st_mode & S_IROTH) != 0) {
            outside = candidate;
            break;
        }
    }
    if (outside.empty()) {
        GTEST_SKIP() << "no world-readable host file outside the image to try";
    }
    RunResult r = sh("cat inside.txt; echo made > made.txt && echo wrote; cat " + outside +
                         " >/dev/null 2>&1 && echo READ-OUTSIDE; grep ^Seccomp: /proc/self/status",
                     {"--isolation", "landlock"});
    if (r.exit_code == kExitUnavailable) {
        GTEST_SKIP() << "landlock isolation is not available here: " << r.err;
    }
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_EQ(r.out, "inside\nwrote\nSeccomp:\t2\n") << "reading " << outside;
    EXPECT_EQ(read_file_text(workspace_ + "/made.txt"), "made\n");
}

TEST_F(RunTest, IsolationNonePrintsALoudWarning) {
    RunResult r = run({"/bin/true"}, {"--isolation", "none"});
    EXPECT_THAT(r, ExitsWith(0));
    EXPECT_THAT(r.err, AllOf(HasSubstr("WARNING"), HasSubstr("WITHOUT a sandbox")));
}

TEST_F(RunTest, UnavailableIsolationLevelExits77WithTheReason) {
    if (running_as_root()) {
        GTEST_SKIP()
            << "root has every isolation level here; this case needs an unprivileged caller";
    }
    RunResult r = run({"/bin/true"}, {"--isolation", "full"});
    if (r.exit_code == 0) {
        GTEST_SKIP() << "cgroups are delegated to this user, so full isolation is available";
    }
    EXPECT_THAT(r, ExitsWith(kExitUnavailable));
    EXPECT_THAT(r.err, HasSubstr("cgroup"));
}

// --- nothing outlives the run -----------------------------------------------------------------

TEST_F(RunTest, NoSandboxProcessRemainsAfterTheCommandExits) {
    SKIP_WITHOUT_NAMESPACES();
    // The command leaves a background process behind; it must die with the sandbox.
    RunResult r = sh("sleep 300 >/dev/null 2>&1 </dev/null & readlink /proc/self/ns/pid");
    ASSERT_THAT(r, ExitsWith(0));
    EXPECT_LT(r.elapsed, 10s);
    std::string ns = split_lines(r.out).empty() ? "" : split_lines(r.out)[0];
    ASSERT_THAT(ns, StartsWith("pid:[")) << r.describe();
    std::vector<pid_t> left;
    EXPECT_TRUE(eventually(
        [&] {
            left = processes_in_pid_namespace(ns);
            return left.empty();
        },
        2s))
        << left.size() << " process(es) of the sandbox outlived it, first pid " << left.front();
}

TEST_F(RunTest, NoCgroupDirectoryRemainsAfterTheRun) {
    if (!running_as_root()) {
        GTEST_SKIP() << "cgroup limits need root here (no cgroup delegation to this user)";
    }
    ChildProcess child =
        start_stockade(run_args({"--memory", "64M", "--pids", "100"}, {"/bin/sleep", "1"}));
    ASSERT_TRUE(child.running());
    bool seen = eventually([&] { return !sandbox_cgroup_dirs(child.pid()).empty(); }, 5s);
    RunResult r = child.wait();
    ASSERT_THAT(r, ExitsWith(0));
    ASSERT_TRUE(seen) << "no cgroup of the sandbox of stockade pid " << child.pid()
                      << " while it ran";
    std::vector<std::string> after;
    EXPECT_TRUE(eventually(
        [&] {
            after = sandbox_cgroup_dirs(child.pid());
            return after.empty();
        },
        2s))
        << "left behind: " << ::testing::PrintToString(after);
}

TEST_F(RunTest, SandboxDiesWhenStockadeIsKilled) {
    SKIP_WITHOUT_NAMESPACES();
    // A duration no other test uses (the root and user runs of this suite run side by side).
    const std::string duration = "1000." + std::to_string(::getpid());
    const std::vector<std::string> sleeper{"sleep", duration};
    std::vector<pid_t> before = processes_with_cmdline(sleeper);
    std::string ns_file = workspace_ + "/pid-ns";
    RunConfig config;
    config.cwd = workspace_;
    ChildProcess child = start_stockade(
        run_args({}, {"/bin/sh", "-c",
                      "readlink /proc/self/ns/pid > pid-ns.tmp && mv pid-ns.tmp pid-ns; "
                      "exec sleep " +
                          duration}),
        config);
    ASSERT_TRUE(child.running());
    std::string ns;
    ASSERT_TRUE(eventually(
        [&] {
            ns = read_file_text(ns_file).value_or("");
            return !ns.empty();
        },
        10s))
        << "the command never started";
    ns = split_lines(ns)[0];
    ASSERT_TRUE(eventually([&] { return !processes_in_pid_namespace(ns).empty(); }, 2s));
    // Let the shell exec sleep.
    std::this_thread::sleep_for(200ms);

    ASSERT_TRUE(child.signal(SIGKILL));
    RunResult r = child.wait();
    EXPECT_EQ(r.term_signal, SIGKILL) << r.describe();

    std::vector<pid_t> left;
    EXPECT_TRUE(eventually(
        [&] {
            left = processes_in_pid_namespace(ns);
            return left.empty();
        },
        2s))
        << left.size() << " process(es) of the sandbox outlived stockade";
    std::vector<pid_t> sleepers = processes_with_cmdline(sleeper);
    std::vector<pid_t> new_sleepers;
    for (pid_t pid : sleepers) {
        if (std::find(before.begin(), before.end(), pid) == before.end()) {
            new_sleepers.push_back(pid);
        }
    }
    EXPECT_THAT(new_sleepers, ::testing::IsEmpty())
        << "`sleep " << duration << "` outlived stockade";

    // Never leave a stray process or cgroup on the host, whatever the outcome. A SIGKILLed
    // supervisor cannot remove its cgroup itself, so that is not part of this case.
    left.insert(left.end(), new_sleepers.begin(), new_sleepers.end());
    for (pid_t pid : left) {
        ::kill(pid, SIGKILL);
    }
    (void)eventually(
        [&] {
            return std::none_of(left.begin(), left.end(),
                                [](pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; });
        },
        2s);
    for (pid_t pid : take_started_stockade_pids()) {
        for (const std::string& dir : sandbox_cgroup_dirs(pid)) {
            (void)eventually([&] { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; }, 2s);
        }
    }
}

}  // namespace
}  // namespace stockade::testing
