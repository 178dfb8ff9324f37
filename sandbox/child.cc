// The child-after-clone zone: see child.h. Read child_main() top to bottom: it is the launch
// order of docs/sandbox-lifecycle.md, steps 4 and 5.
//
// Rules for this file: only async-signal-safe calls (raw syscalls, no malloc, no stdio, no
// locks, no exceptions, no logging). Strings come from the ChildPlan, prepared before clone;
// scratch paths live in fixed stack buffers.
#include "sandbox/child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <span>

#include <net/if.h>
#include <netinet/in.h>

#include "common/scm_rights.h"  // header-only, allocation-free

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace stockade::sandbox {

const char* child_step_name(ChildStep step) noexcept {
    switch (step) {
        case ChildStep::kDeathSignal:
            return "set the parent-death signal";
        case ChildStep::kWaitForGo:
            return "wait for the supervisor";
        case ChildStep::kDumpable:
            return "make the sandbox's init non-dumpable";
        case ChildStep::kCgroupNamespace:
            return "enter a new cgroup namespace";
        case ChildStep::kUserNamespaceLimits:
            return "set the user namespace's limits";
        case ChildStep::kDropGroups:
            return "drop supplementary groups";
        case ChildStep::kMountPrivate:
            return "make mounts private";
        case ChildStep::kCaptureSource:
            return "capture a bind source";
        case ChildStep::kSetGid:
            return "setresgid";
        case ChildStep::kSetUid:
            return "setresuid";
        case ChildStep::kMountRoot:
            return "mount the new root";
        case ChildStep::kMountOp:
            return "assemble the root";
        case ChildStep::kPivotRoot:
            return "pivot_root";
        case ChildStep::kHostname:
            return "set the hostname";
        case ChildStep::kLoopback:
            return "bring up loopback";
        case ChildStep::kDnsSocket:
            return "bind the resolver's socket";
        case ChildStep::kProxyListener:
            return "listen for the network proxy";
        case ChildStep::kDropCaps:
            return "drop capabilities";
        case ChildStep::kNoNewPrivs:
            return "set no_new_privs";
        case ChildStep::kLandlock:
            return "apply Landlock";
        case ChildStep::kCloseFds:
            return "close inherited descriptors";
        case ChildStep::kRlimit:
            return "set resource limits";
        case ChildStep::kPty:
            return "open the pseudo-terminal";
        case ChildStep::kSendPty:
            return "hand the terminal to the supervisor";
        case ChildStep::kSeccomp:
            return "install the seccomp filter";
        case ChildStep::kFork:
            return "fork the command";
        case ChildStep::kChdir:
            return "change to the working directory";
        case ChildStep::kExec:
            return "execute the command";
    }
    return "unknown step";
}

namespace {

constexpr int kForwardedSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

// The command's pid, for init's signal forwarding. Written once after fork.
volatile sig_atomic_t g_command_pid = 0;

void forward_signal(int sig) {
    int saved = errno;
    if (g_command_pid > 0) {
        // SAFETY: kill is async-signal-safe.
        (void)::kill(g_command_pid, sig);
    }
    errno = saved;
}

// Reports {step, errno, index} to the supervisor and exits. The message is one datagram, so it
// arrives whole or not at all.
[[noreturn]] void fail(const ChildPlan& plan, ChildStep step, int err, int index = -1) noexcept {
    ChildMessage msg;
    msg.kind = ChildMessage::kError;
    msg.error = ChildError{step, err, index};
    (void)::send(plan.sync_fd, &msg, sizeof msg, MSG_NOSIGNAL);
    ::_exit(step == ChildStep::kExec ? (err == ENOENT ? 127 : 126) : 125);
}

size_t c_strlen(const char* s) noexcept {
    size_t n = 0;
    while (s[n] != '\0') {
        ++n;
    }
    return n;
}

// mkdir -p of every directory above `path` (or of `path` itself when `include_last`).
int make_parents(const char* path, bool include_last) noexcept {
    char buf[4096];
    size_t len = c_strlen(path);
    if (len + 1 > sizeof buf) {
        return ENAMETOOLONG;
    }
    ::memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; ++i) {
        if (buf[i] != '/' && buf[i] != '\0') {
            continue;
        }
        if (buf[i] == '\0' && !include_last) {
            break;
        }
        char saved = buf[i];
        buf[i] = '\0';
        if (::mkdir(buf, 0755) != 0 && errno != EEXIST) {
            return errno;
        }
        buf[i] = saved;
    }
    return 0;
}

int set_mount_attrs(int dirfd, const char* path, unsigned int at_flags, uint64_t attrs) noexcept {
    mount_attr attr{};
    attr.attr_set = attrs;
    // SAFETY: mount_setattr is a plain syscall.
    if (::syscall(SYS_mount_setattr, dirfd, path, at_flags, &attr, sizeof attr) != 0) {
        return errno;
    }
    return 0;
}

// Creates the mount point for a bind: a directory, or an empty file for a file bind.
int make_mount_point(const char* path, bool is_dir) noexcept {
    if (int err = make_parents(path, is_dir); err != 0) {
        return err;
    }
    if (is_dir) {
        return 0;
    }
    // A file already there (an image's own, in its read-only tree) is its own mount point.
    struct stat st {};
    if (::lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        return 0;
    }
    int fd = ::open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        return errno;
    }
    ::close(fd);
    return 0;
}

int write_all_fd(int fd, const char* data, size_t len) noexcept {
    while (len > 0) {
        ssize_t n = ::write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        data += n;
        len -= static_cast<size_t>(n);
    }
    return 0;
}

// The target of a policy path op (kPin, kReadOnlyPath, kMaskPath), opened O_PATH beneath the
// staged root without following any symlink on the way: the workspace is the sandbox's to
// change between runs, and a symlink planted there must not redirect a mount. Returns the
// descriptor, 0 with *fd = -1 for a missing path, or an errno (ELOOP: a symlink).
int open_policy_target(const ChildPlan& plan, const MountOp& op, int* fd) noexcept {
    *fd = -1;
    const char* relative = op.target.c_str();
    while (*relative == '/') {
        ++relative;
    }
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 is a plain syscall; `how` lives on this stack.
    long got = ::syscall(SYS_openat2, plan.staging_fd, relative, &how, sizeof how);
    if (got < 0) {
        return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
    }
    *fd = static_cast<int>(got);
    return 0;
}

// Attaches detached tree `tree` over the object `target_fd` refers to; closes `tree`.
int attach_over(int tree, int target_fd) noexcept {
    // SAFETY: move_mount of a detached tree onto a descriptor (no path lookup).
    long rc = ::syscall(SYS_move_mount, tree, "", target_fd, "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
    int err = rc != 0 ? errno : 0;
    ::close(tree);
    return err;
}

// A detached clone of what `fd` refers to (and everything mounted beneath it), or -errno.
int clone_tree(int fd, const char* path, unsigned int flags) noexcept {
    // SAFETY: open_tree is a plain syscall.
    long tree = ::syscall(SYS_open_tree, fd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags);
    return tree < 0 ? -errno : static_cast<int>(tree);
}

// A source the supervisor opened (`opened`, from its own mount namespace, which open_tree may
// not clone from here): the same directory, reached by `path` in this mount namespace. Its
// device and inode must be those of `opened`, so a path that was renamed away or replaced by a
// symlink since fails (ESTALE) rather than binding what it leads to now. The tree or -errno.
int capture_opened(const char* path, int opened) noexcept {
    // SAFETY: open, fstat, close and open_tree are plain syscalls on caller-made strings.
    const int at = ::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (at < 0) {
        return -errno;
    }
    struct stat want {};
    struct stat got {};
    int err = 0;
    if (::fstat(opened, &want) != 0 || ::fstat(at, &got) != 0) {
        err = errno;
    } else if (want.st_dev != got.st_dev || want.st_ino != got.st_ino) {
        err = ESTALE;
    }
    const int tree = err == 0 ? clone_tree(at, "", AT_EMPTY_PATH | AT_RECURSIVE) : -err;
    ::close(at);
    return tree;
}

// The private tmpfs the masks come from: an empty file and an empty directory, both mode 000.
// Made once, on the first mask, detached (it is never mounted anywhere but under masks).
int make_mask_fs(ChildPlan& plan) noexcept {
    if (plan.mask_fs_fd >= 0) {
        return 0;
    }
    // SAFETY: the new mount API, plain syscalls with constant strings.
    int fs = static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
    if (fs < 0) {
        return errno;
    }
    int err = 0;
    if (::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "8k", 0) != 0 ||
        ::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", "8", 0) != 0 ||
        ::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0555", 0) != 0 ||
        ::syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
        err = errno;
        ::close(fs);
        return err;
    }
    int mnt = static_cast<int>(::syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                                         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
    err = mnt < 0 ? errno : 0;
    ::close(fs);
    if (mnt < 0) {
        return err;
    }
    int file = ::openat(mnt, "file", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (file < 0 || ::mkdirat(mnt, "dir", 0) != 0) {
        err = errno;
        if (file >= 0) {
            ::close(file);
        }
        ::close(mnt);
        return err;
    }
    ::close(file);
    plan.mask_fs_fd = mnt;
    return 0;
}

// A generated file (kFile) over a file that already exists in the root — an image's own
// /etc/passwd inside its read-only /etc — which cannot be replaced in place: the content is
// written to a file of a private tmpfs (made on the first such file, never mounted anywhere
// but over its targets), and that file is bound read-only over the target. Closes `target`.
int write_over(ChildPlan& plan, const MountOp& op, int target) noexcept {
    struct stat st {};
    int err = ::fstat(target, &st) != 0 ? errno : (S_ISREG(st.st_mode) ? 0 : EEXIST);
    if (err == 0 && plan.generated_fs_fd < 0) {
        // SAFETY: the new mount API, plain syscalls with constant strings.
        const int fs = static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
        if (fs < 0) {
            err = errno;
        } else {
            if (::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "1m", 0) != 0 ||
                ::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", "64", 0) != 0 ||
                ::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
                ::syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
                err = errno;
            } else {
                const int mnt = static_cast<int>(
                    ::syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                              MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
                err = mnt < 0 ? errno : 0;
                plan.generated_fs_fd = mnt;
            }
            ::close(fs);
        }
    }
    char name[32] = "file-";
    size_t len = 5;
    for (unsigned n = plan.generated_files++;; n /= 10) {
        name[len++] = static_cast<char>('0' + n % 10);
        if (n < 10) {
            break;
        }
    }
    name[len] = '\0';
    if (err == 0) {
        const int fd = ::openat(plan.generated_fs_fd, name,
                                O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
                                static_cast<mode_t>(op.mode));
        if (fd < 0) {
            err = errno;
        } else {
            err = write_all_fd(fd, op.data.data(), op.data.size());
            ::close(fd);
        }
    }
    int tree = err == 0 ? clone_tree(plan.generated_fs_fd, name, 0) : -err;
    if (tree < 0) {
        err = -tree;
    } else if ((err = set_mount_attrs(tree, "", AT_EMPTY_PATH,
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                          MOUNT_ATTR_NOEXEC)) != 0) {
        ::close(tree);
    } else {
        err = attach_over(tree, target);
    }
    ::close(target);
    return err;
}

// kPin, kReadOnlyPath, kMaskPath.
int run_policy_op(ChildPlan& plan, const MountOp& op) noexcept {
    int target = -1;
    if (int err = open_policy_target(plan, op, &target); err != 0 || target < 0) {
        return err;  // 0: missing, skipped
    }
    struct stat st {};
    if (::fstat(target, &st) != 0) {
        int err = errno;
        ::close(target);
        return err;
    }
    const bool is_dir = S_ISDIR(st.st_mode);
    int tree = 0;  // a descriptor, or -errno
    int err = 0;
    switch (op.kind) {
        case MountOpKind::kPin:
            if (!is_dir) {
                ::close(target);
                return 0;  // no longer a directory: nothing of ours lies beneath it
            }
            tree = clone_tree(target, "", AT_EMPTY_PATH | AT_RECURSIVE);
            break;
        case MountOpKind::kReadOnlyPath:
            tree = clone_tree(target, "", AT_EMPTY_PATH | AT_RECURSIVE);
            if (tree >= 0) {
                err = set_mount_attrs(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
            }
            break;
        case MountOpKind::kMaskPath:
            err = make_mask_fs(plan);
            tree = err != 0 ? -err : clone_tree(plan.mask_fs_fd, is_dir ? "dir" : "file", 0);
            if (tree >= 0) {
                err = set_mount_attrs(
                    tree, "", AT_EMPTY_PATH,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
            }
            break;
        default:
            tree = -EINVAL;
            break;
    }
    if (tree < 0) {
        err = -tree;
    } else if (err != 0) {
        ::close(tree);
    } else {
        err = attach_over(tree, target);
    }
    ::close(target);
    return err;
}

// One mount operation of the plan.
int run_mount_op(ChildPlan& plan, const MountOp& op, const char* staged) noexcept {
    struct stat st {};
    switch (op.kind) {
        case MountOpKind::kBind: {
            int src = plan.prepared_fds[static_cast<size_t>(op.source_index)];
            if (src < 0) {
                src = plan.source_fds[static_cast<size_t>(op.source_index)];
            }
            if (src < 0) {
                return 0;  // an optional source that does not exist
            }
            if (int err = make_mount_point(staged, op.is_dir); err != 0) {
                return err;
            }
            uint64_t attrs = MOUNT_ATTR_NOSUID;
            if (!op.device) {
                attrs |= MOUNT_ATTR_NODEV;
            }
            if (!op.writable) {
                attrs |= MOUNT_ATTR_RDONLY;
            }
            if (int err = set_mount_attrs(src, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs); err != 0) {
                return err;
            }
            // SAFETY: move_mount attaches the detached tree captured before the root existed.
            if (::syscall(SYS_move_mount, src, "", AT_FDCWD, staged, MOVE_MOUNT_F_EMPTY_PATH) !=
                0) {
                return errno;
            }
            ::close(src);
            plan.source_fds[static_cast<size_t>(op.source_index)] = -1;
            plan.prepared_fds[static_cast<size_t>(op.source_index)] = -1;
            return 0;
        }
        case MountOpKind::kTmpfs: {
            if (int err = make_parents(staged, true); err != 0) {
                return err;
            }
            unsigned long flags = MS_NOSUID | MS_NODEV;
            if (::mount("tmpfs", staged, "tmpfs", flags, op.data.c_str()) != 0) {
                return errno;
            }
            return 0;
        }
        case MountOpKind::kProc:
            if (int err = make_parents(staged, true); err != 0) {
                return err;
            }
            if (::mount("proc", staged, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
                return errno;
            }
            return 0;
        case MountOpKind::kDevpts:
            if (int err = make_parents(staged, true); err != 0) {
                return err;
            }
            if (::mount("devpts", staged, "devpts", MS_NOSUID | MS_NOEXEC, op.data.c_str()) != 0) {
                return errno;
            }
            return 0;
        case MountOpKind::kMask:
            if (::lstat(staged, &st) != 0) {
                return op.optional && errno == ENOENT ? 0 : errno;
            }
            if (S_ISDIR(st.st_mode)) {
                if (::mount("tmpfs", staged, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                            "size=4k,nr_inodes=1,mode=0555") != 0) {
                    return errno;
                }
                return 0;
            }
            if (::mount(plan.staged_dev_null.c_str(), staged, nullptr, MS_BIND, nullptr) != 0) {
                return errno;
            }
            return set_mount_attrs(AT_FDCWD, staged, 0,
                                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
        case MountOpKind::kReadOnly:
            if (::lstat(staged, &st) != 0) {
                return op.optional && errno == ENOENT ? 0 : errno;
            }
            // A path inside a mount is made a mount point of its own first, so that only it
            // turns read-only; submounts keep their own flags.
            if (::mount(staged, staged, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
                return errno;
            }
            return set_mount_attrs(AT_FDCWD, staged, 0,
                                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        case MountOpKind::kSymlink:
            if (int err = make_parents(staged, false); err != 0) {
                return err;
            }
            if (::symlink(op.data.c_str(), staged) != 0) {
                return errno;
            }
            return 0;
        case MountOpKind::kPin:
        case MountOpKind::kReadOnlyPath:
        case MountOpKind::kMaskPath:
            return run_policy_op(plan, op);
        case MountOpKind::kFile: {
            // A file the image already has (an image's own /etc/passwd, in a read-only bind):
            // covered by the generated one, written on a private tmpfs.
            int existing = -1;
            if (int err = open_policy_target(plan, op, &existing); err != 0) {
                return err;
            }
            if (existing >= 0) {
                return write_over(plan, op, existing);
            }
            if (int err = make_parents(staged, false); err != 0) {
                return err;
            }
            int fd = ::open(staged, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
                            static_cast<mode_t>(op.mode));
            if (fd < 0) {
                return errno;
            }
            int err = write_all_fd(fd, op.data.data(), op.data.size());
            ::close(fd);
            return err;
        }
    }
    return EINVAL;
}

// The sandbox's ordinary uid and gid. Raw syscalls: glibc's wrappers would try to signal the
// supervisor's other threads, which do not exist in this copy of its address space. Capabilities
// in the user namespace survive (our uid was never the namespace's root), until dropped in 4d.
void switch_ids(const ChildPlan& plan) noexcept {
    if (!plan.set_ids) {
        return;
    }
    if (::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) {
        fail(plan, ChildStep::kSetGid, errno);
    }
    if (::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) {
        fail(plan, ChildStep::kSetUid, errno);
    }
}

// Step 4b: the root. Sources are captured first (open_tree), so that covering a directory
// with the new root can never hide a source; then the root is assembled on a tmpfs at the
// staging point, made read-only, and pivoted into; the old root is detached.
void assemble_root(ChildPlan& plan) noexcept {
    // SAFETY: mount(2) with constant arguments.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        fail(plan, ChildStep::kMountPrivate, errno);
    }
    for (size_t i = 0; i < plan.mounts.sources.size(); ++i) {
        if (plan.prepared_fds[i] >= 0) {
            continue;
        }
        const int opened = plan.mounts.source_fds[i];
        int fd = opened >= 0 ? capture_opened(plan.mounts.sources[i].c_str(), opened)
                             : clone_tree(AT_FDCWD, plan.mounts.sources[i].c_str(), AT_RECURSIVE);
        if (fd < 0) {
            errno = -fd;
            // Optional sources (image files a host may lack) are skipped; others fail.
            bool optional = false;
            for (const auto& op : plan.mounts.ops) {
                if (op.source_index == static_cast<int>(i)) {
                    optional = op.optional;
                }
            }
            if (!(optional && errno == ENOENT)) {
                fail(plan, ChildStep::kCaptureSource, errno, static_cast<int>(i));
            }
        }
        plan.source_fds[i] = fd < 0 ? -1 : fd;
    }
    // Sources are captured with the caller's access; from here on files are created, so the
    // filesystem ids must be mapped in the new user namespace.
    switch_ids(plan);
    if (::mount("tmpfs", plan.staging.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                "mode=0755,size=4m,nr_inodes=4096") != 0) {
        fail(plan, ChildStep::kMountRoot, errno);
    }
    plan.staging_fd = ::open(plan.staging.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (plan.staging_fd < 0) {
        fail(plan, ChildStep::kMountRoot, errno);
    }
    for (size_t i = 0; i < plan.mounts.ops.size(); ++i) {
        if (int err = run_mount_op(plan, plan.mounts.ops[i], plan.staged[i].c_str()); err != 0) {
            fail(plan, ChildStep::kMountOp, err, static_cast<int>(i));
        }
    }
    ::close(plan.staging_fd);
    plan.staging_fd = -1;
    if (plan.mask_fs_fd >= 0) {
        ::close(plan.mask_fs_fd);
        plan.mask_fs_fd = -1;
    }
    if (plan.generated_fs_fd >= 0) {
        ::close(plan.generated_fs_fd);
        plan.generated_fs_fd = -1;
    }
    if (int err = set_mount_attrs(AT_FDCWD, plan.staging.c_str(), 0,
                                  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        err != 0) {
        fail(plan, ChildStep::kMountRoot, err);
    }
    // pivot_root(".", ".") stacks the old root on the new one; detaching "." then removes the
    // whole host tree from this mount namespace.
    if (::chdir(plan.staging.c_str()) != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 ||
        ::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0) {
        fail(plan, ChildStep::kPivotRoot, errno);
    }
}

void bring_up_loopback(const ChildPlan& plan) noexcept {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(plan, ChildStep::kLoopback, errno);
    }
    ifreq ifr{};
    ::memcpy(ifr.ifr_name, "lo", 3);
    if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
        fail(plan, ChildStep::kLoopback, errno);
    }
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) {
        fail(plan, ChildStep::kLoopback, errno);
    }
    ::close(fd);
}

// Hands `fd` to the supervisor over the report socket, as a message of `kind`.
void send_to_supervisor(const ChildPlan& plan, ChildMessage::Kind kind, int fd,
                        ChildStep step) noexcept {
    ChildMessage msg;
    msg.kind = kind;
    iovec iov{&msg, sizeof msg};
    FdControl<1> control;
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    attach_fds(mh, control, std::span<const int>(&fd, 1));
    if (::sendmsg(plan.sync_fd, &mh, MSG_NOSIGNAL) < 0) {
        fail(plan, step, errno);
    }
}

// A socket of `type` bound on this network namespace's 127.0.0.1:`port`, taken before anything
// untrusted runs; a failure is reported as `step`.
int bound_on_loopback(const ChildPlan& plan, int type, uint16_t port, ChildStep step) noexcept {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        fail(plan, step, errno);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        fail(plan, step, errno);
    }
    return fd;
}

// Network mode allowlist: the proxy's port on this namespace's loopback, handed to the
// supervisor, which accepts on it from outside. The sandbox keeps no copy: connecting is all
// it can do.
void listen_for_proxy(const ChildPlan& plan) noexcept {
    const int fd = bound_on_loopback(plan, SOCK_STREAM, plan.proxy_port, ChildStep::kProxyListener);
    if (::listen(fd, SOMAXCONN) != 0) {
        fail(plan, ChildStep::kProxyListener, errno);
    }
    send_to_supervisor(plan, ChildMessage::kProxyListener, fd, ChildStep::kProxyListener);
    ::close(fd);
}

// Network modes none and allowlist: the resolver's address on this namespace's loopback (what
// the generated /etc/resolv.conf names), handed to the supervisor, which answers every query
// from outside. Port 53 needs CAP_NET_BIND_SERVICE, which the child holds in the user namespace
// that owns this network namespace.
void bind_for_resolver(const ChildPlan& plan) noexcept {
    const int fd = bound_on_loopback(plan, SOCK_DGRAM, 53, ChildStep::kDnsSocket);
    send_to_supervisor(plan, ChildMessage::kDnsSocket, fd, ChildStep::kDnsSocket);
    ::close(fd);
}

// Bounding set, ambient set and securebits, while CAP_SETPCAP is still held.
void drop_capability_bounds(const ChildPlan& plan) noexcept {
    if (!plan.new_user_ns) {
        // Without a user namespace we hold no capabilities to drop (unprivileged caller), and
        // as host root the bounding set still goes.
        for (int cap = 0; cap <= plan.last_cap; ++cap) {
            (void)::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        return;
    }
    for (int cap = 0; cap <= plan.last_cap; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
            fail(plan, ChildStep::kDropCaps, errno, cap);
        }
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kDropCaps, errno);
    }
    constexpr unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                    SECBIT_NO_CAP_AMBIENT_RAISE |
                                    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (::prctl(PR_SET_SECUREBITS, kBits, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kDropCaps, errno);
    }
}

void clear_capability_sets(const ChildPlan& plan) noexcept {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (::syscall(SYS_capset, &header, data) != 0) {
        fail(plan, ChildStep::kDropCaps, errno);
    }
}

// The report socket and the exec descriptor move to fixed high numbers, the passed descriptors
// become 3, 4, ...; everything else is closed.
constexpr int kSyncFd = 1000;
constexpr int kExecFd = 1001;

void arrange_fds(ChildPlan& plan) noexcept {
    // First every descriptor that is to be kept moves above the parking places: a supervisor
    // with a thousand descriptors open may hand over one numbered kSyncFd or kExecFd, which
    // parking the report socket there would otherwise overwrite (and the command would get
    // the report socket in its place, holding the launch open forever).
    auto lift = [&](int& fd) {
        if (fd < 0) {
            return;
        }
        const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, kExecFd + 1);
        if (high < 0) {
            fail(plan, ChildStep::kCloseFds, errno);
        }
        fd = high;
    };
    lift(plan.exec_fd);
    for (int& source : plan.stdio) {
        lift(source);
    }
    for (int& fd : plan.pass_fds) {
        lift(fd);
    }
    auto park = [&](int fd, int target) {
        if (fd != target && ::dup3(fd, target, O_CLOEXEC) < 0) {
            fail(plan, ChildStep::kCloseFds, errno);
        }
        return target;
    };
    plan.sync_fd = park(plan.sync_fd, kSyncFd);
    if (plan.exec_fd >= 0) {
        plan.exec_fd = park(plan.exec_fd, kExecFd);
    }
    for (int fd = 0; fd < 3; ++fd) {
        const int source = plan.stdio[static_cast<size_t>(fd)];
        if (source >= 0 && ::dup2(source, fd) < 0) {  // clears close-on-exec
            fail(plan, ChildStep::kCloseFds, errno);
        }
    }
    // Each passed descriptor is above kExecFd by now: none is overwritten before it is moved.
    for (size_t i = 0; i < plan.pass_fds.size(); ++i) {
        if (::dup2(plan.pass_fds[i], 3 + static_cast<int>(i)) < 0) {  // clears close-on-exec
            fail(plan, ChildStep::kCloseFds, errno);
        }
    }
    auto first_free = static_cast<unsigned int>(3 + plan.pass_fds.size());
    if (::close_range(first_free, kSyncFd - 1, 0) != 0 || ::close_range(kExecFd + 1, ~0U, 0) != 0) {
        fail(plan, ChildStep::kCloseFds, errno);
    }
    if (plan.exec_fd < 0) {
        (void)::close(kExecFd);
    }
}

// Opens a pseudo-terminal in the sandbox's own devpts, hands the master to the supervisor and
// returns the slave. The sandbox keeps no copy of the master.
int open_terminal(const ChildPlan& plan) noexcept {
    int master = ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) {
        fail(plan, ChildStep::kPty, errno);
    }
    int unlock = 0;
    if (::ioctl(master, TIOCSPTLCK, &unlock) != 0) {
        fail(plan, ChildStep::kPty, errno);
    }
    int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
        fail(plan, ChildStep::kPty, errno);
    }
    send_to_supervisor(plan, ChildMessage::kPtyMaster, master, ChildStep::kSendPty);
    ::close(master);
    return slave;
}

// /proc/1/cmdline and /proc/1/environ read these blocks of the supervisor's memory, which the
// child inherited. Replace them so nothing of the host shows.
void scrub_process_blocks(const ChildPlan& plan) noexcept {
    if (plan.env_begin != nullptr && plan.env_end > plan.env_begin) {
        ::memset(plan.env_begin, 0, static_cast<size_t>(plan.env_end - plan.env_begin));
    }
    if (plan.args_begin != nullptr && plan.args_end > plan.args_begin) {
        auto size = static_cast<size_t>(plan.args_end - plan.args_begin);
        ::memset(plan.args_begin, 0, size);
        constexpr char kName[] = "stockade-init";
        if (size > sizeof kName) {
            ::memcpy(plan.args_begin, kName, sizeof kName);
        }
    }
}

// Step 5: exec the command, searching PATH for a bare name. Never returns.
[[noreturn]] void exec_command(const ChildPlan& plan) noexcept {
    if (plan.exec_fd >= 0) {
        ::syscall(SYS_execveat, plan.exec_fd, "", plan.argv.data(), plan.envp.data(),
                  AT_EMPTY_PATH);
        fail(plan, ChildStep::kExec, errno);
    }
    const char* file = plan.argv[0];
    bool has_slash = false;
    for (const char* p = file; *p != '\0'; ++p) {
        has_slash = has_slash || *p == '/';
    }
    if (has_slash) {
        ::execve(file, plan.argv.data(), plan.envp.data());
        fail(plan, ChildStep::kExec, errno);
    }
    char candidate[4096];
    int result = ENOENT;
    size_t file_len = c_strlen(file);
    for (const auto& dir : plan.search_path) {
        if (dir.size() + 1 + file_len + 1 > sizeof candidate) {
            continue;
        }
        ::memcpy(candidate, dir.data(), dir.size());
        candidate[dir.size()] = '/';
        ::memcpy(candidate + dir.size() + 1, file, file_len + 1);
        ::execve(candidate, plan.argv.data(), plan.envp.data());
        if (errno == EACCES) {
            result = EACCES;  // remember, keep looking (as execvp does)
        } else if (errno != ENOENT && errno != ENOTDIR) {
            result = errno;
            break;
        }
    }
    fail(plan, ChildStep::kExec, result);
}

// The command's side of the fork: its own session, the terminal as controlling tty, default
// signals, the working directory, exec.
[[noreturn]] void become_command(const ChildPlan& plan, int slave) noexcept {
    // Every disposition back to default: the supervisor ignores SIGPIPE, and an ignored signal
    // would survive exec.
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            (void)::signal(sig, SIG_DFL);
        }
    }
    sigset_t none;
    ::sigemptyset(&none);
    (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
    (void)::setsid();  // init's child: a session of its own (EPERM when already a leader)
    if (slave >= 0) {
        if (::ioctl(slave, TIOCSCTTY, 0) != 0) {
            fail(plan, ChildStep::kPty, errno);
        }
        for (int fd = 0; fd < 3; ++fd) {
            if (plan.tty[static_cast<size_t>(fd)] && ::dup2(slave, fd) < 0) {
                fail(plan, ChildStep::kPty, errno);
            }
        }
        ::close(slave);
    }
    if (!plan.cwd.empty() && ::chdir(plan.cwd.c_str()) != 0) {
        fail(plan, ChildStep::kChdir, errno);
    }
    exec_command(plan);
}

// pid 1 of the sandbox: forks the command, forwards signals to it, reaps every orphan, and
// exits with the command's status (128+N when a signal killed it). When it exits, the kernel
// kills whatever else is left in the pid namespace.
[[noreturn]] void run_init(const ChildPlan& plan, int slave) noexcept {
    sigset_t all;
    sigset_t none;
    ::sigfillset(&all);
    ::sigemptyset(&none);
    (void)::sigprocmask(SIG_SETMASK, &all, nullptr);
    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    ::sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : kForwardedSignals) {
        (void)::sigaction(sig, &sa, nullptr);
    }
    // SAFETY: a raw fork (clone with SIGCHLD only): no atfork handlers, no locks.
    auto pid =
        static_cast<pid_t>(::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr));
    if (pid < 0) {
        fail(plan, ChildStep::kFork, errno);
    }
    if (pid == 0) {
        become_command(plan, slave);
    }
    g_command_pid = pid;
    scrub_process_blocks(plan);
    (void)::prctl(PR_SET_NAME, "stockade-init", 0, 0, 0);
    if (slave >= 0) {
        ::close(slave);
    }
    // init holds nothing of the outside world: no sync socket, no stdio.
    ::close(plan.sync_fd);
    ::close(0);
    ::close(1);
    ::close(2);
    // The mask inherited from the supervisor may block the signals init forwards.
    (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (;;) {
        int status = 0;
        pid_t reaped = ::waitpid(-1, &status, 0);
        if (reaped == pid) {
            ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        if (reaped < 0 && errno == ECHILD) {
            ::_exit(125);
        }
    }
}

// One byte from the supervisor ("go", then "in its cgroup"); EOF means it is gone or gave up.
void wait_for_supervisor(const ChildPlan& plan) noexcept {
    char byte = 0;
    ssize_t n = 0;
    do {
        n = ::recv(plan.sync_fd, &byte, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n != 1) {
        ::_exit(125);
    }
}

}  // namespace

[[noreturn]] void child_main(ChildPlan& plan) noexcept {
    ::close(plan.parent_sync_fd);

    // 4a. Die with the supervisor; then wait until it has written our id maps. EOF instead of
    // "go" means the supervisor is gone.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kDeathSignal, errno);
    }
    wait_for_supervisor(plan);
    // Nothing in the sandbox may ptrace this process, read its memory or take its fds.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kDumpable, errno);
    }
    // The kernel counts inotify instances and watches, and namespaces, per user of each user
    // namespace and again for the namespace's owner above it: this namespace's own limits keep
    // what the sandbox can take of its owner's bounded. /proc is still the host's here, and a
    // user sysctl always reads and writes the caller's own namespace. A kernel without one of
    // them (ENOENT) has nothing to bound.
    for (size_t i = 0; plan.new_user_ns && i < plan.userns_limits.size(); ++i) {
        const UserNamespaceLimit& limit = plan.userns_limits[i];
        // SAFETY: open/write/close on strings prepared by the supervisor.
        const int fd = ::open(limit.path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
            continue;
        }
        if (fd >= 0 && limit.after_cgroup_namespace) {
            plan.deferred_limit_fd = fd;  // written in 4c
            continue;
        }
        const int err = fd < 0 ? errno : write_all_fd(fd, limit.value.data(), limit.value.size());
        if (err != 0) {
            fail(plan, ChildStep::kUserNamespaceLimits, err, static_cast<int>(i));
        }
        ::close(fd);
    }
    if (plan.drop_groups && ::syscall(SYS_setgroups, 0, nullptr) != 0) {
        fail(plan, ChildStep::kDropGroups, errno);
    }

    // 4b. The filesystem: a read-only root built from the plan; pivot_root; old root detached.
    if (plan.new_mount_ns) {
        assemble_root(plan);
    }
    // 4c. Hostname and loopback in the new UTS and network namespaces.
    if (plan.new_uts_ns && ::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) {
        fail(plan, ChildStep::kHostname, errno);
    }
    if (plan.new_net_ns) {
        bring_up_loopback(plan);
        if (plan.proxy_port != 0) {
            listen_for_proxy(plan);
        }
        if (plan.dns_socket) {
            bind_for_resolver(plan);
        }
    }
    // The supervisor placed this process in its cgroup leaf while the root above was built
    // (on cgroup v1 a move waits for an RCU grace period): wait for "in", before anything runs
    // that the leaf's limits are for, and make the leaf the cgroup namespace's root.
    wait_for_supervisor(plan);
    if (plan.new_user_ns && ::unshare(CLONE_NEWCGROUP) != 0) {
        fail(plan, ChildStep::kCgroupNamespace, errno);
    }
    for (size_t i = 0; plan.deferred_limit_fd >= 0 && i < plan.userns_limits.size(); ++i) {
        const UserNamespaceLimit& limit = plan.userns_limits[i];
        if (!limit.after_cgroup_namespace) {
            continue;
        }
        if (int err = write_all_fd(plan.deferred_limit_fd, limit.value.data(), limit.value.size());
            err != 0) {
            fail(plan, ChildStep::kUserNamespaceLimits, err, static_cast<int>(i));
        }
        ::close(plan.deferred_limit_fd);
        plan.deferred_limit_fd = -1;
    }
    // 4d. A new session; the ordinary sandbox uid; no capabilities in any set; no_new_privs.
    (void)::setsid();
    drop_capability_bounds(plan);
    switch_ids(plan);
    // Changing the host uid (root callers) cleared the parent-death signal: arm it again, then
    // make sure the supervisor did not die in between (its end of the socket would be closed).
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kDeathSignal, errno);
    }
    pollfd peer{plan.sync_fd, POLLRDHUP, 0};
    if (::poll(&peer, 1, 0) != 0 && (peer.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        ::_exit(125);
    }
    clear_capability_sets(plan);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        fail(plan, ChildStep::kNoNewPrivs, errno);
    }
    // 4e. Landlock: writes only beneath the writable paths (paths of the new root).
    if (plan.landlock.abi > 0) {
        int rule = -1;
        if (int err = apply_landlock(plan.landlock, &rule); err != 0) {
            fail(plan, ChildStep::kLandlock, err, rule);
        }
    }
    // 4f. No inherited descriptors beyond 0, 1, 2, the passed ones (3, 4, ...) and the report
    // socket and exec descriptor (both close-on-exec); then the rlimits.
    arrange_fds(plan);
    for (size_t i = 0; i < plan.rlimits.size(); ++i) {
        if (::setrlimit(static_cast<__rlimit_resource>(plan.rlimits[i].resource),
                        &plan.rlimits[i].value) != 0) {
            fail(plan, ChildStep::kRlimit, errno, static_cast<int>(i));
        }
    }
    // 4g. A terminal of the sandbox's own devpts, when the caller's stdio is one.
    int slave = -1;
    if (plan.tty[0] || plan.tty[1] || plan.tty[2]) {
        slave = open_terminal(plan);
    }
    // 4h. seccomp last: everything above needed syscalls the filter denies.
    if (plan.seccomp.len > 0) {
        if (int err = install_seccomp_program(plan.seccomp); err != 0) {
            fail(plan, ChildStep::kSeccomp, err);
        }
    }
    // 5. Exec the command — from a reaping pid 1 when we are the root of a pid namespace.
    if (plan.as_pid1) {
        run_init(plan, slave);
    }
    become_command(plan, slave);
}

}  // namespace stockade::sandbox
