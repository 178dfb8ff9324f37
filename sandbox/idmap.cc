#include "sandbox/idmap.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/syscall.h"

namespace stockade::sandbox {

Status write_id_maps(pid_t pid, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid,
                     gid_t outside_gid, bool deny_setgroups) {
    std::string proc = fmt::format("/proc/{}/", pid);
    if (deny_setgroups) {
        RETURN_IF_ERROR(write_file(proc + "setgroups", "deny"));
    }
    RETURN_IF_ERROR(
        write_file(proc + "uid_map", fmt::format("{} {} 1\n", inside_uid, outside_uid)));
    RETURN_IF_ERROR(
        write_file(proc + "gid_map", fmt::format("{} {} 1\n", inside_gid, outside_gid)));
    return {};
}

Result<UniqueFd> make_userns_fd(uid_t disk_uid, uid_t kernel_uid, gid_t disk_gid,
                                gid_t kernel_gid) {
    ASSIGN_OR_RETURN(FdPair pipe, make_pipe());
    // SAFETY: fork-like clone into a new user namespace; the child only blocks on the pipe.
    long pid = ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (pid < 0) {
        return errno_error("clone(CLONE_NEWUSER) for an idmap", errno);
    }
    if (pid == 0) {
        ::close(pipe.second.get());
        char c = 0;
        while (::read(pipe.first.get(), &c, 1) < 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    auto child = static_cast<pid_t>(pid);
    auto reap = [&] {
        pipe.second.reset();
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

Result<UniqueFd> make_idmapped_tree(const std::string& source, int userns_fd) {
    int fd = static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, source.c_str(),
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (fd < 0) {
        return errno_error(fmt::format("open_tree \"{}\"", source), errno);
    }
    UniqueFd tree(fd);
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
