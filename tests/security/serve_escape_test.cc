// The escape attempts of the `stockade run` suite (escape_test.cc), made the way an agent makes
// them: as `bash` tool calls (and `process` where a long-lived process is needed) in a
// `stockade serve` session. Each fixture is ONE long session: every attack leaves its state
// behind for the next, and the session's worker must survive them all. After every attack the
// session must still `read` a marker file in its workspace with the same worker (the event log
// names one WorkerStarted, and that process is alive); after the last, nothing of the session may
// outlive it.
//
// Reading an outcome: the probe (tests/security/probe.cc) prints "BLOCKED ..." and exits 0, or
// "ESCAPED ..." and exits 1; a failure prints the whole tool result. A failing case here is a
// sandbox escape (or a session an attack can break), not a flaky test.
//
// Three sessions: the default one (full isolation where the host has it, --network none, with
// --pids and --tmp-size small enough to reach), one with --memory 64M for the memory attacks,
// and one at --isolation landlock (no namespaces: only Landlock and seccomp between a command
// and the host) for the attacks of the run suite that are specific to that level. Under ctest
// the suite runs again with the first two on an imported image (STOCKADE_TEST_IMAGE=1,
// tests/testing/test_image.h: busybox, the host's libc and the few host programs the attacks
// are written in) rather than the host's /usr.
//
// The sessions run with --ask-fallback allow: every call passes the policy (this client cannot
// be asked), so what stops an attack is the sandbox, never the policy's reading of the command.
// Not --preset danger-full-access: that preset also gives the session the host's network.
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
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "tests/testing/escape_support.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"
#include "tests/testing/test_image.h"

namespace stockade::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// Every call is bounded: a bash command moves to the background after kBashTimeoutMs, and no
// response may take longer than kCallLimit.
constexpr int kBashTimeoutMs = 30000;
constexpr auto kCallLimit = 60s;
constexpr const char* kSecretName = "STOCKADE_TEST_SECRET";
constexpr int kExitUnavailable = 77;

// 'text', for a shell.
std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    return out + "'";
}

// The tool result holds the probe's verdict: BLOCKED, and no ESCAPED anywhere.
MATCHER(Blocked, "the probe reports the attempt BLOCKED (and nothing ESCAPED)") {
    const bool ok = arg.find("BLOCKED ") != std::string::npos &&
                    arg.find("ESCAPED") == std::string::npos &&
                    arg.find("usage: ") == std::string::npos;
    if (!ok) {
        *result_listener << "\nthe whole tool result:\n" << arg << "\n";
    }
    return ok;
}

// For the positive controls: the probe can see an escape where there is one.
MATCHER(Escaped, "the probe reports an ESCAPE") {
    const bool ok = arg.find("ESCAPED ") != std::string::npos;
    if (!ok) {
        *result_listener << "\nthe whole text:\n" << arg << "\n";
    }
    return ok;
}

// A host process (sleep) with host uid `uid`: the sandbox user's, so that only the sandbox's own
// walls keep a command from it.
ChildProcess start_host_process_as(uid_t uid) {
    if (running_as_root() && uid != 0) {
        std::string id = std::to_string(uid);
        return ChildProcess::start({"/usr/bin/setpriv", "--reuid=" + id, "--regid=" + id,
                                    "--clear-groups", "/bin/sleep", "60"});
    }
    return ChildProcess::start({"/bin/sleep", "60"});
}

// What a session's sandbox has as its root file system: the test image when the suite runs on
// one (STOCKADE_TEST_IMAGE=1), or the host's /usr in any case.
enum class Root { kTestImage, kHost };

// One serve session, shared by every test of a fixture.
struct Session {
    TempDir root{"stockade-serve-escape"};
    TempDir state{"stockade-serve-escape-state"};
    std::string workspace;
    std::string sibling;
    std::string secret;        // a file next to the workspace
    std::string ro;            // a host directory, writable on the host, mounted --ro
    std::string ro_existing;   // a file in it
    std::string secret_value;  // kSecretName's value in the server's environment
    std::unique_ptr<ServeProcess> serve;
    pid_t worker = -1;           // the session's worker (host pid)
    size_t workers_started = 1;  // WorkerStarted events so far
    uid_t host_uid = 0;          // the host uid the session's commands run as
    std::string failure;         // why the session could not start
    bool unavailable = false;    // the isolation level asked for is not available here
};

class ServeEscapeBase : public ::testing::Test {
protected:
    // Starts the fixture's session: `stockade serve` with `flags` (besides the probe's --ro, the
    // policy flags and the image's), on `root`, after `prepare` has seen the layout.
    static void start_session(const std::vector<std::string>& flags, Root root,
                              void (*prepare)(Session&) = nullptr) {
        s_ = std::make_unique<Session>();
        Session& s = *s_;
        if (stockade_path().empty() || probe_path().empty()) {
            s.failure = "STOCKADE_BIN or STOCKADE_PROBE is not set: run this suite through ctest";
            return;
        }
        if (test_image().wanted && !test_image().ready()) {
            s.failure = "no test image";  // SetUp skips or fails every case with the reason
            return;
        }
        s.workspace = s.root.make_dir("workspace");
        s.sibling = s.root.make_dir("sibling");
        s.secret = s.root.write_file("sibling/secret.txt", "sibling secret\n", 0644);
        s.ro = s.root.make_dir("ro", 0777);  // writable on the host: only the mount stops it
        s.ro_existing = s.root.write_file("ro/existing.txt", "unchanged\n", 0666);
        s.root.write_file("workspace/marker.txt", "still here\n");
        if (prepare != nullptr) {
            prepare(s);
        }
        std::vector<std::string> args{"--ro", probe_dir(), "--ro", s.ro};
        // Every call passes the policy: what stops an attack is the sandbox (see the top).
        args.insert(args.end(), {"--ask-fallback", "allow", "--no-user-settings"});
        args.insert(args.end(), flags.begin(), flags.end());
        ServeLaunch launch;
        if (root == Root::kTestImage) {
            const std::vector<std::string> image = test_image_flags();
            args.insert(args.end(), image.begin(), image.end());
            launch.env = test_image_env();
        }
        // A secret in the server's environment, as a CI runner's token would be.
        s.secret_value = "stockade-secret-" + unique_suffix();
        ::setenv(kSecretName, s.secret_value.c_str(), 1);
        s.serve = std::make_unique<ServeProcess>(s.workspace, s.state.path(), args, launch);
        ::unsetenv(kSecretName);
        auto init = s.serve->initialize();
        if (!init.contains("result")) {
            // `serve --isolation X` exits 77 before answering when X is not available here.
            const int status = s.serve->wait_exit(10s);
            s.unavailable = status == kExitUnavailable;
            s.failure = "stockade serve " + ::testing::PrintToString(flags) +
                        " did not start (exit status " + std::to_string(status) + ")";
            return;
        }
        auto read = s.serve->call("read", {{"file_path", "marker.txt"}}, nullptr, kCallLimit);
        if (text_of(read).find("still here") == std::string::npos) {
            s.failure = "the session cannot read its marker: " + read.dump();
            return;
        }
        auto workers = worker_pids(s.state.path());
        if (workers.size() != 1) {
            s.failure = "expected one WorkerStarted event, found " + std::to_string(workers.size());
            return;
        }
        s.worker = workers[0];
        // The host uid of the commands' uid (the identity map when there is no user namespace).
        const std::string uid = text_of(s.serve->call(
            "bash",
            {{"command",
              "awk -v u=\"$(id -u)\" '$1 <= u && u < $1 + $3 { printf \"host-uid=%d\\n\", "
              "$2 + u - $1 }' /proc/self/uid_map"},
             {"timeout_ms", kBashTimeoutMs}},
            nullptr, kCallLimit));
        std::smatch m;
        const std::regex re("host-uid=(\\d+)");
        if (!std::regex_search(uid, m, re)) {
            s.failure = "cannot tell the session's host uid: " + uid;
            return;
        }
        s.host_uid = static_cast<uid_t>(std::stoul(m[1]));
    }

    // Ends the session after leaving processes behind on purpose (a daemon that left its
    // process group, a background process): none of them, and none of the session's pid
    // namespace, may outlive it.
    static void end_session() {
        if (!s_) {
            return;
        }
        Session& s = *s_;
        if (s.serve && s.failure.empty()) {
            static int round = 0;
            const std::string daemon = std::to_string(1000000 + ::getpid() * 10 + round % 10);
            const std::string background = std::to_string(2000000 + ::getpid() * 10 + round % 10);
            ++round;
            // (A bash call's leftovers are stopped when it returns: a process keeps them.)
            (void)s.serve->call(
                "process",
                {{"action", "start"},
                 {"command", "setsid sleep " + daemon +
                                 " </dev/null >/dev/null 2>&1 & exec sleep " + background}},
                nullptr, kCallLimit);
            std::vector<pid_t> left;
            for (int attempt = 0; attempt < 50 && left.size() < 2; ++attempt) {
                left = processes_with_cmdline({"sleep", daemon});
                auto more = processes_with_cmdline({"sleep", background});
                left.insert(left.end(), more.begin(), more.end());
                std::this_thread::sleep_for(20ms);
            }
            EXPECT_EQ(left.size(), 2U) << "the processes left behind on purpose did not start";
            // Their pid namespace (not the host's: at level landlock there is none of its own).
            std::string ns = left.empty() ? "" : namespace_of(left[0], "pid");
            if (ns == namespace_of(0, "pid")) {
                ns.clear();
            }
            s.serve->close_input();
            EXPECT_EQ(s.serve->wait_exit(20s), 0) << "stockade serve did not end cleanly";
            std::vector<pid_t> outlived;
            for (int attempt = 0; attempt < 100; ++attempt) {
                outlived = processes_with_cmdline({"sleep", daemon});
                auto more = processes_with_cmdline({"sleep", background});
                outlived.insert(outlived.end(), more.begin(), more.end());
                more = processes_in_pid_namespace(ns);
                outlived.insert(outlived.end(), more.begin(), more.end());
                if (outlived.empty() && !alive(s.worker)) {
                    break;
                }
                std::this_thread::sleep_for(50ms);
            }
            for (pid_t pid : outlived) {
                auto cmdline = read_file_text("/proc/" + std::to_string(pid) + "/cmdline");
                std::string shown = cmdline.value_or("?");
                std::replace(shown.begin(), shown.end(), '\0', ' ');
                while (!shown.empty() && shown.back() == ' ') {
                    shown.pop_back();
                }
                ADD_FAILURE() << "process " << pid << " (" << shown << ") outlived the session";
                (void)::kill(pid, SIGKILL);  // ours: never leave it on the host
            }
            for (pid_t worker : worker_pids(s.state.path())) {
                EXPECT_FALSE(alive(worker)) << "worker " << worker << " outlived its session";
            }
        }
        s_.reset();
    }

    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        ASSERT_TRUE(s_) << "no session";
        if (s_->unavailable) {
            GTEST_SKIP() << "isolation level unavailable on this host: " << s_->failure;
        }
        ASSERT_TRUE(s_->failure.empty()) << s_->failure;
    }

    static Session& s() { return *s_; }

    // After every attack: the same worker still serves the session's files.
    static void expect_session_intact(const std::string& after) {
        Session& s = *s_;
        const std::string read =
            text_of(s.serve->call("read", {{"file_path", "marker.txt"}}, nullptr, kCallLimit));
        EXPECT_THAT(read, HasSubstr("still here"))
            << "the session cannot read its workspace after: " << after;
        const std::vector<pid_t> workers = worker_pids(s.state.path());
        EXPECT_TRUE(!workers.empty() && workers.size() == s.workers_started &&
                    workers.back() == s.worker)
            << "the session's worker " << s.worker << " was replaced after: " << after
            << "\nworkers started: " << ::testing::PrintToString(workers);
        if (!workers.empty() && workers.back() != s.worker) {
            // Report a replacement once, at the attack that caused it.
            s.worker = workers.back();
            s.workers_started = workers.size();
        }
        EXPECT_TRUE(alive(s.worker))
            << "the session's worker " << s.worker << " died after: " << after;
    }

    // A bash call, as an agent makes it; returns the tool result's text.
    static std::string bash(const std::string& command) {
        const std::string text = text_of(s_->serve->call(
            "bash", {{"command", command}, {"timeout_ms", kBashTimeoutMs}}, nullptr, kCallLimit));
        expect_session_intact("bash: " + command);
        return text;
    }

    // The probe with `args`, through bash.
    static std::string probe(const std::vector<std::string>& args) {
        std::string command = shell_quote(probe_path());
        for (const auto& arg : args) {
            command += " " + shell_quote(arg);
        }
        return bash(command);
    }

    // A shell script through bash; $PROBE is the probe's path.
    static std::string probe_script(const std::string& script) {
        return bash("PROBE=" + shell_quote(probe_path()) + "; " + script);
    }

    // `process start`: returns the result's text, and the process's id ("p3") and pid inside.
    static std::string process_start(const std::string& command, std::string* id = nullptr,
                                     std::string* pid = nullptr) {
        const std::string text = text_of(s_->serve->call(
            "process", {{"action", "start"}, {"command", command}}, nullptr, kCallLimit));
        std::smatch m;
        if (std::regex_search(text, m, std::regex("(p\\d+) \\(pid (\\d+)\\)"))) {
            if (id != nullptr) {
                *id = m[1];
            }
            if (pid != nullptr) {
                *pid = m[2];
            }
        } else if (std::regex_search(text, m, std::regex("Process (p\\d+) exited"))) {
            if (id != nullptr) {
                *id = m[1];
            }
        }
        expect_session_intact("process start: " + command);
        return text;
    }

    // A `process` run to its end: all the text it returned, start to last wait.
    static std::string process_run(const std::string& command) {
        std::string id;
        std::string text = process_start(command, &id);
        for (int i = 0; i < 10 && !id.empty() && text.find(" exited ") == std::string::npos; ++i) {
            text += text_of(
                s_->serve->call("process", {{"action", "wait"}, {"id", id}}, nullptr, kCallLimit));
        }
        EXPECT_THAT(text, HasSubstr(" exited ")) << "the process did not end";
        expect_session_intact("process run: " + command);
        return text;
    }

    static void process_stop(const std::string& id) {
        (void)s_->serve->call("process", {{"action", "stop"}, {"id", id}}, nullptr, kCallLimit);
        expect_session_intact("process stop " + id);
    }

    // The session's own tool, outside bash: `read` of a path.
    static std::string read_tool(const std::string& path) {
        const std::string text =
            text_of(s_->serve->call("read", {{"file_path", path}}, nullptr, kCallLimit));
        expect_session_intact("read " + path);
        return text;
    }

    static std::unique_ptr<Session> s_;
};

std::unique_ptr<Session> ServeEscapeBase::s_;

// The default session: full isolation where the host has it, --network none, small bounds on
// processes and /tmp for the last attacks.
const std::vector<std::string> kDefaultFlags{"--network", "none",       "--pids",
                                             "64",        "--tmp-size", "8M"};

class ServeEscapeTest : public ServeEscapeBase {
protected:
    static void SetUpTestSuite() { start_session(kDefaultFlags, Root::kTestImage); }
    static void TearDownTestSuite() { end_session(); }
};

// --- the probe itself -------------------------------------------------------------------------

TEST_F(ServeEscapeTest, ProbeReportsEscapesWhenRunOutsideTheSandbox) {
    // Positive control: without a sandbox the same probes say ESCAPED, or a BLOCKED inside would
    // prove nothing (the session's own loopback is the control inside: see below).
    RunConfig here;
    here.cwd = s().workspace;
    EXPECT_THAT(run_process({probe_path(), "read-file", s().secret}, here).out, Escaped());
    EXPECT_THAT(run_process({probe_path(), "symlink-escape", s().secret}, here).out, Escaped());
    EXPECT_THAT(run_process({probe_path(), "write-file", s().root.sub("new-file")}, here).out,
                Escaped());
}

// --- host files -------------------------------------------------------------------------------

TEST_F(ServeEscapeTest, CannotReadEtcShadow) {
    EXPECT_THAT(probe({"read-file", "/etc/shadow"}), Blocked());
    EXPECT_THAT(probe({"read-file", "/etc/gshadow"}), Blocked());
}

TEST_F(ServeEscapeTest, CannotListRootsHome) {
    EXPECT_THAT(probe({"list-dir", "/root"}), Blocked());
    EXPECT_THAT(probe({"read-file", "/root/.bashrc"}), Blocked());
}

TEST_F(ServeEscapeTest, CannotListHome) {
    EXPECT_THAT(probe({"list-dir", "/home"}), Blocked());
}

TEST_F(ServeEscapeTest, CannotReadAFileInASiblingOfTheWorkspace) {
    EXPECT_THAT(probe({"read-file", s().secret}), Blocked());
    EXPECT_THAT(probe({"list-dir", s().sibling}), Blocked());
    EXPECT_THAT(probe({"read-file", s().workspace + "/../sibling/secret.txt"}), Blocked());
    // Nor through the session's own read tool, which the worker serves from inside.
    EXPECT_THAT(read_tool(s().secret), Not(HasSubstr("sibling secret")));
}

// --- writes outside the workspace -------------------------------------------------------------

TEST_F(ServeEscapeTest, CannotWriteUnderUsr) {
    std::string target = "/usr/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
    EXPECT_THAT(probe({"write-file", "/usr/bin/env"}), Blocked());
}

TEST_F(ServeEscapeTest, CannotWriteUnderEtc) {
    std::string target = "/etc/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
    EXPECT_THAT(probe({"write-file", "/etc/passwd"}), Blocked());
    EXPECT_THAT(probe({"write-file", "/etc/resolv.conf"}), Blocked());
}

TEST_F(ServeEscapeTest, CannotWriteAtTheRoot) {
    std::string target = "/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
}

TEST_F(ServeEscapeTest, CannotWriteARoPath) {
    std::string target = s().ro + "/new-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    EXPECT_THAT(probe({"write-file", s().ro_existing}), Blocked());
    expect_absent_on_host(target);
    EXPECT_EQ(read_file_text(s().ro_existing), "unchanged\n");
}

// --- links ------------------------------------------------------------------------------------

TEST_F(ServeEscapeTest, SymlinkInTheWorkspaceCannotReachAHostFile) {
    const std::string to_sibling = s().workspace + "/to-sibling-" + unique_suffix();
    const std::string to_shadow = s().workspace + "/to-shadow-" + unique_suffix();
    ASSERT_EQ(::symlink(s().secret.c_str(), to_sibling.c_str()), 0);
    ASSERT_EQ(::symlink("/etc/shadow", to_shadow.c_str()), 0);
    EXPECT_THAT(probe({"read-file", to_sibling}), Blocked());
    EXPECT_THAT(probe({"read-file", to_shadow}), Blocked());
    EXPECT_THAT(read_tool(to_sibling), Not(HasSubstr("sibling secret")));
}

TEST_F(ServeEscapeTest, SymlinkMadeInsideCannotReachAHostFile) {
    EXPECT_THAT(probe({"symlink-escape", s().secret}), Blocked());
    EXPECT_THAT(probe({"symlink-escape", "/etc/shadow"}), Blocked());
    // pid 1 is the session's worker.
    EXPECT_THAT(probe({"symlink-escape", "/proc/1/root/etc/shadow"}), Blocked());
}

TEST_F(ServeEscapeTest, HardlinkToAFileOutsideTheWorkspaceFails) {
    EXPECT_THAT(probe({"hardlink-escape", s().secret}), Blocked());
    EXPECT_THAT(probe({"hardlink-escape", "/etc/passwd"}), Blocked());
    EXPECT_THAT(probe({"hardlink-escape", "/usr/bin/env"}), Blocked());
}

TEST_F(ServeEscapeTest, SetuidRootExecutableCannotBePlantedInTheWorkspace) {
    // The workspace is the host's filesystem: a setuid file made inside stays setuid outside,
    // where nosuid does not apply. It must never be a setuid-root (or setgid-root) file.
    const std::string suffix = unique_suffix();
    const std::string file = "suid-true-" + suffix;
    const std::string dir = "sgid-dir-" + suffix;
    std::string out = bash("cp /bin/true " + file + " && chmod 6755 " + file + "; mkdir " + dir +
                           " && chmod 2777 " + dir + "; echo planted");
    ASSERT_THAT(out, HasSubstr("planted"));
    for (const std::string& name : {file, dir}) {
        expect_not_setid_root(s().workspace + "/" + name, "the session");
    }
}

// --- /proc and other processes: pid 1 is the session's worker ---------------------------------

TEST_F(ServeEscapeTest, ProcRootOfTheWorkerIsNotTraversable) {
    EXPECT_THAT(probe({"open-proc-root", "1"}), Blocked());
}

TEST_F(ServeEscapeTest, ProcExeOfTheWorkerCannotBeOpened) {
    // The worker is the host's stockade binary (exec'd from a descriptor): CVE-2019-5736.
    EXPECT_THAT(probe({"open-proc-exe", "1"}), Blocked());
}

TEST_F(ServeEscapeTest, TheWorkerCannotBePtraced) {
    EXPECT_THAT(probe({"ptrace-pid", "1"}), Blocked());
    EXPECT_THAT(probe({"ptrace-parent"}), Blocked());
}

TEST_F(ServeEscapeTest, TheWorkersMemoryCannotBeRead) {
    EXPECT_THAT(probe({"read-proc-mem", "1"}), Blocked());
    EXPECT_THAT(probe({"process-vm-read", "1"}), Blocked());
}

TEST_F(ServeEscapeTest, TheWorkersEnvironmentCannotBeRead) {
    EXPECT_THAT(probe({"read-environ", "1"}), Blocked());
}

TEST_F(ServeEscapeTest, ASiblingProcessCannotBePtraced) {
    EXPECT_THAT(
        probe_script("sleep 30 & \"$PROBE\" ptrace-pid $!; status=$?; kill $!; exit $status"),
        Blocked());
}

TEST_F(ServeEscapeTest, ASiblingProcessMemoryCannotBeRead) {
    EXPECT_THAT(
        probe_script("sleep 30 & \"$PROBE\" process-vm-read $!; status=$?; kill $!; exit $status"),
        Blocked());
}

TEST_F(ServeEscapeTest, ABackgroundProcessOfTheSessionCannotBePtracedOrReadByALaterCommand) {
    // A process started with `process` lives across calls: a later bash command is its sibling.
    std::string id;
    std::string pid;
    std::string started = process_start("exec sleep 300", &id, &pid);
    ASSERT_FALSE(pid.empty()) << started;
    EXPECT_THAT(probe({"ptrace-pid", pid}), Blocked());
    EXPECT_THAT(probe({"process-vm-read", pid}), Blocked());
    process_stop(id);
}

// --- mounts and namespaces --------------------------------------------------------------------

TEST_F(ServeEscapeTest, MountIsDenied) {
    EXPECT_THAT(probe({"mount-tmpfs"}), Blocked());
}

TEST_F(ServeEscapeTest, PivotRootIsDenied) {
    EXPECT_THAT(probe({"pivot-root"}), Blocked());
}

TEST_F(ServeEscapeTest, ChrootIsDenied) {
    EXPECT_THAT(probe({"chroot"}), Blocked());
}

TEST_F(ServeEscapeTest, UnshareOfANewUserNamespaceIsDenied) {
    EXPECT_THAT(probe({"unshare-user"}), Blocked());
}

TEST_F(ServeEscapeTest, CloneIntoANewUserNamespaceIsDenied) {
    EXPECT_THAT(probe({"clone-newuser"}), Blocked());
}

TEST_F(ServeEscapeTest, Clone3IsDeniedWithEnosys) {
    std::string out = probe({"clone3"});
    EXPECT_THAT(out, Blocked());
    EXPECT_THAT(out, HasSubstr("ENOSYS"))
        << "DESIGN §4: clone3 fails with ENOSYS so libc falls back";
}

TEST_F(ServeEscapeTest, KillingEverythingInsideReachesNeitherHostProcessesNorTheWorker) {
    // A host process with the session's host uid: only the pid namespace keeps it out of reach
    // of kill(-1). The worker (pid 1 inside) must survive it too, and a direct kill.
    ChildProcess victim = start_host_process_as(s().host_uid);
    ASSERT_TRUE(victim.running());
    std::string id;
    std::string started = process_start("exec sleep 300", &id);  // something inside to kill
    ASSERT_FALSE(id.empty()) << started;
    std::string out = bash("kill -KILL -1; kill -KILL 1; kill -TERM 1; echo sent");
    EXPECT_THAT(out, HasSubstr("sent"));
    EXPECT_TRUE(victim.signal(0)) << "the host process is gone";
    int status = 0;
    EXPECT_EQ(::waitpid(victim.pid(), &status, WNOHANG), 0) << "the host process was killed";
    // Positive control: the kill did reach the session's own processes.
    std::string waited =
        text_of(s().serve->call("process", {{"action", "wait"}, {"id", id}}, nullptr, kCallLimit));
    EXPECT_THAT(waited, HasSubstr("SIGKILL"));
    expect_session_intact("process wait " + id);
}

// --- kernel interfaces ------------------------------------------------------------------------

TEST_F(ServeEscapeTest, KeyctlIsDenied) {
    EXPECT_THAT(probe({"keyctl"}), Blocked());
}

TEST_F(ServeEscapeTest, BpfIsDenied) {
    EXPECT_THAT(probe({"bpf"}), Blocked());
}

TEST_F(ServeEscapeTest, PerfEventOpenIsDenied) {
    EXPECT_THAT(probe({"perf-event-open"}), Blocked());
}

TEST_F(ServeEscapeTest, IoUringIsDenied) {
    EXPECT_THAT(probe({"io-uring-setup"}), Blocked());
}

TEST_F(ServeEscapeTest, UserfaultfdIsDenied) {
    EXPECT_THAT(probe({"userfaultfd"}), Blocked());
}

TEST_F(ServeEscapeTest, ModuleLoadingIsDenied) {
    EXPECT_THAT(probe({"init-module"}), Blocked());
}

TEST_F(ServeEscapeTest, TiocstiIsDeniedEvenWithTheHighBitsSet) {
    // bash runs on pipes: the probe makes a pty of its own. A `process` runs on the session's
    // PTY, its controlling terminal, the one whose input an injection would reach.
    EXPECT_THAT(probe({"tiocsti"}), Blocked());
    std::string through_pty = process_run(shell_quote(probe_path()) + " tiocsti");
    EXPECT_THAT(through_pty, Blocked());
    EXPECT_THAT(through_pty, HasSubstr("controlling terminal"));
}

TEST_F(ServeEscapeTest, OtherX86SyscallAbisAreDenied) {
    // int $0x80 (i386) and x32 numbers bypass a filter that checks only x86-64 numbers.
    EXPECT_THAT(probe({"compat-syscalls"}), Blocked());
}

TEST_F(ServeEscapeTest, TheRestOfTheBaselineDenyListIsEnforced) {
    // Every call of the probe's list (DESIGN §4), each its own bash call.
    const std::string list = probe({"syscall", "list"});
    std::vector<std::string> names;
    for (const std::string& line : split_lines(list)) {
        if (!line.empty() &&
            line.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string::npos) {
            names.push_back(line);
        }
    }
    EXPECT_GE(names.size(), 18U) << list;
    for (const std::string& name : names) {
        EXPECT_THAT(probe({"syscall", name}), Blocked()) << name;
    }
}

// --- network ----------------------------------------------------------------------------------

TEST_F(ServeEscapeTest, CannotConnectToAHostLoopbackPortWithNetworkNone) {
    auto listener = tcp_loopback_listener();
    ASSERT_TRUE(listener->ok());
    EXPECT_THAT(probe({"connect-tcp", "127.0.0.1", std::to_string(listener->port())}), Blocked());
    EXPECT_FALSE(listener->connected()) << "the host listener saw a connection from the session";
}

TEST_F(ServeEscapeTest, CannotConnectToAHostIpv6LoopbackPortWithNetworkNone) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_loopback;
    Listener listener(AF_INET6, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    if (!listener.ok()) {
        GTEST_SKIP() << "no IPv6 loopback on this host";
    }
    EXPECT_THAT(probe({"connect-tcp", "::1", std::to_string(listener.port())}), Blocked());
    EXPECT_FALSE(listener.connected()) << "the host listener saw a connection from the session";
}

TEST_F(ServeEscapeTest, TheSessionsOwnLoopbackWorksAndIsNotTheHosts) {
    // Positive control for the two above: the probe does connect where a listener is reachable.
    // The session's listener takes the very port a host listener holds: two network namespaces,
    // and the connection reaches the session's.
    auto host = tcp_loopback_listener();
    ASSERT_TRUE(host->ok());
    const std::string port = std::to_string(host->port());
    std::string id;
    std::string started = process_start(
        "python3 -c \"import socket, time\ns = socket.socket()\n"
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('127.0.0.1', " +
            port + "))\ns.listen(8)\nprint('listening', flush=True)\ntime.sleep(120)\"",
        &id);
    for (int i = 0; i < 20 && started.find("listening") == std::string::npos; ++i) {
        std::this_thread::sleep_for(100ms);
        started += text_of(
            s().serve->call("process", {{"action", "read"}, {"id", id}}, nullptr, kCallLimit));
    }
    ASSERT_THAT(started, HasSubstr("listening"));
    std::string out = probe({"connect-tcp", "127.0.0.1", port});
    EXPECT_THAT(out, Escaped()) << "the session cannot reach its own loopback";
    EXPECT_THAT(out, HasSubstr("connected to 127.0.0.1:" + port));
    EXPECT_FALSE(host->connected()) << "the session's connection reached the host's listener";
    process_stop(id);
}

TEST_F(ServeEscapeTest, CannotConnectToAHostAbstractUnixSocket) {
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

TEST_F(ServeEscapeTest, NetlinkAndOtherSocketFamiliesAreDeniedWithNetworkNone) {
    EXPECT_THAT(probe({"socket-netlink"}), Blocked());
    EXPECT_THAT(probe({"socket-family", "17"}), Blocked());  // AF_PACKET
    EXPECT_THAT(probe({"socket-family", "38"}), Blocked());  // AF_ALG
}

// --- secrets ----------------------------------------------------------------------------------

TEST_F(ServeEscapeTest, SecretsInTheServersEnvironmentDoNotReachTheSession) {
    const std::string& secret = s().secret_value;
    EXPECT_THAT(probe({"read-environ", "self", secret}), Blocked());
    EXPECT_THAT(probe({"read-environ", "self", kSecretName}), Blocked());
    EXPECT_THAT(probe({"read-environ", "1", secret}), Blocked());
    std::string env = bash("/usr/bin/env");
    EXPECT_THAT(env, HasSubstr("PATH="));
    EXPECT_THAT(env, Not(HasSubstr(secret)));
    EXPECT_THAT(env, Not(HasSubstr(kSecretName)));
    std::string process_env = process_run("/usr/bin/env");
    EXPECT_THAT(process_env, HasSubstr("PATH="));
    EXPECT_THAT(process_env, Not(HasSubstr(secret)));
    EXPECT_THAT(process_env, Not(HasSubstr(kSecretName)));
    // The read tool runs in the worker: a link to the worker's own environment, made inside,
    // must not show it (its environment is the same allowlist, and the link leaves the
    // workspace).
    const std::string link = "environ-link-" + unique_suffix();
    ASSERT_THAT(bash("ln -s /proc/self/environ " + link + " && ln -s /proc/1/environ " + link +
                     "-1 && echo linked"),
                HasSubstr("linked"));
    EXPECT_THAT(read_tool(link), Not(HasSubstr(secret)));
    EXPECT_THAT(read_tool(link + "-1"), Not(HasSubstr(secret)));
}

// --- kernel settings --------------------------------------------------------------------------

TEST_F(ServeEscapeTest, CorePatternCannotBeWritten) {
    auto before = read_file_text("/proc/sys/kernel/core_pattern");
    EXPECT_THAT(probe({"write-core-pattern"}), Blocked());
    EXPECT_EQ(read_file_text("/proc/sys/kernel/core_pattern"), before);
}

TEST_F(ServeEscapeTest, ProcSysCannotBeWritten) {
    for (const char* path :
         {"/proc/sys/vm/drop_caches", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname",
          "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger"}) {
        EXPECT_THAT(probe({"write-proc-sys", path}), Blocked()) << path;
    }
}

// --- resources (--pids 64, --tmp-size 8M) -----------------------------------------------------

TEST_F(ServeEscapeTest, ForkBombIsContainedByThePidsLimit) {
    auto started = std::chrono::steady_clock::now();
    std::string out = probe({"fork-bomb", "10", "1000"});
    EXPECT_THAT(out, Blocked());
    EXPECT_THAT(out, HasSubstr("EAGAIN"));
    EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
    // The host still forks, and so does the session.
    EXPECT_EQ(run_process({"/bin/true"}).exit_code, 0);
    EXPECT_THAT(bash("echo forks-again"), HasSubstr("forks-again"));
}

TEST_F(ServeEscapeTest, FillingTmpStopsAtTheTmpSizeLimit) {
    std::string out = probe({"fill-tmp", "/tmp", "64"});
    ASSERT_THAT(out, Blocked());
    EXPECT_THAT(out, HasSubstr("ENOSPC"));
    // The probe's line: BLOCKED fill-tmp: ENOSPC after <bytes> bytes (<n> MB) in "<path>"
    size_t after = out.find("after ");
    size_t quote = out.find('"', after);
    ASSERT_TRUE(after != std::string::npos && quote != std::string::npos) << out;
    long long bytes = std::stoll(out.substr(after + 6));
    std::string path = out.substr(quote + 1, out.find('"', quote + 1) - quote - 1);
    EXPECT_LE(bytes, 8LL << 20);
    expect_absent_on_host(path);
    // The session goes on: /tmp is its own, and usable again once the file is gone.
    EXPECT_THAT(
        bash("rm -f " + shell_quote(path) + " && echo x > /tmp/after-fill && cat /tmp/after-fill"),
        HasSubstr("x\n"));
}

// --- memory (--memory 64M): a session of its own ----------------------------------------------

const std::vector<std::string> kMemoryFlags{"--network",  "none", "--memory", "64M",
                                            "--tmp-size", "512M", "--pids",   "64"};

class ServeMemoryEscapeTest : public ServeEscapeBase {
protected:
    static void SetUpTestSuite() { start_session(kMemoryFlags, Root::kTestImage); }
    static void TearDownTestSuite() { end_session(); }
};

TEST_F(ServeMemoryEscapeTest, MemoryBombIsKilledOrRefused) {
    std::string out = probe({"mem-bomb", "512"});
    if (out.find("killed by SIGKILL") != std::string::npos) {
        SUCCEED() << "killed at the limit";
    } else {
        EXPECT_THAT(out, Blocked()) << "expected ENOMEM from mmap or a SIGKILL";
        EXPECT_THAT(out, HasSubstr("ENOMEM"));
    }
}

TEST_F(ServeMemoryEscapeTest, MemoryLimitAlsoBoundsTmpfs) {
    if (!running_as_root()) {
        GTEST_SKIP() << "no cgroup delegation to this user: the rlimit fallback (RLIMIT_AS) cannot "
                        "bound tmpfs pages, so /tmp is bounded only by --tmp-size";
    }
    // /tmp is larger than the memory limit: its pages count against --memory. In a session the
    // worker shares that limit: the attack must end in the probe, not in the worker.
    std::string out = probe({"fill-tmp", "/tmp", "256"});
    if (out.find("killed by SIGKILL") == std::string::npos) {
        EXPECT_THAT(out, Blocked()) << "expected a SIGKILL or ENOMEM past 64 MB of /tmp";
    }
    (void)bash("rm -f /tmp/probe-fill-*");
}

TEST_F(ServeMemoryEscapeTest, MemoryNoProcessHoldsKillsTheCommandNotTheWorker) {
    if (!running_as_root()) {
        GTEST_SKIP() << "no cgroup delegation to this user: the rlimit fallback (RLIMIT_AS) does "
                        "not bound a memfd's pages";
    }
    // A memfd written but never mapped is charged to the memory cgroup and to no process's RSS:
    // were the worker in the commands' cgroup, the OOM killer would take it, the largest
    // process there (bash() checks that the same worker still serves the session).
    std::string out = bash(
        "python3 -c \"import os\nfd = os.memfd_create('fill')\nblock = b'x' * (1 << 20)\n"
        "for i in range(256):\n    os.write(fd, block)\nprint('WROTE 256 MB')\"");
    EXPECT_THAT(out, Not(HasSubstr("WROTE 256 MB"))) << out;
    EXPECT_THAT(out, AnyOf(HasSubstr("killed by SIGKILL"), HasSubstr("MemoryError"),
                           HasSubstr("No space"), HasSubstr("Cannot allocate")))
        << out;
}

// --- level landlock: no namespaces, so Landlock (and seccomp) alone keep the session in -------

// The sandbox user's host uid when root starts the session: pinned, so that the workspace can be
// given to it (without a mount namespace the sandbox user writes the workspace as itself).
constexpr uid_t kLandlockHostUid = 1879047000;

class ServeLandlockEscapeTest : public ServeEscapeBase {
protected:
    static void SetUpTestSuite() {
        std::vector<std::string> flags{"--isolation", "landlock", "--network", "none"};
        if (running_as_root()) {
            flags.insert(flags.end(), {"--host-uid", std::to_string(kLandlockHostUid)});
        }
        // No mount namespace at this level, so no image: the host's own root.
        start_session(flags, Root::kHost, [](Session& s) {
            if (running_as_root()) {
                EXPECT_EQ(::chown(s.workspace.c_str(), kLandlockHostUid, kLandlockHostUid), 0);
                EXPECT_EQ(::chown((s.workspace + "/marker.txt").c_str(), kLandlockHostUid,
                                  kLandlockHostUid),
                          0);
            }
        });
    }
    static void TearDownTestSuite() { end_session(); }
};

TEST_F(ServeLandlockEscapeTest, CannotReadAFileInASiblingOfTheWorkspace) {
    // The sibling lies in the host's temporary directory, as workspaces often do.
    EXPECT_THAT(probe({"read-file", s().secret}), Blocked())
        << "FAIL (sandbox bug): with serve --isolation landlock, " << s().secret
        << " next to the workspace is readable";
    EXPECT_THAT(read_tool(s().secret), Not(HasSubstr("sibling secret")));
}

TEST_F(ServeLandlockEscapeTest, CannotReadHostFilesOutsideTheImage) {
    EXPECT_THAT(probe({"list-dir", "/root"}), Blocked());
    EXPECT_THAT(probe({"list-dir", "/home"}), Blocked());
    EXPECT_THAT(probe({"read-file", "/etc/shadow"}), Blocked());
}

TEST_F(ServeLandlockEscapeTest, CannotReadOrWriteTheHostsSharedTmp) {
    // `stockade run` at this level gives the command a private TMPDIR and no access to the
    // host's /tmp and /dev/shm, where other users' and jobs' files live; a session is no
    // different.
    std::string target = "/tmp/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"list-dir", "/tmp"}), Blocked());
    EXPECT_THAT(probe({"write-file", target}), Blocked());
    expect_absent_on_host(target);
    std::string shm = "/dev/shm/stockade-probe-" + unique_suffix();
    EXPECT_THAT(probe({"write-file", shm}), Blocked());
    expect_absent_on_host(shm);
}

TEST_F(ServeLandlockEscapeTest, CannotHardlinkAFileOutsideTheWorkspace) {
    if (running_as_root()) {
        // The sandbox user owns the file, so protected_hardlinks alone would not stop the link.
        ASSERT_EQ(::chown(s().secret.c_str(), kLandlockHostUid, kLandlockHostUid), 0);
    }
    EXPECT_THAT(probe({"hardlink-escape", s().secret}), Blocked())
        << "FAIL (sandbox bug): with serve --isolation landlock, " << s().secret
        << " next to the workspace can be hard-linked into it";
}

TEST_F(ServeLandlockEscapeTest, CannotSignalAHostProcessOfTheSameUser) {
    ChildProcess victim = start_host_process_as(s().host_uid);
    ASSERT_TRUE(victim.running());
    EXPECT_THAT(probe({"signal-pid", std::to_string(victim.pid())}), Blocked());
}

TEST_F(ServeLandlockEscapeTest, CannotReadTheEnvironmentOfAHostProcessOfTheSameUser) {
    ChildProcess victim = start_host_process_as(s().host_uid);
    ASSERT_TRUE(victim.running());
    EXPECT_THAT(probe({"read-environ", std::to_string(victim.pid())}), Blocked());
    EXPECT_THAT(probe({"ptrace-pid", std::to_string(victim.pid())}), Blocked());
}

TEST_F(ServeLandlockEscapeTest, CannotConnectToAHostAbstractUnixSocket) {
    std::string name = "stockade-test-" + unique_suffix();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::copy(name.begin(), name.end(), addr.sun_path + 1);
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    Listener listener(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr), len);
    ASSERT_TRUE(listener.ok());
    EXPECT_THAT(probe({"connect-abstract", name}), Blocked());
    EXPECT_FALSE(listener.connected());
}

TEST_F(ServeLandlockEscapeTest, NetworkNoneCannotConnectToAHostLoopbackPort) {
    auto listener = tcp_loopback_listener();
    ASSERT_TRUE(listener->ok());
    EXPECT_THAT(probe({"connect-tcp", "127.0.0.1", std::to_string(listener->port())}), Blocked())
        << "FAIL (sandbox bug): serve --isolation landlock --network none reached a TCP port on "
           "the host's loopback";
    EXPECT_FALSE(listener->connected());
}

}  // namespace
}  // namespace stockade::testing
