#include "sandbox/idmap.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/syscall.h"

namespace stockade::sandbox {

Status write_id_maps(pid_t pid, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid,
                     gid_t outside_gid, bool deny_setgroups, uid_t root_outside) {
    std::string proc = fmt::format("/proc/{}/", pid);
    if (deny_setgroups) {
        RETURN_IF_ERROR(write_file(proc + "setgroups", "deny"));
    }
    const bool root = root_outside != 0 && inside_uid != 0 && inside_gid != 0;
    const std::string root_line = root ? fmt::format("0 {} 1\n", root_outside) : "";
    RETURN_IF_ERROR(write_file(proc + "uid_map",
                               fmt::format("{} {} 1\n{}", inside_uid, outside_uid, root_line)));
    RETURN_IF_ERROR(write_file(proc + "gid_map",
                               fmt::format("{} {} 1\n{}", inside_gid, outside_gid, root_line)));
    return {};
}

Result<UniqueFd> detached_tree(const std::string& source, int source_fd) {
    const long fd =
        source_fd >= 0
            ? ::syscall(SYS_open_tree, source_fd, "",
                        AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
            : ::syscall(SYS_open_tree, AT_FDCWD, source.c_str(),
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0) {
        return errno_error(fmt::format("open_tree \"{}\"", source), errno);
    }
    return UniqueFd(static_cast<int>(fd));
}

namespace {

// The holder of a new user namespace: it blocks until the pipe's write end is closed, then
// exits. It runs in the caller's memory on a stack of its own, with every signal blocked, so
// it touches nothing but that stack and the read of one byte (which, blocked, never fails).
int hold_user_namespace(void* read_fd) {
    char byte = 0;
    (void)::syscall(SYS_read, *static_cast<int*>(read_fd), &byte, 1);
    return 0;
}

}  // namespace

Result<UniqueFd> make_userns_fd(uid_t disk_uid, uid_t kernel_uid, gid_t disk_gid,
                                gid_t kernel_gid) {
    ASSIGN_OR_RETURN(FdPair pipe, make_pipe());
    // The child shares this process's memory and descriptor table (CLONE_VM | CLONE_FILES):
    // copying them, as a fork does, costs a server with hundreds of sessions milliseconds per
    // sandbox. Its own stack is a small mapping held until it has been reaped.
    constexpr std::size_t kStack = 64 * 1024;
    void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        return errno_error("map a stack for the idmap's user namespace", errno);
    }
    Defer unmap{[&] {
        ::munmap(stack, kStack);
    }};
    int read_fd = pipe.first.get();
    sigset_t all;
    sigset_t old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t child = ::clone(hold_user_namespace, static_cast<char*>(stack) + kStack,
                                CLONE_VM | CLONE_FILES | CLONE_NEWUSER | SIGCHLD, &read_fd);
    const int clone_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (child < 0) {
        return errno_error("clone(CLONE_NEWUSER) for an idmap", clone_errno);
    }
    auto reap = [&] {
        pipe.second.reset();  // EOF: the holder returns
        int status = 0;
        (void)retry_eintr([&] { return ::waitpid(child, &status, 0); });
    };
    auto maps = write_id_maps(child, disk_uid, kernel_uid, disk_gid, kernel_gid, false);
    if (!maps) {
        reap();
        return std::move(maps).error().wrap("write idmap maps");
    }
    auto ns = open_path(fmt::format("/proc/{}/ns/user", child), O_RDONLY);
    reap();
    return ns;
}

Result<UniqueFd> make_idmapped_tree(const std::string& source, int source_fd, int userns_fd) {
    ASSIGN_OR_RETURN(UniqueFd tree, detached_tree(source, source_fd));
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<__u64>(static_cast<unsigned int>(userns_fd));
    if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                  sizeof attr) != 0) {
        return errno_error(fmt::format("idmap \"{}\"", source), errno);
    }
    return tree;
}

}  // namespace stockade::sandbox
