// stockade-bench-seccomp: writes Stockade's compiled seccomp baseline (sandbox/seccomp.h) as
// raw `struct sock_filter` bytes, the format `bwrap --seccomp FD` reads, so that bench/startup.sh
// can give bubblewrap exactly the filter our sandbox installs.
//
//   stockade-bench-seccomp [--network none|host] [-o FILE]   the program (stdout by default)
//   stockade-bench-seccomp --self-test                        install it in a child and check it
//
// The self-test is the proof that the bytes are a working program: a forked child sets
// no_new_privs, installs the exported bytes and expects unshare(0) and ptrace to fail with EPERM
// (both succeed or fail otherwise without the filter).
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/result.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "sandbox/seccomp.h"

namespace {

using stockade::sandbox::SeccompOptions;

constexpr const char* kUsage =
    "usage: stockade-bench-seccomp [--network none|host] [-o FILE]\n"
    "       stockade-bench-seccomp --self-test\n"
    "Writes Stockade's compiled seccomp filter as raw sock_filter bytes (bwrap --seccomp FD).\n";

struct Args {
    bool network_none = true;
    bool self_test = false;
    std::string output;  // empty: stdout
};

bool parse_args(int argc, char** argv, Args& args) {
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        auto value = [&]() -> const char* {
            return i + 1 < argc ? argv[++i] : nullptr;
        };
        if (arg == "--network") {
            const char* v = value();
            if (v == nullptr || (std::string_view(v) != "none" && std::string_view(v) != "host")) {
                fmt::print(stderr, "stockade-bench-seccomp: --network takes none or host\n");
                return false;
            }
            args.network_none = std::string_view(v) == "none";
        } else if (arg == "-o" || arg == "--output") {
            const char* v = value();
            if (v == nullptr) {
                fmt::print(stderr, "stockade-bench-seccomp: {} needs a file name\n", arg);
                return false;
            }
            args.output = v;
        } else if (arg == "--self-test") {
            args.self_test = true;
        } else if (arg == "-h" || arg == "--help") {
            fmt::print("{}", kUsage);
            std::exit(0);
        } else {
            fmt::print(stderr, "stockade-bench-seccomp: unknown argument \"{}\"\n{}", arg, kUsage);
            return false;
        }
    }
    return true;
}

// Child of the self-test: returns the exit status (0 = the filter behaves).
int self_test_child(const std::vector<sock_filter>& filter) {
    sock_fprog prog{static_cast<unsigned short>(filter.size()),
                    const_cast<sock_filter*>(filter.data())};  // NOLINT: the kernel ABI
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return 10;
    }
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        return 11;
    }
    errno = 0;
    if (::syscall(SYS_unshare, 0) != -1 || errno != EPERM) {
        return 12;
    }
    errno = 0;
    if (::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != -1 || errno != EPERM) {
        return 13;
    }
    return 0;
}

int self_test(const std::vector<sock_filter>& filter) {
    if (filter.empty() || filter.size() > BPF_MAXINSNS) {
        fmt::print(stderr, "self-test: {} instructions is not a loadable program\n", filter.size());
        return 1;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
        fmt::print(stderr, "self-test: fork: {}\n", std::strerror(errno));
        return 1;
    }
    if (pid == 0) {
        ::_exit(self_test_child(filter));
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fmt::print(stderr,
                   "self-test: FAILED (child status {:#x}; 10 no_new_privs, 11 install, 12 unshare "
                   "not EPERM, 13 ptrace not EPERM)\n",
                   status);
        return 1;
    }
    fmt::print("self-test: ok ({} instructions; unshare and ptrace fail with EPERM)\n",
               filter.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (!parse_args(argc, argv, args)) {
        return 2;
    }
    auto program = stockade::sandbox::build_seccomp_program(
        SeccompOptions{.restrict_socket_families = args.network_none});
    if (!program) {
        fmt::print(stderr, "stockade-bench-seccomp: {}\n", program.error().message);
        return 1;
    }
    sock_fprog prog = program->fprog();
    std::vector<sock_filter> filter(prog.filter, prog.filter + prog.len);
    if (args.self_test) {
        return self_test(filter);
    }

    std::string_view bytes(reinterpret_cast<const char*>(filter.data()),  // NOLINT: raw ABI bytes
                           filter.size() * sizeof(sock_filter));
    stockade::UniqueFd out;
    int fd = STDOUT_FILENO;
    if (!args.output.empty()) {
        out.reset(::open(args.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (!out) {
            fmt::print(stderr, "stockade-bench-seccomp: open \"{}\": {}\n", args.output,
                       std::strerror(errno));
            return 1;
        }
        fd = out.get();
    } else if (::isatty(STDOUT_FILENO) != 0) {
        fmt::print(stderr,
                   "stockade-bench-seccomp: refusing to write binary to a terminal: use -o FILE\n");
        return 2;
    }
    if (auto written = stockade::write_all(fd, bytes); !written) {
        fmt::print(stderr, "stockade-bench-seccomp: write: {}\n", written.error().message);
        return 1;
    }
    fmt::print(stderr, "stockade-bench-seccomp: {} instructions ({} bytes, network {})\n",
               filter.size(), bytes.size(), args.network_none ? "none" : "host");
    return 0;
}
