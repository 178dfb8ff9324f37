// The seccomp baseline (DESIGN.md §4). The program is two parts, concatenated:
//
//  1. A short hand-assembled prologue: the architecture check, the x32 check, and the argument
//     allow-lists (personality, socket families). An allow-list under a default-allow filter
//     ("deny unless the argument is one of these values") is what libseccomp cannot express: it
//     rejects a rule whose action is the default action (EACCES) and a rule that compares the
//     same argument twice (EINVAL), so "not one of" would take dozens of masked rules.
//  2. The libseccomp program: the deny list, clone3, clone's namespace flags, the ioctls and
//     the fcntls.
//
// Classic BPF jumps are relative and forward only, so the libseccomp program runs unchanged
// after the prologue; each prologue path either returns or falls through to it.
#include "sandbox/seccomp.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"

namespace stockade::sandbox {
namespace {

// Denied with EPERM whatever their arguments. Names libseccomp cannot resolve on the native
// architecture are skipped.
constexpr std::array kDeniedSyscalls = {
    // Inspecting or stealing from other processes.
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    // The mount family.
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "move_mount",
    "open_tree", "fspick", "mount_setattr",
    // Namespaces (clone is filtered on its flags below, clone3 gets ENOSYS).
    "unshare", "setns",
    // Kernel keyrings.
    "keyctl", "add_key", "request_key",
    // Large kernel attack surface.
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register",
    // Kernel modules and kexec.
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    // File handles bypass the mount view.
    "open_by_handle_at", "name_to_handle_at",
    // Host administration.
    "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "settimeofday", "clock_settime",
    "adjtimex", "clock_adjtime", "swapon", "swapoff", "reboot", "vhangup",
    // Obsolete.
    "lookup_dcookie", "nfsservctl", "uselib", "create_module", "get_kernel_syms", "query_module",
    "_sysctl"};

// Any of these in clone(2)'s flags (argument 0 on x86_64) makes it fail with EPERM. In clone(2),
// CLONE_NEWTIME (0x80) overlaps the exit-signal byte, whose valid values never set that bit.
constexpr std::array<uint64_t, 8> kNamespaceCloneFlags = {
    CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};

// ioctl requests denied on every descriptor: both can inject input into a terminal.
constexpr std::array<uint64_t, 2> kDeniedIoctls = {TIOCSTI, TIOCLINUX};

// fcntl commands denied: a lease makes every other open of the file — the session worker's,
// an execve of it, another session's on a shared workspace — wait up to lease-break-time
// (45 s), which froze the single-threaded worker. No agent's command needs one.
constexpr std::array<uint64_t, 1> kDeniedFcntls = {F_SETLEASE};

// personality(2) values allowed (Docker's list): the default, the 32-bit and uname-2.6 variants
// and the query. Anything else (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC...) fails with EPERM.
constexpr uint32_t kPersonalityQuery = 0xffffffff;
constexpr std::array<uint32_t, 5> kAllowedPersonalities = {
    PER_LINUX, PER_LINUX32, UNAME26,
    static_cast<uint32_t>(PER_LINUX32) | static_cast<uint32_t>(UNAME26), kPersonalityQuery};

constexpr std::array<uint32_t, 3> kAllowedSocketFamilies = {AF_UNIX, AF_INET, AF_INET6};

// Syscalls that take a file mode, and which argument holds it.
struct SetidModeArg {
    const char* name;
    unsigned int mode_arg;
    int fallback_nr;  // for names libseccomp 2.5 does not know yet
};
constexpr std::array<SetidModeArg, 11> kSetidModeArgs = {{
    {"chmod", 1, -1},
    {"fchmod", 1, -1},
    {"fchmodat", 2, -1},
#ifdef __x86_64__
    {"fchmodat2", 2, 452},
#else
    {"fchmodat2", 2, -1},
#endif
    {"open", 2, -1},
    {"openat", 3, -1},
    {"creat", 1, -1},
    {"mkdir", 1, -1},
    {"mkdirat", 2, -1},
    {"mknod", 1, -1},
    {"mknodat", 2, -1},
}};

// ---- The hand-assembled prologue --------------------------------------------------------

constexpr auto kLdAbs = static_cast<uint16_t>(BPF_LD | BPF_W | BPF_ABS);
constexpr auto kJeq = static_cast<uint16_t>(BPF_JMP | BPF_JEQ | BPF_K);
constexpr auto kJge = static_cast<uint16_t>(BPF_JMP | BPF_JGE | BPF_K);
constexpr auto kJa = static_cast<uint16_t>(BPF_JMP | BPF_JA);
constexpr auto kRet = static_cast<uint16_t>(BPF_RET | BPF_K);

constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
// The low 32 bits of argument i: the kernel reads these arguments as 32-bit values, so the
// high bits must not decide anything.
constexpr uint32_t arg_low_offset(unsigned i) {
    return static_cast<uint32_t>(offsetof(seccomp_data, args) + i * sizeof(uint64_t) +
                                 (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4));
}

#ifdef __x86_64__
constexpr uint32_t kX32SyscallBit = 0x40000000;  // __X32_SYSCALL_BIT
#endif

// The syscall of `nr` fails with `err` unless its argument `arg` (low 32 bits) is one of
// `allowed`.
struct ArgAllowlist {
    int nr;
    unsigned arg;
    std::span<const uint32_t> allowed;
    uint16_t err;
};

class PrologueBuilder {
public:
    [[nodiscard]] size_t here() const { return insns_.size(); }
    void stmt(uint16_t code, uint32_t k) { insns_.push_back(sock_filter{code, 0, 0, k}); }
    // A conditional jump whose targets are absolute instruction indexes, resolved later
    // (targets may lie past the end of the prologue, in the libseccomp program).
    void jump(uint16_t code, uint32_t k, size_t jt, size_t jf) {
        fixups_.push_back({insns_.size(), jt, jf});
        insns_.push_back(sock_filter{code, 0, 0, k});
    }
    Result<std::vector<sock_filter>> finish() && {
        for (const Fixup& f : fixups_) {
            if (f.jt <= f.at || f.jf <= f.at || f.jt - f.at - 1 > UINT8_MAX ||
                f.jf - f.at - 1 > UINT8_MAX) {
                return Error{
                    Errc::kInternal,
                    fmt::format("assemble seccomp prologue: jump from {} to {}/{} out of range",
                                f.at, f.jt, f.jf)};
            }
            insns_[f.at].jt = static_cast<uint8_t>(f.jt - f.at - 1);
            insns_[f.at].jf = static_cast<uint8_t>(f.jf - f.at - 1);
        }
        return std::move(insns_);
    }

private:
    struct Fixup {
        size_t at;
        size_t jt;
        size_t jf;
    };
    std::vector<sock_filter> insns_;
    std::vector<Fixup> fixups_;
};

// Layout (A is BPF's accumulator):
//   ld arch; jeq native ? next : kill
//   ld nr;   [x86_64] jge x32 bit ? next : lists;  jeq -1 ? lists : kill
//   per list: jeq nr ? next : next list; ld arg; jeq v ? pass : next (per value); ret errno
//   ja pass
//   kill: ret KILL_PROCESS
//   pass: the libseccomp program (which reloads what it needs)
// Invariant: A holds nr at the start of each list.
Result<std::vector<sock_filter>> assemble_prologue(uint32_t arch,
                                                   std::span<const ArgAllowlist> lists) {
    size_t lists_size = 0;
    for (const ArgAllowlist& list : lists) {
        lists_size += 3 + list.allowed.size();
    }
#ifdef __x86_64__
    const size_t header_size = 5;
#else
    const size_t header_size = 3;
#endif
    const size_t kill = header_size + lists_size + 1;
    const size_t pass = kill + 1;

    PrologueBuilder b;
    b.stmt(kLdAbs, kArchOffset);
    b.jump(kJeq, arch, b.here() + 1, kill);
    b.stmt(kLdAbs, kNrOffset);
#ifdef __x86_64__
    // x32 syscalls share the x86_64 audit arch; only the nr tells them apart. nr -1 is let
    // through, as libseccomp does: a tracer uses it to skip a syscall.
    b.jump(kJge, kX32SyscallBit, b.here() + 1, header_size);
    b.jump(kJeq, UINT32_MAX, header_size, kill);
#endif
    for (const ArgAllowlist& list : lists) {
        const size_t next_list = b.here() + 3 + list.allowed.size();
        b.jump(kJeq, static_cast<uint32_t>(list.nr), b.here() + 1, next_list);
        b.stmt(kLdAbs, arg_low_offset(list.arg));
        for (uint32_t value : list.allowed) {
            b.jump(kJeq, value, pass, b.here() + 1);
        }
        b.stmt(kRet, SECCOMP_RET_ERRNO | (static_cast<uint32_t>(list.err) & SECCOMP_RET_DATA));
    }
    b.stmt(kJa, 1);  // over kill, to pass
    b.stmt(kRet, SECCOMP_RET_KILL_PROCESS);
    if (b.here() != pass) {
        return Error{Errc::kInternal, "assemble seccomp prologue: layout mismatch"};
    }
    return std::move(b).finish();
}

// ---- The libseccomp part ----------------------------------------------------------------

struct ScmpRelease {
    void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using ScmpCtx = std::unique_ptr<void, ScmpRelease>;

// libseccomp returns -errno.
Status check_scmp(int rc, std::string_view what) {
    if (rc < 0) {
        return errno_error(what, -rc);
    }
    return ok_status();
}

Status add_rule(const ScmpCtx& ctx, uint32_t action, const char* name, int nr,
                std::span<const scmp_arg_cmp> cmps = {}) {
    return check_scmp(seccomp_rule_add_array(ctx.get(), action, nr,
                                             static_cast<unsigned>(cmps.size()), cmps.data()),
                      fmt::format("add seccomp rule for \"{}\"", name));
}

// The native number of `name`, or -1 when this architecture does not have it (libseccomp gives
// __NR_SCMP_ERROR for unknown names and negative pseudo-numbers for multiplexed ones).
int resolve(const char* name) {
    int nr = seccomp_syscall_resolve_name(name);
    return nr < 0 ? -1 : nr;
}

Result<std::vector<sock_filter>> export_bpf(const ScmpCtx& ctx) {
    UniqueFd memfd(::memfd_create("stockade-seccomp", MFD_CLOEXEC));
    if (!memfd) {
        return errno_error("memfd_create", errno);
    }
    RETURN_IF_ERROR(check_scmp(seccomp_export_bpf(ctx.get(), memfd.get()), "export seccomp bpf"));
    if (::lseek(memfd.get(), 0, SEEK_SET) < 0) {
        return errno_error("lseek seccomp memfd", errno);
    }
    auto bytes = read_all(memfd.get(), BPF_MAXINSNS * sizeof(sock_filter) + 1);
    if (!bytes) {
        return std::move(bytes).error().wrap("read exported seccomp bpf");
    }
    if (bytes->empty() || bytes->size() % sizeof(sock_filter) != 0) {
        return Error{Errc::kInternal,
                     fmt::format("export seccomp bpf: {} bytes is not a program", bytes->size())};
    }
    std::vector<sock_filter> program(bytes->size() / sizeof(sock_filter));
    std::memcpy(program.data(), bytes->data(), bytes->size());
    return program;
}

Result<std::vector<sock_filter>> build_libseccomp_part() {
    ScmpCtx ctx(seccomp_init(SCMP_ACT_ALLOW));
    if (!ctx) {
        return Error{Errc::kInternal, "seccomp_init: failed"};
    }
    // seccomp_init adds the native architecture only; every other one (x32 included, which
    // libseccomp also sends to this action) is killed.
    RETURN_IF_ERROR(
        check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS),
                   "set seccomp bad-arch action"));

    for (const char* name : kDeniedSyscalls) {
        int nr = resolve(name);
        if (nr >= 0) {
            RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name, nr));
        }
    }
    if (int nr = resolve("clone3"); nr >= 0) {
        // clone3 passes its flags in memory, out of the filter's reach: fail it as if the
        // kernel were too old, and libc falls back to clone(2).
        RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", nr));
    }
    for (uint64_t flag : kNamespaceCloneFlags) {
        const std::array cmp = {
            scmp_arg_cmp{.arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = flag, .datum_b = flag}};
        RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", SCMP_SYS(clone), cmp));
    }
    // No set-user-id or set-group-id bits, ever: through an idmapped workspace a file the
    // sandbox user creates belongs to the workspace's owner on the host — root, on CI — and a
    // mode bit set inside would plant a setuid-root program outside.
    for (const SetidModeArg& call : kSetidModeArgs) {
        int nr = resolve(call.name);
        if (nr < 0) {
            nr = call.fallback_nr;
        }
        if (nr < 0) {
            continue;
        }
        for (uint64_t bit : {uint64_t{S_ISUID}, uint64_t{S_ISGID}}) {
            const std::array cmp = {scmp_arg_cmp{
                .arg = call.mode_arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = bit, .datum_b = bit}};
            RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(EPERM), call.name, nr, cmp));
        }
    }
    if (int nr = resolve("openat2"); nr >= 0) {
        // openat2 passes its mode in memory, out of the filter's reach: fail it as if the
        // kernel were too old, and callers fall back to openat(2).
        RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", nr));
    }
    // The kernel reads the request as 32 bits; compare only those (CVE-2019-10063).
    for (uint64_t request : kDeniedIoctls) {
        const std::array cmp = {scmp_arg_cmp{
            .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffULL, .datum_b = request}};
        RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", SCMP_SYS(ioctl), cmp));
    }
    // fcntl's command is an unsigned int too.
    for (uint64_t command : kDeniedFcntls) {
        const std::array cmp = {scmp_arg_cmp{
            .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffULL, .datum_b = command}};
        RETURN_IF_ERROR(add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "fcntl", SCMP_SYS(fcntl), cmp));
    }
    return export_bpf(ctx);
}

}  // namespace

Result<SeccompProgram> build_seccomp_program(const SeccompOptions& options) {
    std::vector<ArgAllowlist> lists = {
        {.nr = SYS_personality, .arg = 0, .allowed = kAllowedPersonalities, .err = EPERM}};
    if (options.deny_all_sockets) {
        lists.push_back({.nr = SYS_socket, .arg = 0, .allowed = {}, .err = EAFNOSUPPORT});
    } else if (options.restrict_socket_families) {
        lists.push_back(
            {.nr = SYS_socket, .arg = 0, .allowed = kAllowedSocketFamilies, .err = EAFNOSUPPORT});
    }
    auto prologue = assemble_prologue(seccomp_arch_native(), lists);
    if (!prologue) {
        return std::move(prologue).error().wrap("build seccomp program");
    }
    auto rules = build_libseccomp_part();
    if (!rules) {
        return std::move(rules).error().wrap("build seccomp program");
    }
    std::vector<sock_filter> program = std::move(*prologue);
    program.insert(program.end(), rules->begin(), rules->end());
    if (program.size() > BPF_MAXINSNS) {
        return Error{Errc::kInternal,
                     fmt::format("build seccomp program: {} instructions, the kernel takes {}",
                                 program.size(), BPF_MAXINSNS)};
    }
    return SeccompProgram(std::move(program));
}

int install_seccomp_program(const sock_fprog& prog) noexcept {
    // SAFETY: seccomp(2) and prctl(2) are plain syscalls; errno is read right away.
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) {
        return 0;
    }
    if (errno != ENOSYS) {
        return errno;
    }
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0) {
        return 0;
    }
    return errno;
}

std::vector<const char*> seccomp_denied_syscalls() {
    return {kDeniedSyscalls.begin(), kDeniedSyscalls.end()};
}

}  // namespace stockade::sandbox
