#include "workspace/open_beneath.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"

namespace stockade::workspace {
namespace {

using stockade::testing::FdLeakChecker;
using stockade::testing::IsOk;
using testing::TempDir;

class OpenBeneathTest : public ::testing::TestWithParam<ResolveMode> {
protected:
    void SetUp() override {
        tmp_.write("root/dir/file", "x");
        tmp_.write("outside", "secret");
        tmp_.symlink("root/dir/up", "..");
        tmp_.symlink("root/dir/self", ".");
        tmp_.symlink("root/dangling", "missing");
        tmp_.symlink("root/escape", "../outside");
        tmp_.symlink("root/dir/deep-escape", "../../outside");
        tmp_.symlink("root/dir/upup", "../..");
        root_ = UniqueFd(::open(tmp_.at("root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        ASSERT_TRUE(root_);
    }

    int open_errno(const std::string& path, int flags = O_RDONLY) {
        auto fd = open_beneath(root_.get(), path, flags, GetParam());
        return fd ? 0 : fd.error().sys_errno;
    }

    FdLeakChecker leaks_;
    TempDir tmp_;
    UniqueFd root_;
};

INSTANTIATE_TEST_SUITE_P(Resolve, OpenBeneathTest,
                         ::testing::Values(ResolveMode::kAuto, ResolveMode::kWalk),
                         [](const auto& p) {
                             return std::string(p.param == ResolveMode::kWalk ? "Walk" : "Auto");
                         });

TEST_P(OpenBeneathTest, ResolvesLinksThatStayBeneath) {
    EXPECT_EQ(open_errno("dir/file"), 0);
    EXPECT_EQ(open_errno("dir/up/dir/file"), 0);
    EXPECT_EQ(open_errno("dir/self/self/file"), 0);
    EXPECT_EQ(open_errno("dir/up", O_PATH | O_DIRECTORY), 0);
    EXPECT_EQ(open_errno("", O_PATH | O_DIRECTORY), 0);
}

TEST_P(OpenBeneathTest, RefusesLinksThatClimbOut) {
    EXPECT_EQ(open_errno("escape"), EXDEV);
    EXPECT_EQ(open_errno("dir/deep-escape"), EXDEV);
    EXPECT_EQ(open_errno("dir/upup", O_PATH), EXDEV);
    EXPECT_EQ(open_errno("dir/up/dir/upup/outside"), EXDEV);
}

TEST_P(OpenBeneathTest, ReportsMissingAndNotADirectory) {
    EXPECT_EQ(open_errno("dangling"), ENOENT);
    EXPECT_EQ(open_errno("dir/file/x"), ENOTDIR);
    EXPECT_EQ(open_errno("dir", O_RDONLY | O_DIRECTORY), 0);
    EXPECT_EQ(open_errno("dir/file", O_RDONLY | O_DIRECTORY), ENOTDIR);
}

TEST_P(OpenBeneathTest, NoFollowOpensTheLinkItself) {
    auto fd = open_beneath(root_.get(), "escape", O_PATH | O_NOFOLLOW, GetParam());
    ASSERT_THAT(fd, IsOk());
    struct stat st {};
    ASSERT_EQ(::fstat(fd->get(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
}

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

// In a child whose seccomp filter makes openat2 fail with ENOSYS (a pre-5.6 kernel, or Docker's
// default profile on older versions), kAuto falls back to the walk and still refuses escapes.
TEST(OpenBeneathFallbackTest, AutoFallsBackToTheWalkWhenOpenat2IsMissing) {
    if (kAuditArch == 0) {
        GTEST_SKIP() << "no seccomp architecture constant for this CPU";
    }
    FdLeakChecker leaks;
    TempDir tmp;
    tmp.write("root/dir/file", "x");
    tmp.write("outside", "secret");
    tmp.symlink("root/link", "dir/file");
    tmp.symlink("root/escape", "../outside");
    const std::string root_path = tmp.at("root");

    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            ::_exit(10);
        }
        int root = ::open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        if (::syscall(SYS_openat2, root, ".", &how, sizeof how) >= 0 || errno != ENOSYS) {
            ::_exit(11);  // the filter did not take
        }
        auto strict = open_beneath(root, "link", O_RDONLY, ResolveMode::kOpenat2);
        if (strict || strict.error().sys_errno != ENOSYS) {
            ::_exit(12);
        }
        if (!open_beneath(root, "link", O_RDONLY, ResolveMode::kAuto)) {
            ::_exit(13);
        }
        auto escape = open_beneath(root, "escape", O_RDONLY, ResolveMode::kAuto);
        if (escape || escape.error().sys_errno != EXDEV) {
            ::_exit(14);
        }
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10: seccomp refused, 11: filter ineffective, "
                                         "12: kOpenat2 did not report ENOSYS, 13: the fallback "
                                         "failed, 14: the fallback let an escape through";
}

}  // namespace
}  // namespace stockade::workspace
