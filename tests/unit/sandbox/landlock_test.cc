#include "sandbox/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/child_check.h"
#include "tests/testing/fd_leak_checker.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::ChildOutcome;
using ::stockade::testing::ChildReport;
using ::stockade::testing::err_name;
using ::stockade::testing::FdLeakChecker;
using ::stockade::testing::run_in_child;
using ::testing::ElementsAre;
using ::testing::FieldsAre;

constexpr uint64_t kAbi1 = 0x1fff;  // EXECUTE .. MAKE_SYM
constexpr uint64_t kDev = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                          LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_IOCTL_DEV;
constexpr uint64_t kScoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;

// ---- The plan (pure) -----------------------------------------------------------------------

TEST(LandlockPlanTest, AbiZeroGivesAnEmptyPlanThatApplyIgnores) {
    LandlockPlan plan = make_landlock_plan(0, {.writable = {"/tmp"}, .readable = {}});
    EXPECT_EQ(plan.abi, 0);
    EXPECT_EQ(plan.handled_fs, 0U);
    EXPECT_EQ(plan.scoped, 0U);
    EXPECT_TRUE(plan.rules.empty());
    int failed_rule = 5;
    EXPECT_EQ(apply_landlock(plan, &failed_rule), 0);
    EXPECT_EQ(failed_rule, -1);
}

TEST(LandlockPlanTest, HandlesEveryFilesystemRightOfTheAbi) {
    const std::array<uint64_t, 9> want = {
        0,
        kAbi1,
        kAbi1 | LANDLOCK_ACCESS_FS_REFER,
        kAbi1 | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE,
        kAbi1 | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE,  // 4: network only
        0xffff,                                                          // 5: IOCTL_DEV
        0xffff,
        0xffff,
        0xffff,  // a newer kernel: the rights known here
    };
    for (int abi = 0; abi < static_cast<int>(want.size()); ++abi) {
        const LandlockPlan plan = make_landlock_plan(abi, {});
        EXPECT_EQ(plan.handled_fs, want[static_cast<size_t>(abi)]) << "abi " << abi;
        EXPECT_EQ(landlock_fs_access(abi), want[static_cast<size_t>(abi)]) << "abi " << abi;
        EXPECT_EQ(plan.scoped, abi >= 6 ? kScoped : 0U) << "abi " << abi;
    }
}

TEST(LandlockPlanTest, DefaultReadsEverythingAndWritesOnlyWhereAllowed) {
    const LandlockPlan plan =
        make_landlock_plan(7, {.writable = {"/work", "/tmp"}, .readable = {}});
    EXPECT_EQ(plan.abi, 7);
    EXPECT_THAT(plan.rules, ElementsAre(FieldsAre("/", kLandlockReadAccess, false, -1),
                                        FieldsAre("/dev", kDev, true, -1),
                                        FieldsAre("/proc", kLandlockReadAccess, true, -1),
                                        FieldsAre("/work", 0xffffU, false, -1),
                                        FieldsAre("/tmp", 0xffffU, false, -1)));
}

TEST(LandlockPlanTest, ReadablePathsReplaceTheRootAndRightsAreMaskedToTheAbi) {
    const LandlockPlan plan =
        make_landlock_plan(3, {.writable = {"/work"}, .readable = {"/usr", "/etc"}});
    const uint64_t abi3 = kAbi1 | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE;
    EXPECT_THAT(plan.rules,
                ElementsAre(FieldsAre("/usr", kLandlockReadAccess, true, -1),
                            FieldsAre("/etc", kLandlockReadAccess, true, -1),
                            FieldsAre("/dev", kDev & ~LANDLOCK_ACCESS_FS_IOCTL_DEV, true, -1),
                            FieldsAre("/proc", kLandlockReadAccess, true, -1),
                            FieldsAre("/work", abi3, false, -1)));
    for (const LandlockRule& rule : plan.rules) {
        EXPECT_EQ(rule.access & ~plan.handled_fs, 0U) << rule.path;
    }
}

// ---- In a child: the kernel's verdict ------------------------------------------------------

#define EXPECT_CHILD_OK(outcome)                                                   \
    EXPECT_TRUE(WIFEXITED((outcome).status) && WEXITSTATUS((outcome).status) == 0) \
        << "status " << (outcome).status << "\n"                                   \
        << (outcome).report

// Sets no_new_privs and applies `plan`; false (reported) on failure.
bool confine(ChildReport& report, const LandlockPlan& plan) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        report.fail("PR_SET_NO_NEW_PRIVS: {}", err_name(errno));
        return false;
    }
    int failed_rule = -1;
    if (int err = apply_landlock(plan, &failed_rule); err != 0) {
        report.fail(
            "apply_landlock: {} at rule {} (\"{}\")", err_name(err), failed_rule,
            failed_rule >= 0 ? plan.rules[static_cast<size_t>(failed_rule)].path.c_str() : "");
        return false;
    }
    return true;
}

class LandlockKernelTest : public ::testing::Test {
protected:
    void SetUp() override {
        LandlockSupport support = probe_landlock();
        if (support.abi == 0) {
            GTEST_SKIP() << "Landlock unavailable: " << err_name(support.sys_errno)
                         << " (kernel without CONFIG_SECURITY_LANDLOCK, or landlock missing "
                            "from the lsm= boot parameter)";
        }
        abi_ = support.abi;
        a_ = make_temp_dir();
        b_ = make_temp_dir();
        ASSERT_FALSE(a_.empty());
        ASSERT_FALSE(b_.empty());
        write_file(a_ + "/existing", "a");
        write_file(b_ + "/existing", "b");
    }

    void TearDown() override {
        std::error_code ec;
        for (const std::string& dir : {a_, b_}) {
            if (!dir.empty()) {
                std::filesystem::remove_all(dir, ec);
            }
        }
    }

    static std::string make_temp_dir() {
        std::string templ = (std::filesystem::temp_directory_path() / "landlock_test.XXXXXX");
        if (::mkdtemp(templ.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp: " << err_name(errno);
            return {};
        }
        return templ;
    }

    static void write_file(const std::string& path, const char* content) {
        FILE* f = ::fopen(path.c_str(), "we");
        ASSERT_NE(f, nullptr) << path;
        (void)::fputs(content, f);
        (void)::fclose(f);
    }

    FdLeakChecker fd_leak_checker_;
    int abi_ = 0;
    std::string a_;  // writable
    std::string b_;  // readable (or hidden), never writable
};

TEST_F(LandlockKernelTest, WritesOnlyBeneathWritablePaths) {
    const LandlockPlan plan = make_landlock_plan(abi_, {.writable = {a_}, .readable = {}});
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, plan)) {
            return;
        }
        report.expect_open(a_ + "/new", O_WRONLY | O_CREAT, 0);
        report.expect_open(a_ + "/existing", O_WRONLY | O_TRUNC, 0);
        report.expect_rc("mkdir in A", ::mkdir((a_ + "/dir").c_str(), 0755), 0);
        report.expect_rc("rename in A",
                         ::rename((a_ + "/new").c_str(), (a_ + "/dir/moved").c_str()), 0);
        report.expect_rc("unlink in A", ::unlink((a_ + "/dir/moved").c_str()), 0);

        report.expect_open(b_ + "/new", O_WRONLY | O_CREAT, EACCES);
        report.expect_open(b_ + "/existing", O_WRONLY, EACCES);
        report.expect_open(b_ + "/existing", O_RDONLY, 0);
        report.expect_rc("mkdir in B", ::mkdir((b_ + "/dir").c_str(), 0755), EACCES);
        report.expect_rc("unlink in B", ::unlink((b_ + "/existing").c_str()), EACCES);
        if (abi_ >= 3) {
            report.expect_rc("truncate in B", ::truncate((b_ + "/existing").c_str(), 0), EACCES);
        }
        // Out of A into B needs rights on B.
        report.expect_rc("rename A -> B",
                         ::rename((a_ + "/existing").c_str(), (b_ + "/moved").c_str()),
                         abi_ >= 2 ? EACCES : EXDEV);

        report.expect_open("/etc/hostname", O_RDONLY, 0);
        report.expect_open("/dev/null", O_WRONLY, 0);
        report.expect_open("/proc/self/status", O_RDONLY, 0);
        report.expect_open("/proc/self/comm", O_WRONLY, EACCES);
    });
    EXPECT_CHILD_OK(outcome);
}

TEST_F(LandlockKernelTest, ReadablePathsHideTheRest) {
    const LandlockPlan plan = make_landlock_plan(
        abi_,
        {.writable = {}, .readable = {a_, "/usr", "/lib", "/lib64", "/bin", "/etc", "/missing"}});
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, plan)) {
            return;
        }
        report.expect_open(a_ + "/existing", O_RDONLY, 0);
        report.expect_open(a_ + "/existing", O_WRONLY, EACCES);
        report.expect_open(b_ + "/existing", O_RDONLY, EACCES);
        report.expect_open(b_, O_RDONLY | O_DIRECTORY, EACCES);
        report.expect_open("/etc/hostname", O_RDONLY, 0);
        // Executables and their libraries are still reachable.
        pid_t pid = ::fork();
        if (pid == 0) {
            const char* argv[] = {"true", nullptr};
            ::execv("/bin/true", const_cast<char* const*>(argv));
            ::_exit(127);
        }
        int status = 0;
        if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            report.fail("exec /bin/true: status {}", status);
        }
    });
    EXPECT_CHILD_OK(outcome);
}

// The session worker is executed from a sealed memfd (runner/session/worker_binary.h): Landlock
// takes no rule on it (EBADFD: it is on an internal mount), which must not fail the plan, and
// executing it needs none.
TEST_F(LandlockKernelTest, AMemfdBinaryNeedsNoRuleAndExecutes) {
    const int memfd = ::memfd_create("landlock-test-true", MFD_CLOEXEC);
    ASSERT_GE(memfd, 0) << err_name(errno);
    const int source = ::open("/bin/true", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(source, 0) << err_name(errno);
    struct stat st {};
    ASSERT_EQ(::fstat(source, &st), 0);
    ASSERT_EQ(::sendfile(memfd, source, nullptr, static_cast<size_t>(st.st_size)), st.st_size);
    (void)::close(source);
    // The loader and libc of /bin/true are readable; nothing else is, nor executable.
    LandlockPlan plan =
        make_landlock_plan(abi_, {.writable = {}, .readable = {a_, "/usr", "/lib", "/lib64"}});
    plan.exec_fd = memfd;
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, plan)) {
            return;
        }
        report.expect_open(b_ + "/existing", O_RDONLY, EACCES);
        pid_t pid = ::fork();
        if (pid == 0) {
            const char* argv[] = {"true", nullptr};
            const char* envp[] = {nullptr};
            ::syscall(SYS_execveat, memfd, "", argv, envp, AT_EMPTY_PATH);
            ::_exit(errno == EACCES ? 126 : 127);
        }
        int status = 0;
        if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            report.fail("execveat the memfd: status {}", status);
        }
    });
    (void)::close(memfd);
    EXPECT_CHILD_OK(outcome);
}

TEST_F(LandlockKernelTest, ARegularFileRuleKeepsOnlyFileRights) {
    const LandlockPlan plan =
        make_landlock_plan(abi_, {.writable = {a_ + "/existing"}, .readable = {}});
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (!confine(report, plan)) {
            return;
        }
        report.expect_open(a_ + "/existing", O_WRONLY | O_APPEND, 0);
        report.expect_open(a_ + "/other", O_WRONLY | O_CREAT, EACCES);
    });
    EXPECT_CHILD_OK(outcome);
}

TEST_F(LandlockKernelTest, AMissingRequiredPathNamesTheRule) {
    const LandlockPlan plan =
        make_landlock_plan(abi_, {.writable = {a_, b_ + "/missing"}, .readable = {"/missing"}});
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
            report.fail("PR_SET_NO_NEW_PRIVS: {}", err_name(errno));
            return;
        }
        int failed_rule = -1;
        int err = apply_landlock(plan, &failed_rule);
        if (err != ENOENT || failed_rule < 0 ||
            plan.rules[static_cast<size_t>(failed_rule)].path != b_ + "/missing") {
            report.fail("apply_landlock: {} at rule {}, want ENOENT at \"{}/missing\"",
                        err_name(err), failed_rule, b_.c_str());
        }
        // Nothing was restricted.
        report.expect_open(b_ + "/new", O_WRONLY | O_CREAT, 0);
    });
    EXPECT_CHILD_OK(outcome);
}

TEST_F(LandlockKernelTest, SignalsAndAbstractSocketsOutsideTheDomainAreDenied) {
    if (abi_ < 6) {
        GTEST_SKIP() << "Landlock ABI " << abi_ << " has no scoping (needs 6, Linux 6.12)";
    }
    // An abstract unix socket outside the sandbox's domain.
    int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string name = "stockade-landlock-test-" + std::to_string(::getpid());
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&addr), addr_len), 0)
        << err_name(errno);
    ASSERT_EQ(::listen(listener, 1), 0);

    const LandlockPlan plan = make_landlock_plan(abi_, {.writable = {a_}, .readable = {}});
    ChildOutcome outcome = run_in_child([&](ChildReport& report) {
        report.expect_rc("kill parent before", ::kill(::getppid(), 0), 0);
        if (!confine(report, plan)) {
            return;
        }
        report.expect_rc("kill parent", ::kill(::getppid(), 0), EPERM);
        report.expect_rc("kill self", ::kill(::getpid(), 0), 0);
        int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        report.expect_rc("connect abstract",
                         ::connect(s, reinterpret_cast<const sockaddr*>(&addr), addr_len), EPERM);
        (void)::close(s);
    });
    (void)::close(listener);
    EXPECT_CHILD_OK(outcome);
}

}  // namespace
}  // namespace stockade::sandbox
