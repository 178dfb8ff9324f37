// stockade-probe: runs inside a sandbox and attempts one escape per invocation.
//
//   stockade-probe SUBCOMMAND [ARGS...]
//
// Each subcommand prints exactly one line, "BLOCKED <what>: <detail>" or
// "ESCAPED <what>: <detail>", and exits 0 when the attempt was blocked, 1 when it succeeded (an
// escape), 2 on misuse ("usage: ..."). `ifaces` and `syscall list` are informational (exit 0).
//
// The probe must never harm the host even when the sandbox is broken: writes create fresh
// files and remove them again, existing files are opened but never written, the fork and memory
// bombs stop by themselves, kernel-state calls use arguments that fail right after the
// permission check. It links nothing but libc, so it runs in any image that has one.
#include <dirent.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

namespace {

const char* g_what = "probe";

const char* err_name(int err) {
    const char* name = strerrorname_np(err);
    return name != nullptr ? name : "E?";
}

[[noreturn]] void report(int code, const char* verdict, const char* fmt, va_list ap) {
    printf("%s %s: ", verdict, g_what);
    vprintf(fmt, ap);
    printf("\n");
    (void)fflush(stdout);
    _exit(code);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void blocked(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(0, "BLOCKED", fmt, ap);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void escaped(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(1, "ESCAPED", fmt, ap);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void misuse(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("usage: %s: ", g_what);
    vprintf(fmt, ap);
    printf("\n");
    (void)fflush(stdout);
    va_end(ap);
    _exit(2);
}

// "self", "parent" or a number.
pid_t parse_pid(const char* text) {
    if (strcmp(text, "self") == 0) {
        return getpid();
    }
    if (strcmp(text, "parent") == 0) {
        return getppid();
    }
    char* end = nullptr;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value <= 0 || value > 4194304) {
        misuse("\"%s\" is not a pid", text);
    }
    return static_cast<pid_t>(value);
}

long parse_number(const char* text, long min, long max) {
    char* end = nullptr;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < min || value > max) {
        misuse("\"%s\" is not a number in [%ld, %ld]", text, min, max);
    }
    return value;
}

double now_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A name no other probe run uses: "<prefix>-<pid>-<nanoseconds>".
void unique_name(char* out, size_t size, const char* prefix) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    (void)snprintf(out, size, "%s-%d-%ld%09ld", prefix, getpid(), static_cast<long>(ts.tv_sec),
                   ts.tv_nsec);
}

bool path_exists(const char* path) {
    struct stat st {};
    return lstat(path, &st) == 0;
}

// --- files ------------------------------------------------------------------------------------

[[noreturn]] void read_file(const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        blocked("open \"%s\": %s", path, err_name(errno));
    }
    char buf[4096];
    ssize_t got = read(fd, buf, sizeof buf);
    int err = errno;
    (void)close(fd);
    if (got < 0) {
        blocked("read \"%s\": %s", path, err_name(err));
    }
    escaped("read %zd bytes of \"%s\"", got, path);
}

[[noreturn]] void list_dir(const char* path) {
    DIR* dir = opendir(path);
    if (dir == nullptr) {
        blocked("opendir \"%s\": %s", path, err_name(errno));
    }
    int entries = 0;
    char first[256] = "";
    errno = 0;
    while (dirent* entry = readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): one thread
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
            continue;
        }
        if (entries++ == 0) {
            (void)snprintf(first, sizeof first, "%s", entry->d_name);
        }
    }
    int err = errno;
    closedir(dir);
    if (entries == 0) {
        if (err != 0) {
            blocked("readdir \"%s\": %s", path, err_name(err));
        }
        blocked("\"%s\" is empty here", path);
    }
    escaped("listed %d entries of \"%s\" (first \"%s\")", entries, path, first);
}

// An existing file is opened for writing and closed untouched; a new one is created and removed.
[[noreturn]] void write_file(const char* path) {
    if (path_exists(path)) {
        int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            blocked("open existing \"%s\" for writing: %s", path, err_name(errno));
        }
        (void)close(fd);
        escaped("opened existing \"%s\" for writing (nothing written)", path);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        blocked("create \"%s\": %s", path, err_name(errno));
    }
    (void)close(fd);
    int removed = unlink(path);
    escaped("created \"%s\"%s", path, removed == 0 ? " (removed again)" : " (COULD NOT REMOVE IT)");
}

[[noreturn]] void symlink_escape(const char* target) {
    char name[128];
    unique_name(name, sizeof name, "probe-symlink");
    if (symlink(target, name) != 0) {
        misuse("symlink \"%s\" in the working directory: %s (run it in a writable workspace)", name,
               err_name(errno));
    }
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    int err = errno;
    char buf[4096];
    ssize_t got = -1;
    if (fd >= 0) {
        got = read(fd, buf, sizeof buf);
        err = errno;
        (void)close(fd);
    }
    unlink(name);
    if (fd < 0) {
        blocked("open through symlink to \"%s\": %s", target, err_name(err));
    }
    if (got < 0) {
        blocked("read through symlink to \"%s\": %s", target, err_name(err));
    }
    escaped("read %zd bytes of \"%s\" through a symlink in the workspace", got, target);
}

[[noreturn]] void hardlink_escape(const char* target) {
    char name[128];
    unique_name(name, sizeof name, "probe-hardlink");
    if (link(target, name) != 0) {
        blocked("link \"%s\" into the workspace: %s", target, err_name(errno));
    }
    unlink(name);
    escaped("hard-linked \"%s\" into the workspace (removed again)", target);
}

[[noreturn]] void fill_tmp(const char* dir, long max_mb) {
    char name[128];
    unique_name(name, sizeof name, "probe-fill");
    char path[4096];
    (void)snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        misuse("create \"%s\": %s", path, err_name(errno));
    }
    static char chunk[1 << 20];
    memset(chunk, 'x', sizeof chunk);
    long long written = 0;
    int err = 0;
    while (written < max_mb * (1LL << 20)) {
        ssize_t put = write(fd, chunk, sizeof chunk);
        if (put < 0) {
            err = errno;
            break;
        }
        written += put;
        if (static_cast<size_t>(put) < sizeof chunk) {
            put = write(fd, chunk, 1);  // a short write near the limit: this one reports why
            if (put < 0) {
                err = errno;
                break;
            }
            written += put;
        }
    }
    (void)close(fd);
    if (err != 0) {
        // The file stays: it lives in the sandbox's /tmp and vanishes with it; the test checks
        // that the host's directory never sees the name.
        blocked("%s after %lld bytes (%lld MB) in \"%s\"", err_name(err), written, written >> 20,
                path);
    }
    unlink(path);
    escaped("wrote %lld MB to \"%s\" without running out of space (removed again)", written >> 20,
            path);
}

[[noreturn]] void write_proc(const char* path) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        blocked("open \"%s\" for writing: %s", path, err_name(errno));
    }
    (void)close(fd);
    escaped("opened \"%s\" for writing (nothing written)", path);
}

// --- processes --------------------------------------------------------------------------------

[[noreturn]] void ptrace_pid(pid_t pid) {
    if (ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) != 0) {
        blocked("PTRACE_ATTACH pid %d: %s", pid, err_name(errno));
    }
    int status = 0;
    waitpid(pid, &status, __WALL);
    ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    escaped("attached to pid %d with ptrace (detached again)", pid);
}

// The first readable mapping of `pid`, or a guess when its maps are hidden.
uintptr_t some_address(pid_t pid) {
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE* maps = fopen(path, "re");
    uintptr_t address = 0x400000;
    if (maps != nullptr) {
        char line[512];
        while (fgets(line, sizeof line, maps) != nullptr) {
            unsigned long start = 0;
            char perms[8] = "";
            // NOLINTNEXTLINE(cert-err34-c): a kernel-written line; a bad one is just skipped
            if (sscanf(line, "%lx-%*[0-9a-f] %7s", &start, perms) == 2 && perms[0] == 'r') {
                address = start;
                break;
            }
        }
        (void)fclose(maps);
    }
    return address;
}

[[noreturn]] void process_vm_read(pid_t pid) {
    char buf[16];
    iovec local{buf, sizeof buf};
    iovec remote{reinterpret_cast<void*>(some_address(pid)),  // NOLINT(performance-no-int-to-ptr)
                 sizeof buf};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got >= 0) {
        escaped("process_vm_readv read %zd bytes of pid %d", got, pid);
    }
    int err = errno;
    if (err == EFAULT) {
        escaped("process_vm_readv on pid %d passed the access check (EFAULT on the address)", pid);
    }
    if (err == ESRCH) {
        misuse("no process %d", pid);
    }
    blocked("process_vm_readv pid %d: %s", pid, err_name(err));
}

[[noreturn]] void read_environ(pid_t pid, const char* needle) {
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        blocked("open \"%s\": %s", path, err_name(errno));
    }
    static char buf[1 << 16];
    size_t total = 0;
    ssize_t got = 0;
    while (total < sizeof buf - 1 && (got = read(fd, buf + total, sizeof buf - 1 - total)) > 0) {
        total += static_cast<size_t>(got);
    }
    int err = errno;
    (void)close(fd);
    if (got < 0) {
        blocked("read \"%s\": %s", path, err_name(err));
    }
    if (needle == nullptr) {
        if (total == 0) {
            blocked("\"%s\" is empty", path);
        }
        escaped("read %zu bytes of \"%s\"", total, path);
    }
    for (size_t i = 0; i < total; ++i) {
        if (buf[i] == '\0') {
            buf[i] = '\n';
        }
    }
    buf[total] = '\0';
    if (strstr(buf, needle) != nullptr) {
        escaped("\"%s\" holds \"%s\"", path, needle);
    }
    blocked("\"%s\" (%zu bytes) does not hold \"%s\"", path, total, needle);
}

[[noreturn]] void read_proc_mem(pid_t pid) {
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        blocked("open \"%s\": %s", path, err_name(errno));
    }
    char buf[16];
    ssize_t got = pread(fd, buf, sizeof buf, static_cast<off_t>(some_address(pid)));
    (void)close(fd);
    if (got > 0) {
        escaped("read %zd bytes of pid %d's memory through \"%s\"", got, pid, path);
    }
    escaped("opened \"%s\" (a read at a guessed address failed)", path);
}

[[noreturn]] void open_proc_root(pid_t pid) {
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/root/", pid);
    DIR* dir = opendir(path);
    if (dir == nullptr) {
        blocked("opendir \"%s\": %s", path, err_name(errno));
    }
    int entries = 0;
    while (dirent* entry = readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): one thread
        entries += entry->d_name[0] != '.' ? 1 : 0;
    }
    closedir(dir);
    escaped("listed %d entries through \"%s\"", entries, path);
}

[[noreturn]] void open_proc_exe(pid_t pid) {
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/exe", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)close(fd);
        escaped("opened \"%s\" (the executable of pid %d) for reading", path, pid);
    }
    int read_err = errno;
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)close(fd);
        escaped("opened \"%s\" (the executable of pid %d) for WRITING", path, pid);
    }
    blocked("open \"%s\": %s for reading, %s for writing", path, err_name(read_err),
            err_name(errno));
}

// kill(pid, 0): the permission check of a signal without the signal.
[[noreturn]] void signal_pid(pid_t pid) {
    if (kill(pid, 0) != 0) {
        blocked("kill(%d, 0): %s", pid, err_name(errno));
    }
    escaped("may send signals to pid %d", pid);
}

// Forks children that wait to be killed, for up to `seconds` or `max` processes.
[[noreturn]] void fork_bomb(long seconds, long max) {
    pid_t parent = getpid();
    static pid_t children[100000];
    long count = 0;
    int err = 0;
    double deadline = now_seconds() + static_cast<double>(seconds);
    while (count < max && now_seconds() < deadline) {
        pid_t pid = fork();
        if (pid == 0) {
            (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(0);
            }
            for (;;) {
                pause();
            }
        }
        if (pid < 0) {
            err = errno;
            break;
        }
        children[count++] = pid;
    }
    for (long i = 0; i < count; ++i) {
        kill(children[i], SIGKILL);
    }
    for (long i = 0; i < count; ++i) {
        waitpid(children[i], nullptr, 0);
    }
    if (err != 0) {
        blocked("fork failed with %s after %ld processes", err_name(err), count);
    }
    escaped("%ld processes in %ld s and fork never failed", count, seconds);
}

[[noreturn]] void mem_bomb(long megabytes) {
    long touched = 0;
    for (; touched < megabytes; ++touched) {
        void* chunk =
            mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (chunk == MAP_FAILED) {
            blocked("mmap failed with %s after %ld MB", err_name(errno), touched);
        }
        memset(chunk, 0x5a, 1 << 20);
    }
    escaped("allocated and touched %ld MB", touched);
}

// --- kernel interfaces ------------------------------------------------------------------------

// For calls whose arguments make them fail right after the permission check: EPERM (or ENOSYS,
// EACCES) means the call was refused, anything else means it got past.
bool refused(int err) {
    return err == EPERM || err == ENOSYS || err == EACCES;
}

[[noreturn]] void mount_tmpfs() {
    char dir[] = "/tmp/probe-mnt-XXXXXX";
    const char* target = mkdtemp(dir) != nullptr ? dir : ".";
    if (mount("probe", target, "tmpfs", 0, "size=1m") == 0) {
        umount2(target, MNT_DETACH);
        if (target == dir) {
            rmdir(dir);
        }
        escaped("mounted a tmpfs on \"%s\" (unmounted again)", target);
    }
    int mount_err = errno;
    if (target == dir) {
        rmdir(dir);
    }
    long fs = syscall(SYS_fsopen, "tmpfs", 0);
    if (fs >= 0) {
        (void)close(static_cast<int>(fs));
        escaped("fsopen(\"tmpfs\") succeeded");
    }
    int fsopen_err = errno;
    long tree = syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */);
    if (tree >= 0) {
        (void)close(static_cast<int>(tree));
        escaped("open_tree(\"/\", OPEN_TREE_CLONE) succeeded");
    }
    blocked("mount: %s, fsopen: %s, open_tree: %s", err_name(mount_err), err_name(fsopen_err),
            err_name(errno));
}

[[noreturn]] void pivot_root() {
    if (syscall(SYS_pivot_root, "/probe-nonexistent", "/probe-nonexistent") == 0) {
        escaped("pivot_root succeeded");
    }
    int pivot_err = errno;
    if (!refused(pivot_err)) {
        escaped("pivot_root got past the permission check (%s)", err_name(pivot_err));
    }
    blocked("pivot_root: %s", err_name(pivot_err));
}

[[noreturn]] void do_chroot() {
    if (chroot("/") == 0) {
        escaped("chroot(\"/\") succeeded");
    }
    blocked("chroot: %s", err_name(errno));
}

[[noreturn]] void unshare_user() {
    if (unshare(CLONE_NEWUSER) == 0) {
        escaped("unshare(CLONE_NEWUSER) succeeded");
    }
    int user_err = errno;
    if (unshare(CLONE_NEWNS) == 0) {
        escaped("unshare(CLONE_NEWNS) succeeded");
    }
    blocked("unshare(CLONE_NEWUSER): %s, unshare(CLONE_NEWNS): %s", err_name(user_err),
            err_name(errno));
}

[[noreturn]] void clone_newuser() {
    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
    if (pid == 0) {
        _exit(0);
    }
    if (pid > 0) {
        waitpid(static_cast<pid_t>(pid), nullptr, 0);
        escaped("clone(CLONE_NEWUSER) made a child in a new user namespace");
    }
    blocked("clone(CLONE_NEWUSER): %s", err_name(errno));
}

struct CloneArgs {  // struct clone_args, version 0 (CLONE_ARGS_SIZE_VER0 = 64)
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

[[noreturn]] void clone3() {
    CloneArgs args{};
    args.flags = CLONE_NEWUSER;
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        _exit(0);
    }
    if (pid > 0) {
        waitpid(static_cast<pid_t>(pid), nullptr, 0);
        escaped("clone3(CLONE_NEWUSER) made a child in a new user namespace");
    }
    blocked("clone3(CLONE_NEWUSER): %s", err_name(errno));
}

[[noreturn]] void keyctl() {
    long id = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
    if (id >= 0) {
        escaped("keyctl(KEYCTL_GET_KEYRING_ID) returned keyring %ld", id);
    }
    int keyctl_err = errno;
    long key = syscall(SYS_add_key, "user", "stockade-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
    if (key >= 0) {
        escaped("add_key made key %ld", key);
    }
    blocked("keyctl: %s, add_key: %s", err_name(keyctl_err), err_name(errno));
}

[[noreturn]] void bpf() {
    union bpf_attr attr {};
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
    if (fd >= 0) {
        (void)close(static_cast<int>(fd));
        escaped("bpf(BPF_MAP_CREATE) made a map");
    }
    blocked("bpf(BPF_MAP_CREATE): %s", err_name(errno));
}

[[noreturn]] void perf_event_open() {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd >= 0) {
        (void)close(static_cast<int>(fd));
        escaped("perf_event_open made a software counter on itself");
    }
    blocked("perf_event_open: %s", err_name(errno));
}

[[noreturn]] void io_uring_setup() {
    io_uring_params params{};
    long fd = syscall(SYS_io_uring_setup, 1, &params);
    if (fd >= 0) {
        (void)close(static_cast<int>(fd));
        escaped("io_uring_setup made a ring");
    }
    blocked("io_uring_setup: %s", err_name(errno));
}

[[noreturn]] void userfaultfd() {
    long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (fd >= 0) {
        (void)close(static_cast<int>(fd));
        escaped("userfaultfd(UFFD_USER_MODE_ONLY) made a descriptor");
    }
    int syscall_err = errno;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev >= 0) {
        (void)close(dev);
        escaped("opened /dev/userfaultfd");
    }
    blocked("userfaultfd: %s, /dev/userfaultfd: %s", err_name(syscall_err), err_name(errno));
}

[[noreturn]] void init_module() {
    errno = 0;
    long r = syscall(SYS_init_module, nullptr, 0, "");
    int init_err = errno;
    if (r == 0 || !refused(init_err)) {
        escaped("init_module got past the permission check (%s)", err_name(init_err));
    }
    r = syscall(SYS_finit_module, -1, "", 0);
    int finit_err = errno;
    if (r == 0 || !refused(finit_err)) {
        escaped("finit_module got past the permission check (%s)", err_name(finit_err));
    }
    r = syscall(SYS_delete_module, "stockade_probe_nonexistent", O_NONBLOCK);
    int delete_err = errno;
    if (r == 0 || !refused(delete_err)) {
        escaped("delete_module got past the permission check (%s)", err_name(delete_err));
    }
    blocked("init_module: %s, finit_module: %s, delete_module: %s", err_name(init_err),
            err_name(finit_err), err_name(delete_err));
}

// TIOCSTI as is and with bits set above the 32 the kernel reads (CVE-2019-10063): returns 0 if
// either injected a byte, else the errno of the plain request; `detail` says both.
int try_tiocsti(int fd, char* detail, size_t size) {
    char byte = '\0';  // injects a NUL, the least harmful byte, should it ever work
    unsigned long plain = TIOCSTI;
    unsigned long high = plain | (1UL << 32);
    int plain_err = syscall(SYS_ioctl, fd, plain, &byte) == 0 ? 0 : errno;
    int high_err = syscall(SYS_ioctl, fd, high, &byte) == 0 ? 0 : errno;
    (void)snprintf(detail, size, "TIOCSTI: %s, TIOCSTI|1<<32: %s",
                   plain_err == 0 ? "injected" : err_name(plain_err),
                   high_err == 0 ? "injected" : err_name(high_err));
    return plain_err == 0 || high_err == 0 ? 0 : (plain_err != 0 ? plain_err : high_err);
}

[[noreturn]] void tiocsti() {
    char detail[256];
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty < 0 && isatty(0) == 1) {
        tty = dup(0);
    }
    if (tty >= 0) {
        int err = try_tiocsti(tty, detail, sizeof detail);
        (void)close(tty);
        if (err == 0) {
            escaped("controlling terminal: %s", detail);
        }
        blocked("controlling terminal: %s", detail);
    }
    // No terminal: a child in a new session makes a fresh pty its controlling terminal, since
    // TIOCSTI is only allowed there.
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        misuse("pipe: %s", err_name(errno));
    }
    pid_t child = fork();
    if (child == 0) {
        (void)close(pipefd[0]);
        char msg[300];
        int code = 2;
        int master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || setsid() < 0) {
            (void)snprintf(msg, sizeof msg, "cannot make a pty session: %s", err_name(errno));
        } else {
            char name[128];
            int slave = ptsname_r(master, name, sizeof name) == 0
                            ? open(name, O_RDWR)  // no O_NOCTTY: becomes the ctty
                            : -1;
            if (slave < 0) {
                (void)snprintf(msg, sizeof msg, "open pty slave: %s", err_name(errno));
            } else {
                code = try_tiocsti(slave, detail, sizeof detail) == 0 ? 1 : 0;
                (void)snprintf(msg, sizeof msg, "new pty: %s", detail);
            }
        }
        if (write(pipefd[1], msg, strlen(msg)) < 0) {
            code = 2;
        }
        _exit(code);
    }
    (void)close(pipefd[1]);
    char msg[301] = "";
    ssize_t got = read(pipefd[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = '\0';
    int status = 0;
    waitpid(child, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    if (code == 1) {
        escaped("%s", msg);
    }
    if (code == 0) {
        blocked("%s", msg);
    }
    misuse("%s", msg);
}

// Syscalls the baseline filter denies (DESIGN §4) whose arguments here are harmless: read-only
// queries, invalid ids, or calls the kernel itself refuses without capabilities. ESCAPED means
// the call reached the kernel's own checks (success, or an errno other than EPERM/EACCES/ENOSYS),
// i.e. the filter let it through.
int call_denied(const char* name, bool* known) {
    *known = true;
    errno = 0;
    long r = -1;
    if (strcmp(name, "adjtimex") == 0) {
        struct timex tx {};  // modes 0: read the clock state
        r = syscall(SYS_adjtimex, &tx);
    } else if (strcmp(name, "clock_adjtime") == 0) {
        struct timex tx {};
        r = syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx);
    } else if (strcmp(name, "settimeofday") == 0) {
        r = syscall(SYS_settimeofday, nullptr, nullptr);
    } else if (strcmp(name, "clock_settime") == 0) {
        timespec ts{};
        r = syscall(SYS_clock_settime, -1, &ts);  // no such clock
    } else if (strcmp(name, "syslog") == 0) {
        r = syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
    } else if (strcmp(name, "name_to_handle_at") == 0) {
        struct {
            unsigned int handle_bytes;
            int handle_type;
        } handle{0, 0};
        int mount_id = 0;
        r = syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &handle, &mount_id, 0);
    } else if (strcmp(name, "open_by_handle_at") == 0) {
        struct {
            unsigned int handle_bytes;
            int handle_type;
            unsigned char data[8];
        } handle{8, 1, {}};
        r = syscall(SYS_open_by_handle_at, -1, &handle, O_RDONLY);
    } else if (strcmp(name, "personality") == 0) {
        r = syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */);
        if (r >= 0) {
            syscall(SYS_personality, 0);
        }
    } else if (strcmp(name, "iopl") == 0) {
        r = syscall(SYS_iopl, 0);  // level 0: allowed to anyone the filter lets through
    } else if (strcmp(name, "ioperm") == 0) {
        r = syscall(SYS_ioperm, 0x80, 1, 0);  // turning access off needs no privilege
    } else if (strcmp(name, "acct") == 0) {
        r = syscall(SYS_acct, nullptr);
    } else if (strcmp(name, "quotactl") == 0) {
        r = syscall(SYS_quotactl, (0x800004 << 8) | 0 /* QCMD(Q_GETFMT, USRQUOTA) */,
                    "/probe-nonexistent", 0, nullptr);
    } else if (strcmp(name, "swapoff") == 0) {
        r = syscall(SYS_swapoff, "/probe-nonexistent");
    } else if (strcmp(name, "kexec_load") == 0) {
        r = syscall(SYS_kexec_load, 0, 0, nullptr, 0);
    } else if (strcmp(name, "reboot") == 0) {
        r = syscall(SYS_reboot, 0, 0, 0, nullptr);  // wrong magic numbers
    } else if (strcmp(name, "setns") == 0) {
        int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        r = syscall(SYS_setns, fd, 0);  // our own namespace: EINVAL/EPERM past the filter
        int err = errno;
        if (fd >= 0) {
            (void)close(fd);
        }
        errno = err;
    } else if (strcmp(name, "process_vm_writev") == 0) {
        char byte = 0;
        iovec local{&byte, 1};
        iovec remote{nullptr, 1};
        r = syscall(SYS_process_vm_writev, getpid(), &local, 1, &remote, 1, 0);
    } else if (strcmp(name, "tioclinux") == 0) {
        int pty = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        char subcode = 7;  // TIOCL_GETSHIFTSTATE: a query
        r = syscall(SYS_ioctl, pty, TIOCLINUX, &subcode);
        int err = errno;
        if (pty >= 0) {
            (void)close(pty);
        }
        errno = err;
    } else {
        *known = false;
        return 0;
    }
    return r >= 0 ? 0 : errno;
}

constexpr const char* kDeniedSyscalls[] = {"adjtimex",
                                           "clock_adjtime",
                                           "settimeofday",
                                           "clock_settime",
                                           "syslog",
                                           "name_to_handle_at",
                                           "open_by_handle_at",
                                           "personality",
                                           "iopl",
                                           "ioperm",
                                           "acct",
                                           "quotactl",
                                           "swapoff",
                                           "kexec_load",
                                           "reboot",
                                           "setns",
                                           "process_vm_writev",
                                           "tioclinux"};

[[noreturn]] void denied_syscall(const char* name) {
    if (strcmp(name, "list") == 0) {
        for (const char* each : kDeniedSyscalls) {
            printf("%s\n", each);
        }
        (void)fflush(stdout);
        _exit(0);
    }
    bool known = false;
    int err = call_denied(name, &known);
    if (!known) {
        misuse("unknown syscall \"%s\" (see `syscall list`)", name);
    }
    if (err == 0) {
        escaped("%s succeeded", name);
    }
    if (!refused(err)) {
        escaped("%s got past the filter (%s)", name, err_name(err));
    }
    blocked("%s: %s", name, err_name(err));
}

// The same calls through the other x86 ABIs a 64-bit process can reach: int $0x80 (i386) and
// the x32 bit. A filter that checks only x86-64 numbers would let these through. Each attempt
// runs in a child, since the filter may kill on a foreign architecture (SIGSYS).
#if defined(__x86_64__)
long int80(long nr, long a, long b, long c) {
    long ret = 0;
    asm volatile("int $0x80"
                 : "=a"(ret)
                 : "a"(nr), "b"(a), "c"(b), "d"(c)
                 : "memory", "r8", "r9", "r10", "r11");
    return ret;
}

// Runs `attempt` in a child: "blocked: <errno>", "killed by signal N" or "SUCCEEDED".
bool compat_attempt(const char* label, long (*attempt)(), char* out, size_t size) {
    pid_t child = fork();
    if (child == 0) {
        long r = attempt();
        if (r >= 0) {
            _exit(100);
        }
        _exit(static_cast<int>(-r) & 0x7f);  // -errno, as the raw syscall returns it
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
        (void)snprintf(out, size, "%s: killed by signal %d", label, WTERMSIG(status));
        return false;
    }
    int code = WEXITSTATUS(status);
    if (code == 100) {
        (void)snprintf(out, size, "%s: SUCCEEDED", label);
        return true;
    }
    (void)snprintf(out, size, "%s: %s", label, err_name(code));
    return !refused(code);
}

long raw_syscall(long nr, long a, long b, long c) {
    long ret = 0;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "memory", "rcx", "r11");
    return ret;
}

[[noreturn]] void compat_syscalls() {
    struct Attempt {
        const char* label;
        long (*run)();
    };
    const Attempt attempts[] = {
        {"i386 unshare(CLONE_NEWUSER)",
         [] {
             return int80(310, CLONE_NEWUSER, 0, 0);
         }},
        {"i386 keyctl",
         [] {
             return int80(288, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
         }},
        {"i386 ptrace(PTRACE_ATTACH, 1)",
         [] {
             return int80(26, PTRACE_ATTACH, 1, 0);
         }},
        {"x32 unshare(CLONE_NEWUSER)",
         [] {
             return raw_syscall(0x40000000L | 272, CLONE_NEWUSER, 0, 0);
         }},
        {"x32 keyctl",
         [] {
             return raw_syscall(0x40000000L | 250, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING,
                                1);
         }},
    };
    char detail[1024] = "";
    size_t used = 0;
    bool any = false;
    for (const Attempt& a : attempts) {
        char one[160];
        any = compat_attempt(a.label, a.run, one, sizeof one) || any;
        used += static_cast<size_t>(
            snprintf(detail + used, sizeof detail - used, "%s%s", used == 0 ? "" : ", ", one));
        if (used >= sizeof detail) {
            used = sizeof detail - 1;
        }
    }
    if (any) {
        escaped("%s", detail);
    }
    blocked("%s", detail);
}
#else
[[noreturn]] void compat_syscalls() {
    blocked("no compat ABIs on this architecture");
}
#endif

// --- network ----------------------------------------------------------------------------------

[[noreturn]] void connect_tcp(const char* host, const char* port_text) {
    long port = parse_number(port_text, 1, 65535);
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family = strchr(host, ':') != nullptr ? AF_INET6 : AF_INET;
    if (family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&addr);
        in->sin_family = AF_INET;
        in->sin_port = htons(static_cast<uint16_t>(port));
        if (inet_pton(AF_INET, host, &in->sin_addr) != 1) {
            misuse("\"%s\" is not an address", host);
        }
        len = sizeof *in;
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(static_cast<uint16_t>(port));
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1) {
            misuse("\"%s\" is not an address", host);
        }
        len = sizeof *in6;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        blocked("socket: %s", err_name(errno));
    }
    int err = 0;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            if (poll(&p, 1, 3000) <= 0) {
                err = ETIMEDOUT;
            } else {
                socklen_t errlen = sizeof err;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen);
            }
        }
    }
    (void)close(fd);
    if (err != 0) {
        blocked("connect %s:%ld: %s", host, port, err_name(err));
    }
    escaped("connected to %s:%ld", host, port);
}

[[noreturn]] void connect_abstract(const char* name) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof addr.sun_path - 1) {
        misuse("bad abstract socket name");
    }
    memcpy(addr.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        blocked("socket(AF_UNIX): %s", err_name(errno));
    }
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        int err = errno;
        (void)close(fd);
        blocked("connect @%s: %s", name, err_name(err));
    }
    (void)close(fd);
    escaped("connected to the abstract socket @%s", name);
}

[[noreturn]] void socket_family(int family) {
    int types[] = {SOCK_RAW, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_STREAM};
    int first_err = 0;
    for (int type : types) {
        int fd = socket(family, type | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            (void)close(fd);
            escaped("socket(family %d, type %d) succeeded", family, type);
        }
        if (first_err == 0) {
            first_err = errno;
        }
    }
    blocked("socket(family %d): %s", family, err_name(first_err));
}

// Informational: every interface of this network namespace and whether it is up. Names come
// from /proc/net/dev (if_nameindex needs netlink, which --network none rightly denies).
[[noreturn]] void ifaces() {
    FILE* dev = fopen("/proc/net/dev", "re");
    if (dev == nullptr) {
        printf("open /proc/net/dev: %s\n", err_name(errno));
        (void)fflush(stdout);
        _exit(0);
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char line[512];
    while (fgets(line, sizeof line, dev) != nullptr) {
        char* colon = strchr(line, ':');
        if (colon == nullptr) {
            continue;  // the two header lines
        }
        *colon = '\0';
        char* name = line;
        while (*name == ' ') {
            ++name;
        }
        ifreq req{};
        size_t n = strnlen(name, sizeof req.ifr_name - 1);
        memcpy(req.ifr_name, name, n);
        bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP) != 0;
        printf("%s %s\n", name, up ? "up" : "down");
    }
    (void)fclose(dev);
    if (fd >= 0) {
        (void)close(fd);
    }
    (void)fflush(stdout);
    _exit(0);
}

[[noreturn]] void usage() {
    printf(
        "usage: stockade-probe SUBCOMMAND [ARGS...]\n"
        "  read-file PATH | list-dir PATH | write-file PATH\n"
        "  symlink-escape TARGET | hardlink-escape TARGET | fill-tmp [DIR [MAX_MB]]\n"
        "  write-core-pattern | write-proc-sys PATH\n"
        "  ptrace-parent | ptrace-pid PID | process-vm-read PID | read-environ PID [NEEDLE]\n"
        "  read-proc-mem PID | open-proc-root PID | open-proc-exe PID | signal-pid PID\n"
        "      (PID: a number, self or parent)\n"
        "  fork-bomb SECONDS [MAX] | mem-bomb MB\n"
        "  mount-tmpfs | pivot-root | chroot | unshare-user | clone-newuser | clone3\n"
        "  keyctl | bpf | perf-event-open | io-uring-setup | userfaultfd | init-module | tiocsti\n"
        "  syscall NAME|list (other calls the baseline filter denies) | compat-syscalls (i386, "
        "x32)\n"
        "  connect-tcp HOST PORT | connect-abstract NAME | socket-netlink | socket-family N\n"
        "  ifaces\n"
        "exit: 0 blocked, 1 escaped, 2 misuse\n");
    _exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage();
    }
    const char* cmd = argv[1];
    g_what = cmd;
    int nargs = argc - 2;
    char** a = argv + 2;
    auto need = [&](int n) {
        if (nargs < n) {
            misuse("needs %d argument(s)", n);
        }
    };
    auto is = [&](const char* name) {
        return strcmp(cmd, name) == 0;
    };

    if (is("read-file")) {
        need(1);
        read_file(a[0]);
    }
    if (is("list-dir")) {
        need(1);
        list_dir(a[0]);
    }
    if (is("write-file")) {
        need(1);
        write_file(a[0]);
    }
    if (is("symlink-escape")) {
        need(1);
        symlink_escape(a[0]);
    }
    if (is("hardlink-escape")) {
        need(1);
        hardlink_escape(a[0]);
    }
    if (is("fill-tmp")) {
        fill_tmp(nargs >= 1 ? a[0] : "/tmp", nargs >= 2 ? parse_number(a[1], 1, 1 << 20) : 1024);
    }
    if (is("write-core-pattern")) {
        write_proc("/proc/sys/kernel/core_pattern");
    }
    if (is("write-proc-sys")) {
        need(1);
        write_proc(a[0]);
    }
    if (is("ptrace-parent")) {
        ptrace_pid(getppid());
    }
    if (is("ptrace-pid")) {
        need(1);
        ptrace_pid(parse_pid(a[0]));
    }
    if (is("process-vm-read")) {
        need(1);
        process_vm_read(parse_pid(a[0]));
    }
    if (is("read-environ")) {
        need(1);
        read_environ(parse_pid(a[0]), nargs >= 2 ? a[1] : nullptr);
    }
    if (is("read-proc-mem")) {
        need(1);
        read_proc_mem(parse_pid(a[0]));
    }
    if (is("open-proc-root")) {
        need(1);
        open_proc_root(parse_pid(a[0]));
    }
    if (is("open-proc-exe")) {
        need(1);
        open_proc_exe(parse_pid(a[0]));
    }
    if (is("signal-pid")) {
        need(1);
        signal_pid(parse_pid(a[0]));
    }
    if (is("fork-bomb")) {
        need(1);
        fork_bomb(parse_number(a[0], 1, 600), nargs >= 2 ? parse_number(a[1], 1, 100000) : 1000);
    }
    if (is("mem-bomb")) {
        need(1);
        mem_bomb(parse_number(a[0], 1, 1 << 20));
    }
    if (is("mount-tmpfs")) {
        mount_tmpfs();
    }
    if (is("pivot-root")) {
        pivot_root();
    }
    if (is("chroot")) {
        do_chroot();
    }
    if (is("unshare-user")) {
        unshare_user();
    }
    if (is("clone-newuser")) {
        clone_newuser();
    }
    if (is("clone3")) {
        clone3();
    }
    if (is("keyctl")) {
        keyctl();
    }
    if (is("bpf")) {
        bpf();
    }
    if (is("perf-event-open")) {
        perf_event_open();
    }
    if (is("io-uring-setup")) {
        io_uring_setup();
    }
    if (is("userfaultfd")) {
        userfaultfd();
    }
    if (is("init-module")) {
        init_module();
    }
    if (is("tiocsti")) {
        tiocsti();
    }
    if (is("syscall")) {
        need(1);
        denied_syscall(a[0]);
    }
    if (is("compat-syscalls")) {
        compat_syscalls();
    }
    if (is("connect-tcp")) {
        need(2);
        connect_tcp(a[0], a[1]);
    }
    if (is("connect-abstract")) {
        need(1);
        connect_abstract(a[0]);
    }
    if (is("socket-netlink")) {
        socket_family(AF_NETLINK);
    }
    if (is("socket-family")) {
        need(1);
        socket_family(static_cast<int>(parse_number(a[0], 0, 1024)));
    }
    if (is("ifaces")) {
        ifaces();
    }
    usage();
}
