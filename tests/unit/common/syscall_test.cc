#include "common/syscall.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace stockade {
namespace {

// Runs `body` in a forked child and returns its exit code (the child's capability changes stay
// there).
template <class F>
int in_child(F body) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::_exit(body());
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PrivilegedCallerTest, OnlyRootWithCapSysAdminIsPrivileged) {
    if (::geteuid() != 0) {
        EXPECT_FALSE(privileged_caller()) << "an ordinary user is never privileged";
        return;
    }
    EXPECT_TRUE(privileged_caller()) << "this test's root has CAP_SYS_ADMIN";
    // Root without CAP_SYS_ADMIN (a container's root): an ordinary caller.
    const int code = in_child([] {
        __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
        if (::syscall(SYS_capget, &header, data) != 0) {
            return 2;
        }
        data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
        if (::syscall(SYS_capset, &header, data) != 0) {
            return 3;
        }
        return ::geteuid() == 0 && !privileged_caller() ? 0 : 1;
    });
    EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace stockade
